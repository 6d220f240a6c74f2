/**
 * Bounded requests. The caps (`maxBodyBytes`, `maxCommands`, `maxArguments`) answer 413
 * `{ error }` while the body arrives, before it is parsed (bodies that never end show it);
 * `@upstash/redis` surfaces the 413 as an UpstashError. Then the bridge as `tickwork redis-rest`
 * runs it (from the sources, default caps) in a child process with a memory probe, in front of a
 * private redis-server: a 900,000-command pipeline and a 2.5-million-argument command are refused
 * quickly with little memory, requests at the caps are served, and after each the bridge's memory
 * is back near where it started.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { errors } from "@upstash/redis";
import { Redis as IORedis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedisRestBridge } from "../../src/tools/redis-rest/index.ts";
import { type PrivateRedis, REDIS_URL, startPrivateRedis, upstashClient } from "./harness.ts";

const { UpstashError } = errors;
const TOKEN = "limits-token";
const MiB = 1024 * 1024;

const shared = new IORedis(REDIS_URL);
afterAll(() => shared.disconnect());

/** A bridge app with small caps, on the shared Redis (these tests send PING and ECHO only). */
const app = createRedisRestBridge({
  redis: shared,
  token: TOKEN,
  maxBodyBytes: 64 * 1024,
  maxCommands: 3,
  maxArguments: 6,
});

const headers = { "Content-Type": "application/json", authorization: `Bearer ${TOKEN}` };

async function post(path: string, body: BodyInit, extra: Record<string, string> = {}) {
  const res = await app.request(path, { method: "POST", headers: { ...headers, ...extra }, body });
  return { status: res.status, json: (await res.json()) as unknown };
}

/**
 * A body that never ends: `head`, then `chunk` again and again. `pulled()` says how many bytes
 * the bridge has asked for so far: what it read before answering.
 */
function endlessBody(
  head: string,
  chunk: string,
): { stream: ReadableStream<Uint8Array>; pulled(): number } {
  const encoder = new TextEncoder();
  let pulled = 0;
  let first = true;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const bytes = encoder.encode(first ? head : chunk);
        first = false;
        pulled += bytes.byteLength;
        controller.enqueue(bytes);
      },
    },
    // Nothing queued ahead: a chunk is made only when the reader asks for one.
    { highWaterMark: 0 },
  );
  return { stream, pulled: () => pulled };
}

const streaming = { duplex: "half" } as RequestInit;

/** POST an endless body (`head`, then `chunk` again and again) to `path`; the answer, and the
 * bytes the bridge read before it. */
async function postEndless(path: string, head: string, chunk: string) {
  const body = endlessBody(head, chunk);
  const res = await app.request(path, { method: "POST", headers, body: body.stream, ...streaming });
  return { res, status: res.status, pulled: body.pulled() };
}

