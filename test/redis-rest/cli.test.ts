/**
 * `tickwork redis-rest` as a user runs it: the bin in a child process, then `@upstash/redis`
 * against the URL it prints; and the errors that say what to do.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Redis } from "@upstash/redis";
import { describe, expect, test } from "vitest";
import { deletePrefix, freshPrefix, REDIS_URL } from "./harness.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * Runs `tickwork redis-rest …` with only the given tickwork variables; `until` ends it early. The
 * built bin (`dist/`, as users get it), or with `sources` the TypeScript sources through tsx.
 */
function tickwork(
  args: string[],
  env: Record<string, string>,
  until?: (output: string) => boolean,
  { sources = false }: { sources?: boolean } = {},
): { output: Promise<string>; exited: Promise<number | null>; stop(): void } {
  const base = { ...process.env };
  for (const name of ["REDIS_URL", "TICKWORK_REST_TOKEN", "PORT", "HOST"]) delete base[name];
  const entry = sources ? ["--import", "tsx", "src/cli.ts"] : ["bin/tickwork.js"];
  const child = spawn(process.execPath, [...entry, "redis-rest", ...args], {
    cwd: ROOT,
    env: { ...base, ...env },
  });
  let out = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const output = new Promise<string>((resolve) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (until?.(out)) resolve(out);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    exited.then(() => resolve(out));
  });
  return { output, exited, stop: () => child.kill("SIGTERM") };
}

describe.concurrent("tickwork redis-rest", () => {
  test("serves the Upstash REST API at the URL it prints, until SIGTERM", async () => {
    const token = `cli-${Math.random().toString(36).slice(2)}`;
    const run = tickwork(["--port", "0"], { REDIS_URL, TICKWORK_REST_TOKEN: token }, (out) =>
      /UPSTASH_REDIS_REST_URL=\S+\n/.test(out),
    );
    const output = await run.output;
    const url = /UPSTASH_REDIS_REST_URL=(\S+)/.exec(output)?.[1];
    expect(url, output).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(output).not.toContain(token);
    const prefix = freshPrefix("cli");
    try {
      const redis = new Redis({ url: url!, token, retry: false, enableTelemetry: false });
      expect(await redis.set(`${prefix}:k`, { hello: "OK" })).toBe("OK");
      expect(await redis.get(`${prefix}:k`)).toEqual({ hello: "OK" });
    } finally {
      run.stop();
      await deletePrefix(prefix);
    }
    expect(await run.exited).toBe(0);
  });

  test("--help explains the options and the variables to set", async () => {
    const run = tickwork(["--help"], {});
    expect(await run.exited).toBe(0);
    const output = await run.output;
    for (const text of ["--port", "--redis", "REDIS_URL", "TICKWORK_REST_TOKEN"]) {
      expect(output).toContain(text);
    }
    expect(output).toContain("UPSTASH_REDIS_REST_URL");
  });

  test("a missing Redis URL or token, or a bad option, is a usage error", async () => {
    const cases: [string[], Record<string, string>, string][] = [
      [[], { TICKWORK_REST_TOKEN: "t" }, "REDIS_URL"],
      [[], { REDIS_URL }, "TICKWORK_REST_TOKEN"],
      [["--nope"], { REDIS_URL, TICKWORK_REST_TOKEN: "t" }, "--nope"],
      [["--port", "http"], { REDIS_URL, TICKWORK_REST_TOKEN: "t" }, "port must be"],
      // An empty option is not its variable (`--redis "$UNSET"` served REDIS_URL's database).
      [["--redis", ""], { REDIS_URL, TICKWORK_REST_TOKEN: "t" }, "--redis needs a value"],
      [["--token", " "], { REDIS_URL, TICKWORK_REST_TOKEN: "t" }, "--token needs a value"],
      // A setting refused is 2, as for `tickwork start` (it exited 1).
      [["--redis", `${REDIS_URL}/abc`], { TICKWORK_REST_TOKEN: "t" }, "must be a whole number"],
    ];
    for (const [args, env, text] of cases) {
      const run = tickwork(args, env);
      expect(await run.exited, args.join(" ")).toBe(2);
      expect(await run.output).toContain(text);
    }
  });

  test("an unreachable Redis fails at start, without printing its password", async () => {
    const run = tickwork([], {
      REDIS_URL: "redis://:hunter2@127.0.0.1:1",
      TICKWORK_REST_TOKEN: "t",
    });
    expect(await run.exited).toBe(1);
    const output = await run.output;
    expect(output).toContain("cannot reach Redis at redis://127.0.0.1:1");
    expect(output).not.toContain("hunter2");
  });
});

describe.concurrent("tickwork redis-rest caps (from the sources)", () => {
  test("--max-body-bytes, --max-commands and --max-arguments answer 413 past them", async () => {
    const token = `cli-${Math.random().toString(36).slice(2)}`;
    const run = tickwork(
      ["--port", "0", "--max-body-bytes", "200", "--max-commands", "2", "--max-arguments", "5"],
      { REDIS_URL, TICKWORK_REST_TOKEN: token },
      (out) => /UPSTASH_REDIS_REST_URL=\S+\n/.test(out),
      { sources: true },
    );
    const url = /UPSTASH_REDIS_REST_URL=(\S+)/.exec(await run.output)?.[1];
    try {
      const post = async (path: string, body: unknown) => {
        const res = await fetch(`${url}${path}`, {
          method: "POST",
          headers: { "Content-Type": "application/json", authorization: `Bearer ${token}` },
          body: JSON.stringify(body),
        });
        return { status: res.status, json: await res.json() };
      };
      expect(await post("/pipeline", [["ping"], ["echo", "x"]])).toEqual({
        status: 200,
        json: [{ result: "PONG" }, { result: "x" }],
      });
      expect(await post("/pipeline", [["ping"], ["ping"], ["ping"]])).toEqual({
        status: 413,
        json: { error: expect.stringContaining("Limit: 2 commands") },
      });
      expect(await post("/", ["mget", "a", "b", "c", "d", "e"])).toEqual({
        status: 413,
        json: { error: expect.stringContaining("Limit: 5 arguments") },
      });
      expect(await post("/", ["echo", "x".repeat(300)])).toEqual({
        status: 413,
        json: { error: "ERR max request size exceeded. Limit: 200 bytes" },
      });
    } finally {
      run.stop();
    }
    expect(await run.exited).toBe(0);
  });

  test("--help explains the caps and what the token reaches; bad caps are usage errors", async () => {
    const help = tickwork(["--help"], {}, undefined, { sources: true });
    expect(await help.exited).toBe(0);
    const output = await help.output;
    for (const text of [
      "--max-body-bytes",
      "--max-commands",
      "--max-arguments",
      "10485760",
      "one database",
      "Command is not available",
    ]) {
      expect(output).toContain(text);
    }
    for (const [flag, value] of [
      ["--max-commands", "0"],
      ["--max-arguments", "lots"],
      ["--max-body-bytes", "1.5"],
    ] as const) {
      const run = tickwork([flag, value], { REDIS_URL, TICKWORK_REST_TOKEN: "t" }, undefined, {
        sources: true,
      });
      expect(await run.exited, flag).toBe(2);
      expect(await run.output).toContain(`${flag} must be a whole number of at least 1`);
    }
  });
});
