/**
 * The real `@upstash/redis` client against the REST bridge over a real socket, in front of the
 * shared Redis at 127.0.0.1:6379 (every key under this file's random prefix, removed afterwards).
 * Each data test runs in three client configurations: the production defaults (base64 answers,
 * auto-pipelining), without auto-pipelining (one request per command), and without base64.
 */
import { createHash, randomUUID } from "node:crypto";
import { errors, Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { safeEval } from "../../src/store/redis/index.ts";
import {
  BRIDGE_TOKEN,
  deletePrefix,
  freshPrefix,
  sharedBridge,
  type UpstashOptions,
  upstashClient,
} from "./harness.ts";

const { UpstashError } = errors;
const prefix = freshPrefix("bridge");
let n = 0;
/** A fresh key under this file's prefix. */
const key = (name: string) => `${prefix}:${name}:${++n}`;
/** A Lua body no Redis has cached: a random comment changes its SHA-1 (no SCRIPT FLUSH needed). */
const uncached = (body: string) => `-- ${randomUUID()}\n${body}`;
const sha1 = (text: string) => createHash("sha1").update(text).digest("hex");

afterAll(() => deletePrefix(prefix));

const configurations: { name: string; options: UpstashOptions; autoPipelining: boolean }[] = [
  { name: "defaults (base64, auto-pipelining)", options: {}, autoPipelining: true },
  {
    name: "no auto-pipelining",
    options: { enableAutoPipelining: false },
    autoPipelining: false,
  },
  { name: "no base64", options: { responseEncoding: false }, autoPipelining: true },
];

describe.each(configurations)("@upstash/redis through the bridge: $name", (config) => {
  let redis: Redis;
  beforeAll(async () => {
    redis = await upstashClient(config.options);
  });

  it("strings: set and get, unicode, empty, values that look like OK or base64, nil", async () => {
    const values = ["hello", "héllo wörld ✓ 🎉", "", "OK", "T0s=", 'line\nbreak "quoted"'];
    for (const value of values) {
      const k = key("s");
      expect(await redis.set(k, value)).toBe("OK");
      expect(await redis.get(k)).toBe(value);
    }
    expect(await redis.get(key("missing"))).toBeNull();
    const k = key("nx");
    expect(await redis.set(k, "first", { nx: true, px: 60_000 })).toBe("OK");
    expect(await redis.set(k, "second", { nx: true, px: 60_000 })).toBeNull();
    expect(await redis.get(k)).toBe("first");
    expect(await redis.pttl(k)).toBeGreaterThan(50_000);
    expect(await redis.mget(k, key("missing"))).toEqual(["first", null]);
  });

  it("numbers: integers as numbers, floats, big integers kept as strings", async () => {
    const k = key("n");
    await redis.set(k, 42);
    expect(await redis.get(k)).toBe(42);
    expect(await redis.incr(k)).toBe(43);
    expect(await redis.incrby(k, -50)).toBe(-7);
    expect(await redis.incrbyfloat(k, 0.5)).toBe(-6.5);
    const big = key("big");
    await redis.set(big, "12345678901234567890");
    expect(await redis.get(big)).toBe("12345678901234567890");
  });

  it("JSON values round-trip (the client serialises objects and parses answers)", async () => {
    const value = { a: 1, list: [1, "x", null, { ok: "OK" }], s: "OK", t: true };
    const k = key("json");
    await redis.set(k, value);
    expect(await redis.get(k)).toEqual(value);
    const flag = key("bool");
    await redis.set(flag, true);
    expect(await redis.get(flag)).toBe(true);
  });

  it("hashes", async () => {
    const k = key("h");
    expect(await redis.hset(k, { a: 1, b: "x", c: { d: [1, 2] }, ok: "OK" })).toBe(4);
    expect(await redis.hgetall(k)).toEqual({ a: 1, b: "x", c: { d: [1, 2] }, ok: "OK" });
    expect(await redis.hget(k, "b")).toBe("x");
    expect(await redis.hmget(k, "a", "ok", "nope")).toEqual({ a: 1, ok: "OK", nope: null });
    expect(await redis.hincrby(k, "a", 9)).toBe(10);
    expect((await redis.hkeys(k)).sort()).toEqual(["a", "b", "c", "ok"]);
    expect(await redis.hgetall(key("missing"))).toBeNull();
  });

  it("sorted sets with scores", async () => {
    const k = key("z");
    expect(
      await redis.zadd(
        k,
        { score: 1, member: "a" },
        { score: 2.5, member: "b" },
        { score: -3, member: "c" },
      ),
    ).toBe(3);
    expect(await redis.zrange(k, 0, -1, { withScores: true })).toEqual(["c", -3, "a", 1, "b", 2.5]);
    expect(await redis.zrange(k, 0, 3, { byScore: true })).toEqual(["a", "b"]);
    expect(await redis.zscore(k, "b")).toBe(2.5);
    expect(await redis.zincrby(k, 10, "c")).toBe(7);
    expect(await redis.zrank(k, "c")).toBe(2);
    expect(await redis.zcard(k)).toBe(3);
    expect(await redis.zscore(k, "nope")).toBeNull();
  });

  it("lists and sets", async () => {
    const list = key("l");
    expect(await redis.rpush(list, "OK", "b", "3")).toBe(3);
    expect(await redis.lrange(list, 0, -1)).toEqual(["OK", "b", 3]);
    const set = key("set");
    await redis.sadd(set, "x", "y");
    expect((await redis.smembers(set)).sort()).toEqual(["x", "y"]);
  });

  it("pipelines: results in order; an error fails only its own command", async () => {
    const k = key("p");
    const p = redis.pipeline();
    p.set(k, 1);
    p.incr(k);
    p.get(k);
    p.hset(key("ph"), { f: "v" });
    expect(await p.exec()).toEqual(["OK", 2, 2, 1]);

    const s = key("ps");
    const bad = redis.pipeline();
    bad.set(s, "text");
    bad.incr(s);
    bad.get(s);
    const outcomes = await bad.exec({ keepErrors: true });
    expect(outcomes.map((o) => o.result)).toEqual(["OK", undefined, "text"]);
    expect(outcomes[1]?.error).toBe("ERR value is not an integer or out of range");

    const again = redis.pipeline();
    again.get(s);
    again.incr(s);
    await expect(again.exec()).rejects.toThrow(/Command 2 \[ incr \] failed: ERR value is not/);
  });

  it("a burst of 50 concurrent commands (auto-pipelined when on), one failing", async () => {
    const counter = key("burst");
    const text = key("burst-text");
    await redis.set(text, "not a number");
    const before = (redis as unknown as { pipelineCounter?: number }).pipelineCounter ?? 0;
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 48; i++) {
      work.push(i % 2 === 0 ? redis.incr(counter) : redis.set(`${counter}:${i}`, `v${i}`));
    }
    const failing = redis.incr(text);
    const read = redis.get(`${counter}:1`);
    const settled = await Promise.allSettled([...work, failing, read]);
    expect(settled.slice(0, 48).every((s) => s.status === "fulfilled")).toBe(true);
    const increments = settled
      .slice(0, 48)
      .filter((_, i) => i % 2 === 0)
      .map((s) => (s as PromiseFulfilledResult<number>).value);
    expect(increments.sort((a, b) => a - b)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    expect(settled[48]).toMatchObject({ status: "rejected" });
    const reason = (settled[48] as PromiseRejectedResult).reason;
    expect(reason).toBeInstanceOf(UpstashError);
    expect(String(reason.message)).toContain("ERR value is not an integer or out of range");
    expect(settled[49]).toEqual({ status: "fulfilled", value: "v1" });
    if (config.autoPipelining) {
      const requests = (redis as unknown as { pipelineCounter: number }).pipelineCounter - before;
      expect(requests).toBeGreaterThan(0);
      expect(requests).toBeLessThanOrEqual(3); // a write batch and a read batch, not 50 requests
    }
  });

  it("transactions (multi-exec): results, runtime errors per command, queue errors abort all", async () => {
    const k = key("tx");
    const tx = redis.multi();
    tx.set(k, "1");
    tx.incr(k);
    tx.get(k);
    expect(await tx.exec()).toEqual(["OK", 2, 2]);

    const s = key("tx-s");
    const after = key("tx-after");
    const runtime = redis.multi();
    runtime.set(s, "text");
    runtime.incr(s);
    runtime.set(after, "ran");
    const outcomes = await runtime.exec({ keepErrors: true });
    expect(outcomes.map((o) => o.error)).toEqual([
      undefined,
      "ERR value is not an integer or out of range",
      undefined,
    ]);
    expect(await redis.get(after)).toBe("ran");

    const untouched = key("tx-untouched");
    const aborted = redis.multi();
    aborted.set(untouched, "should not be set");
    aborted.hset(key("tx-h"), {}); // ["hset", key]: wrong number of arguments, refused at queue time
    const failure = await aborted.exec().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UpstashError);
    expect((failure as Error).message).toMatch(/^EXECABORT .*wrong number of arguments/);
    expect(await redis.get(untouched)).toBeNull();
  });

  it("scripts: createScript falls back from NOSCRIPT to EVAL, then hits the cache", async () => {
    const body = uncached(
      'return {KEYS[1], ARGV[1], tonumber(ARGV[2]) + 1, redis.call("set", KEYS[1], ARGV[1]), false, {"OK", 7}}',
    );
    expect(await redis.scriptExists(sha1(body))).toEqual([0]);
    const k = key("script");
    const script = redis.createScript(body);
    expect(await script.exec([k], ["v", "41"])).toEqual([k, "v", 42, "OK", null, ["OK", 7]]);
    expect(await redis.scriptExists(sha1(body))).toEqual([1]);
    expect(await script.exec([k], ["w", "1"])).toEqual([k, "w", 2, "OK", null, ["OK", 7]]);
    expect(await redis.get(k)).toBe("w");
  });

  it("scripts: NOSCRIPT passes through, so safeEval falls back too; Lua errors keep their text", async () => {
    const body = uncached("return ARGV[1]");
    await expect(redis.evalsha(sha1(body), [], ["x"])).rejects.toThrow(/NOSCRIPT/);
    const script = { name: "echo", numberOfKeys: 0, source: body, sha1: sha1(body), bodyStart: 0 };
    expect(await safeEval(redis, script, [], ["hello"])).toBe("hello");
    expect(await redis.evalsha(sha1(body), [], ["cached"])).toBe("cached");
    await expect(
      redis.eval('return redis.error_reply("MYERR custom failure")', [], []),
    ).rejects.toThrow(/MYERR custom failure/);
  });

  it("command errors are UpstashErrors with Redis's message", async () => {
    const s = key("err");
    await redis.set(s, "text");
    const wrongType = await redis.lpush(s, "x").catch((error: unknown) => error);
    expect(wrongType).toBeInstanceOf(UpstashError);
    expect((wrongType as Error).message).toContain(
      "WRONGTYPE Operation against a key holding the wrong kind of value",
    );
    // Not on the bridge's allowlist, so never sent: Upstash's answer for a command it lacks.
    await expect(redis.exec(["nosuchcommand", "x"])).rejects.toThrow(
      /^ERR Command is not available: 'NOSUCHCOMMAND'/,
    );
    await expect(redis.exec(["select", "1"])).rejects.toThrow(
      /^ERR Command is not available: 'SELECT'/,
    );
  });
});

