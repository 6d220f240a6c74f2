/**
 * A private redis-server on a free port, for measurements that need a Redis nobody else touches
 * (exact `INFO commandstats` counts).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { onFreePort } from "./free-port.ts";

export interface PrivateRedis {
  url: string;
  port: number;
  /** The `redis-server` process (benchmarks register it for cleanup on exit). */
  child: ChildProcess;
  /** Kill it and wait until it has exited. */
  stop(): Promise<void>;
}

/**
 * Start `redis-server` on a free loopback port, with no persistence. Ready when the server says so
 * ("Ready to accept connections", printed once it listens), then checked with a PING; an exit
 * before that (no redis-server) fails at once with its output; one because the port was taken
 * meanwhile starts again on another port.
 */
export function startRedisServer(
  timeoutMs = 20_000,
  /** More `redis-server` options, e.g. `["--rename-command", "FCALL", ""]`. */
  extraArgs: readonly string[] = [],
): Promise<PrivateRedis> {
  // The port taken meanwhile: it exits at once, saying so; then another port.
  return onFreePort(/Address already in use/, (port) => startOn(port, timeoutMs, extraArgs));
}

async function startOn(
  port: number,
  timeoutMs: number,
  extraArgs: readonly string[],
): Promise<PrivateRedis> {
  // A directory of its own: a replica (`--replicaof`) writes the primary's data there (it left a
  // dump.rdb in the working directory).
  const dir = mkdtempSync(join(tmpdir(), "tw-redis-"));
  const child = spawn(
    "redis-server",
    [
      "--dir",
      dir,
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      ...extraArgs,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  // `close`: its output is read to the end (the reason it stopped, e.g. the port in use).
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve())).then(() =>
    rmSync(dir, { recursive: true, force: true }),
  );
  let log = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`redis-server not ready within ${timeoutMs} ms:\n${log}`));
    }, timeoutMs);
    const read = (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes("Ready to accept connections")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on("data", read);
    child.stderr?.on("data", read);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited before it was ready:\n${log}`));
    });
  });
  // Keep draining its log, so a full pipe never blocks it.
  child.stdout?.resume();
  child.stderr?.resume();
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await probe.connect();
    await probe.ping();
  } finally {
    probe.disconnect();
  }
  return {
    url,
    port,
    child,
    async stop() {
      child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Total commands Redis has executed (all `cmdstat_*` calls), the unit Upstash bills. */
export async function commandsExecuted(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info("commandstats");
  const out = new Map<string, number>();
  for (const line of info.split("\n")) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

/** Commands executed between two snapshots, excluding the `INFO` used to take them. */
export function billedBetween(before: Map<string, number>, after: Map<string, number>): number {
  let total = 0;
  for (const [cmd, calls] of after) {
    if (cmd === "info") continue;
    total += calls - (before.get(cmd) ?? 0);
  }
  return total;
}
