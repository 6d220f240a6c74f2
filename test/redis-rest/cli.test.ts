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

/** Runs `tickwork redis-rest …` with only the given tickwork variables; `until` ends it early. */
function tickwork(
  args: string[],
  env: Record<string, string>,
  until?: (output: string) => boolean,
): { output: Promise<string>; exited: Promise<number | null>; stop(): void } {
  const base = { ...process.env };
  for (const name of ["REDIS_URL", "TICKWORK_REST_TOKEN", "PORT", "HOST"]) delete base[name];
  const child = spawn(process.execPath, ["bin/tickwork.js", "redis-rest", ...args], {
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