describe("the bridge and the client, other cases", () => {
  it("a wrong token is an UpstashError (401), with or without auto-pipelining", async () => {
    const { url } = await sharedBridge();
    for (const enableAutoPipelining of [true, false]) {
      const wrong = new Redis({
        url,
        token: `${BRIDGE_TOKEN}-wrong`,
        retry: false,
        enableTelemetry: false,
        enableAutoPipelining,
      });
      const failure = await wrong.get(key("x")).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(UpstashError);
      expect((failure as Error).message).toMatch(/^Unauthorized/);
    }
  });

  it("base64 off and on give the same values (OK at top level and nested, unicode)", async () => {
    const on = await upstashClient({ enableAutoPipelining: false });
    const off = await upstashClient({ enableAutoPipelining: false, responseEncoding: false });
    const k = key("enc");
    await on.rpush(k, "OK", "ünï", "T0s=", "");
    const script = uncached("return {'OK', {'OK', 1}, redis.call('ping')}");
    for (const client of [on, off]) {
      expect(await client.set(`${k}:s`, "OK")).toBe("OK");
      expect(await client.lrange(k, 0, -1)).toEqual(["OK", "ünï", "T0s=", ""]);
      expect(await client.eval(script, [], [])).toEqual(["OK", ["OK", 1], "PONG"]);
    }
  });
});