describe("caps, as the bridge app answers them", () => {
  it("maxCommands: 3 commands are served, 4 get 413 {error}, on /pipeline and /multi-exec", async () => {
    for (const path of ["/pipeline", "/multi-exec"]) {
      expect(await post(path, JSON.stringify([["ping"], ["ping"], ["echo", "x"]]))).toEqual({
        status: 200,
        json: [{ result: "PONG" }, { result: "PONG" }, { result: "x" }],
      });
      expect(await post(path, JSON.stringify([["ping"], ["ping"], ["ping"], ["ping"]]))).toEqual({
        status: 413,
        json: {
          error: "ERR max request size exceeded. Limit: 3 commands in one request (split it)",
        },
      });
    }
    // Brackets, commas and escaped quotes inside strings are not commands.
    const tricky = [["echo", '],[["ping"],["ping"\\",'], ["echo", "[[[,,,]]]"], ["ping"]];
    expect(await post("/pipeline", JSON.stringify(tricky))).toEqual({
      status: 200,
      json: [{ result: tricky[0]?.[1] }, { result: "[[[,,,]]]" }, { result: "PONG" }],
    });
  });

  it("maxArguments: 6 arguments in all (names included) are served, 7 get 413 {error}; arrays and objects where arguments go count", async () => {
    expect(await post("/", JSON.stringify(["echo", "a"]))).toEqual({
      status: 200,
      json: { result: "a" },
    });
    const seven = {
      error: "ERR max request size exceeded. Limit: 6 arguments in one request (split it)",
    };
    expect(await post("/", JSON.stringify(["mget", 1, 2, 3, 4, 5, 6]))).toEqual({
      status: 413,
      json: seven,
    });
    for (const path of ["/pipeline", "/multi-exec"]) {
      const six = [
        ["echo", 1.5],
        ["echo", true],
        ["echo", "[,]"],
      ];
      expect(await post(path, JSON.stringify(six))).toEqual({
        status: 200,
        json: [{ result: "1.5" }, { result: "true" }, { result: "[,]" }],
      });
      expect(
        await post(
          path,
          JSON.stringify([
            ["echo", "x"],
            ["mget", "a", "b", "c", "d"],
          ]),
        ),
      ).toEqual({
        status: 413,
        json: seven,
      });
    }
    // Empty arrays and objects where arguments go count as arguments: 3.5 million `{}` took the
    // bridge 320 MB to parse before it refused them.
    expect(await post("/", JSON.stringify(["get", {}, [], {}, [], {}, []]))).toEqual({
      status: 413,
      json: seven,
    });
    for (const path of ["/pipeline", "/multi-exec"]) {
      expect(
        await post(
          path,
          JSON.stringify([
            ["echo", {}],
            ["echo", []],
            ["get", {}, []],
          ]),
        ),
      ).toEqual({ status: 413, json: seven });
    }
    // Nesting past what a command can hold is refused as it arrives.
    const nested = await postEndless("/", '["get",', "[");
    expect(nested.status).toBe(400);
    expect(await nested.res.json()).toEqual({ error: "ERR the request body nests deeper than 4" });
    expect(nested.pulled).toBeLessThan(64);
    const endless = await postEndless("/", '["mget"', ',"k"');
    expect(endless.status).toBe(413);
    expect(endless.pulled).toBeLessThan(64);
  });

  it("counts commands as the body arrives: an endless pipeline is refused after a few bytes", async () => {
    const body = endlessBody("[", '["ping"],');
    const res = await app.request("/pipeline", {
      method: "POST",
      headers,
      body: body.stream,
      ...streaming,
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: expect.stringMatching(/Limit: 3 commands/) });
    expect(body.pulled()).toBeLessThan(1024);
  });

  it("maxBodyBytes: 413 {error} past it, read no further (an endless body), or at once by Content-Length", async () => {
    const ok = JSON.stringify(["echo", "x".repeat(64 * 1024 - 20)]);
    expect(ok.length).toBeLessThanOrEqual(64 * 1024);
    expect((await post("/", ok)).status).toBe(200);
    const over = JSON.stringify(["echo", "x".repeat(64 * 1024)]);
    expect(await post("/", over)).toEqual({
      status: 413,
      json: { error: "ERR max request size exceeded. Limit: 65536 bytes" },
    });

    const endless = endlessBody('["echo","', "x".repeat(4096));
    const res = await app.request("/", {
      method: "POST",
      headers,
      body: endless.stream,
      ...streaming,
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({
      error: "ERR max request size exceeded. Limit: 65536 bytes",
    });
    expect(endless.pulled()).toBeLessThan(64 * 1024 + 3 * 4096);

    const declared = endlessBody("[", "1,");
    const early = await app.request("/pipeline", {
      method: "POST",
      headers: { ...headers, "Content-Length": String(100 * MiB) },
      body: declared.stream,
      ...streaming,
    });
    expect(early.status).toBe(413);
    expect(declared.pulled()).toBe(0);
  });

  it("rejects caps that are not whole numbers of at least 1", () => {
    for (const maxCommands of [0, -1, 1.5, Number.NaN]) {
      expect(() => createRedisRestBridge({ redis: shared, token: "t", maxCommands })).toThrow(
        RangeError,
      );
    }
    expect(() => createRedisRestBridge({ redis: shared, token: "t", maxBodyBytes: 0 })).toThrow(
      /maxBodyBytes must be a whole number/,
    );
  });

  it("@upstash/redis surfaces a 413 as an UpstashError with the message (default caps, real HTTP)", async () => {
    const redis = await upstashClient();
    const pipeline = redis.pipeline();
    for (let i = 0; i < 10_001; i++) pipeline.ping();
    const failure = await pipeline.exec().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(UpstashError);
    expect((failure as Error).message).toMatch(
      /^ERR max request size exceeded\. Limit: 10000 commands in one request/,
    );
    const big = await redis.echo("x".repeat(10 * MiB)).catch((e: unknown) => e);
    expect(big).toBeInstanceOf(UpstashError);
    expect((big as Error).message).toMatch(
      /^ERR max request size exceeded\. Limit: 10485760 bytes/,
    );
  });
});

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PROBE = pathToFileURL(fileURLToPath(new URL("./memory-probe.ts", import.meta.url))).href;

interface Memory {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

/** `tickwork redis-rest` from the sources in a child process with the memory probe preloaded. */
async function startBridgeProcess(redisUrl: string): Promise<{
  url: string;
  child: ChildProcess;
  memory(options: { gc: boolean; resetPeak: boolean }): Promise<{ now: Memory; peak: Memory }>;
}> {
  const child = spawn(
    process.execPath,
    [
      "--expose-gc",
      "--import",
      "tsx",
      "--import",
      PROBE,
      "src/cli.ts",
      "redis-rest",
      "--port",
      "0",
      "--redis",
      redisUrl,
    ],
    {
      cwd: ROOT,
      env: { ...process.env, TICKWORK_REST_TOKEN: TOKEN },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let output = "";
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const found = /UPSTASH_REDIS_REST_URL=(\S+)\n/.exec(output)?.[1];
      if (found) resolve(found);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`the bridge exited (${code}):\n${output}`)));
  });
  return {
    url,
    child,
    memory: (options) =>
      new Promise((resolve) => {
        child.once("message", (message) => resolve(message as { now: Memory; peak: Memory }));
        child.send({ type: "memory", ...options });
      }),
  };
}

