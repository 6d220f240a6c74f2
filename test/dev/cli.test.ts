/** The `tickwork` command: help, and the errors that tell you what to do. */
import { execFile } from "node:child_process";
import { createServer } from "node:net";
import { promisify } from "node:util";
import { describe, expect, test } from "vitest";
import { cleanEnv, ROOT } from "./server.ts";

const run = promisify(execFile);

/** Run a command in the repo with a clean tickwork environment; never throws. */
async function tickwork(args: string[], env: Record<string, string> = {}, file = process.execPath) {
  const argv = file === process.execPath ? ["bin/tickwork.js", ...args] : args;
  try {
    const { stdout, stderr } = await run(file, argv, {
      cwd: ROOT,
      env: cleanEnv(env),
      timeout: 20_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe.concurrent("tickwork CLI", () => {
  test("--help explains the commands, options and environment", async () => {
    const { code, stdout } = await tickwork(["--help"]);
    expect(code).toBe(0);
    for (const text of [
      "Usage: tickwork <command>",
      "dev",
      "start",
      "--port",
      "--role",
      "REDIS_URL",
      "UPSTASH_REDIS_REST_URL",
      "QSTASH_TOKEN",
      "TICKWORK_PUBLIC_URL",
      "TICKWORK_API_KEY",
      "init",
    ]) {
      expect(stdout).toContain(text);
    }
  });

  test("each command has its own --help; tickwork help <command> prints the same", async () => {
    for (const command of ["dev", "start", "init", "redis-rest", "hash-key"]) {
      const { code, stdout } = await tickwork([command, "--help"]);
      expect(code, command).toBe(0);
      expect(stdout.startsWith(`Usage: tickwork ${command} `), command).toBe(true);
      // Not the overview.
      expect(stdout, command).not.toContain("Usage: tickwork <command>");
      const viaHelp = await tickwork(["help", command]);
      expect(viaHelp.stdout, command).toBe(stdout);
    }
    const dev = (await tickwork(["dev", "-h"])).stdout;
    for (const text of [
      "--handlers",
      "src/tickwork/handlers.{ts,mts,js,mjs}",
      "npx tickwork init",
    ]) {
      expect(dev).toContain(text);
    }
    expect((await tickwork(["start", "--help"])).stdout).toContain("TICKWORK_API_KEY");
    expect((await tickwork(["init", "--help"])).stdout).toContain("--platform");
    expect((await tickwork(["--help"])).stdout).toContain("Each command has its own help");
    expect((await tickwork(["help"])).code).toBe(0);
    // No such command to explain: a usage error, not the overview with success.
    for (const args of [
      ["help", "frobnicate"],
      ["frobnicate", "--help"],
    ]) {
      const { code, stderr } = await tickwork(args);
      expect(code, args.join(" ")).toBe(2);
      expect(stderr).toContain('unknown command "frobnicate"');
    }
  });

  test("the bin works through npm from this repo (npx tickwork)", async () => {
    const { code, stdout } = await tickwork(["--no-install", "tickwork", "--version"], {}, "npx");
    expect(code).toBe(0);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  test("start without REDIS_URL says what to do", async () => {
    const { code, stderr } = await tickwork(["start"]);
    expect(code).toBe(2);
    expect(stderr).toContain("REDIS_URL is not set (nor UPSTASH_REDIS_REST_URL)");
    expect(stderr).toContain("REDIS_URL=redis://127.0.0.1:6379");
    expect(stderr).toContain("tickwork dev");
  });

  test("start without an API key says what to do", async () => {
    const { code, stderr } = await tickwork(["start"], { REDIS_URL: "redis://127.0.0.1:6379" });
    expect(code).toBe(2);
    expect(stderr).toContain("TICKWORK_API_KEY is not set");
  });

  test("an unreachable Redis fails at start, without printing its password", async () => {
    const { code, stderr } = await tickwork(["start"], {
      REDIS_URL: "redis://:hunter2@127.0.0.1:1",
      TICKWORK_API_KEY: "k",
    });
    expect(code).toBe(1);
    expect(stderr).toContain("cannot reach Redis at redis://127.0.0.1:1");
    expect(stderr).not.toContain("hunter2");
    // ioredis also takes a password from the query string.
    const query = await tickwork(["start"], {
      REDIS_URL: "redis://127.0.0.1:1/0?password=hunter2",
      TICKWORK_API_KEY: "k",
    });
    expect(query.code).toBe(1);
    expect(query.stderr).toContain("cannot reach Redis at redis://127.0.0.1:1/0?password=***");
    expect(query.stderr).not.toContain("hunter2");
  });

  test("an unknown role is a usage error naming the roles", async () => {
    const { code, stderr } = await tickwork(["start", "--role", "api,cron"], {
      REDIS_URL: "redis://127.0.0.1:6379",
      TICKWORK_API_KEY: "k",
    });
    expect(code).toBe(2);
    expect(stderr).toContain('unknown role "cron" (roles: all, api, tick, worker, observer)');
  });

  test("a tick-only server on the local queue needs somewhere to deliver", async () => {
    // No API key needed: a tick-only server serves no API route.
    const { code, stderr } = await tickwork(["start", "--role", "tick"], {
      REDIS_URL: "redis://127.0.0.1:6379",
      TICKWORK_TRANSPORT: "local",
    });
    // A configuration refused: exit 2, as every other (1 is for what the start met).
    expect(code).toBe(2);
    expect(stderr).toContain("which this server does not serve (its roles lack worker)");
    expect(stderr).toContain("TICKWORK_PUBLIC_URL");
  });

  test("unknown commands and options, and bad ports, are usage errors", async () => {
    for (const args of [
      ["frobnicate"],
      ["dev", "--nope"],
      ["dev", "--port", "http"],
      ["dev", "--port", "70000"],
      ["dev", "--read-ahead", "lots"],
    ]) {
      const { code, stderr } = await tickwork(args);
      expect(code).toBe(2);
      expect(stderr).toContain("tickwork --help");
    }
  });

  test("a host this machine cannot listen on is named, without a stack", async () => {
    // `.invalid` never resolves (RFC 2606).
    const { code, stderr } = await tickwork(["dev", "--host", "nowhere.invalid", "--port", "0"]);
    expect(code).toBe(1);
    expect(stderr).toContain("cannot listen on nowhere.invalid:");
    expect(stderr).toContain("set HOST (or --host)");
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  test("a port in use is named", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const { port } = blocker.address() as { port: number };
    try {
      const { code, stderr } = await tickwork(["dev", "--port", String(port)]);
      expect(code).toBe(1);
      expect(stderr).toContain(`port ${port} is in use`);
    } finally {
      blocker.close();
    }
  });
});