/** The most heap (and buffers) a request may leave held once collected, over the baseline. */
const HEAP_AFTER_MAX = 16 * MiB;

const mb = (bytes: number) => Math.round((bytes / MiB) * 10) / 10;

describe("the bridge process's memory (tickwork redis-rest, default caps)", () => {
  let redis: PrivateRedis;
  let bridge: Awaited<ReturnType<typeof startBridgeProcess>>;
  let baseline: Memory;
  const figures: Record<string, unknown> = {};

  beforeAll(async () => {
    redis = await startPrivateRedis();
    bridge = await startBridgeProcess(redis.url);
    // Warm up every path once (modules, JIT), then take the baseline.
    await send("/pipeline", JSON.stringify(Array.from({ length: 1000 }, () => ["ping"])));
    await send("/", JSON.stringify(["set", "warm", "x".repeat(MiB)]));
    await send("/pipeline", `[${'["ping"],'.repeat(20_000)}["ping"]]`);
    baseline = (await bridge.memory({ gc: true, resetPeak: true })).now;
    figures.baseline = { rssMB: mb(baseline.rss), heapUsedMB: mb(baseline.heapUsed) };
  });

  afterAll(async () => {
    console.log(`redis-rest bridge memory (MB): ${JSON.stringify(figures)}`);
    if (bridge) {
      const exited = new Promise((resolve) => bridge.child.once("exit", resolve));
      bridge.child.kill("SIGTERM");
      await exited;
    }
    await redis?.stop();
  });

  async function send(
    path: string,
    body: string,
  ): Promise<{ status: number; json: unknown; ms: number }> {
    const started = performance.now();
    const res = await fetch(`${bridge.url}${path}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", authorization: `Bearer ${TOKEN}` },
      body,
    });
    const json = await res.json();
    return { status: res.status, json, ms: Math.round(performance.now() - started) };
  }

  /** Peak during the request and what is left after a full GC, against the baseline. */
  async function measure(
    name: string,
  ): Promise<{ peakRss: number; heapAfter: number; rssAfter: number }> {
    const { peak } = await bridge.memory({ gc: false, resetPeak: false });
    // Two full collections: the backing stores of buffers the first one finds dead (socket and
    // reply buffers) are released and accounted for only after it, and a busy machine (the suite
    // runs files side by side) showed them still counted after one.
    await bridge.memory({ gc: true, resetPeak: false });
    let { now } = await bridge.memory({ gc: true, resetPeak: true });
    const heapGrowth = (m: Memory) =>
      m.heapUsed + m.arrayBuffers - (baseline.heapUsed + baseline.arrayBuffers);
    // What a request was made of can still be held for a moment after its answer was read: two
    // full runs kept a 10 MB pipeline's body and commands (18.5 and 18.8 MB) where it is 0.5
    // otherwise. So it is measured again, at once, until under the bound, at most 20 times: a
    // leak stays over it.
    let measured = 1;
    while (heapGrowth(now) >= HEAP_AFTER_MAX && measured < 20) {
      ({ now } = await bridge.memory({ gc: true, resetPeak: true }));
      measured++;
    }
    const result = {
      peakRss: peak.rss - baseline.rss,
      heapAfter: heapGrowth(now),
      rssAfter: now.rss - baseline.rss,
    };
    figures[name] = {
      peakRssGrowthMB: mb(result.peakRss),
      peakHeapUsedMB: mb(peak.heapUsed),
      heapGrowthAfterGcMB: mb(result.heapAfter),
      rssGrowthAfterGcMB: mb(result.rssAfter),
      ...(measured > 1 ? { measured } : {}),
    };
    return result;
  }

  it("refuses a 900,000-command pipeline (8 MB) with 413 at once, memory bounded", async () => {
    const body = `[${'["ping"],'.repeat(899_999)}["ping"]]`;
    expect(body.length).toBeGreaterThan(8 * 1000 * 1000);
    expect(body.length).toBeLessThan(10 * MiB);
    const answer = await send("/pipeline", body);
    figures.pipeline900kMs = answer.ms;
    expect(answer.status).toBe(413);
    expect(answer.json).toEqual({
      error: expect.stringMatching(/Limit: 10000 commands in one request/),
    });
    expect(answer.ms).toBeLessThan(5_000);
    const memory = await measure("pipeline900k");
    expect(memory.peakRss).toBeLessThan(200 * MiB);
    expect(memory.heapAfter).toBeLessThan(HEAP_AFTER_MAX);
    expect(memory.rssAfter).toBeLessThan(100 * MiB);
  });

  it("refuses 2.5 million arguments in one command (10 MB) with 413 at once, memory bounded", async () => {
    const body = `["mget"${',"k"'.repeat(2_500_000)}]`;
    expect(body.length).toBeLessThan(10 * MiB);
    const answer = await send("/", body);
    figures.arguments2500kMs = answer.ms;
    expect(answer.status).toBe(413);
    expect(answer.json).toEqual({
      error: expect.stringMatching(/Limit: 500000 arguments in one request/),
    });
    expect(answer.ms).toBeLessThan(5_000);
    const memory = await measure("arguments2500k");
    expect(memory.peakRss).toBeLessThan(200 * MiB);
    expect(memory.heapAfter).toBeLessThan(HEAP_AFTER_MAX);
    expect(memory.rssAfter).toBeLessThan(100 * MiB);
  });

  it("serves 500,000 arguments (an MGET at the cap), then returns near baseline", async () => {
    const answer = await send("/", `["mget"${',"k"'.repeat(499_999)}]`);
    figures.arguments500kMs = answer.ms;
    expect(answer.status).toBe(200);
    expect((answer.json as { result: unknown[] }).result).toHaveLength(499_999);
    const memory = await measure("arguments500k");
    expect(memory.peakRss).toBeLessThan(200 * MiB);
    expect(memory.heapAfter).toBeLessThan(HEAP_AFTER_MAX);
    expect(memory.rssAfter).toBeLessThan(100 * MiB);
  });

  it("serves requests at the caps (10,000 commands; a 10 MB value), then returns near baseline", async () => {
    const value = "v".repeat(900);
    const commands = Array.from({ length: 10_000 }, (_, i) => ["set", `k:${i}`, value]);
    const body = JSON.stringify(commands);
    expect(body.length).toBeLessThan(10 * MiB);
    const answer = await send("/pipeline", body);
    figures.pipeline10kSetsMs = answer.ms;
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual(commands.map(() => ({ result: "OK" })));
    const afterPipeline = await measure("pipeline10kSets");
    expect(afterPipeline.peakRss).toBeLessThan(200 * MiB);
    expect(afterPipeline.heapAfter).toBeLessThan(HEAP_AFTER_MAX);

    const big = await send("/", JSON.stringify(["set", "big", "b".repeat(10 * MiB - 100)]));
    figures.value10MbMs = big.ms;
    expect(big).toMatchObject({ status: 200, json: { result: "OK" } });
    const afterBig = await measure("value10Mb");
    expect(afterBig.peakRss).toBeLessThan(200 * MiB);
    expect(afterBig.heapAfter).toBeLessThan(HEAP_AFTER_MAX);
    expect(afterBig.rssAfter).toBeLessThan(100 * MiB);
  });
});
