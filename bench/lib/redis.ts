/**
 * @module
 * Private redis-servers for exact counts (the approach of `test/support/redis-server.ts`): each on
 * a free loopback port with no persistence, killed when the benchmark ends. `INFO commandstats`
 * gives billed commands (EVAL/EVALSHA plus every `redis.call` inside, as Upstash bills);
 * `INFO memory` gives `used_memory`.
 */
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { Redis } from "ioredis";
import { track } from "./children.ts";

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface PrivateRedis {
  url: string;
  /** A connection for the benchmark's own reads (INFO, SCRIPT LOAD). */
  admin: Redis;
  stop(): Promise<void>;
}

/** Start `redis-server --save "" --appendonly no` on a free port and wait until it answers. */
export async function startRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const child = track(
    spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      { stdio: "ignore" },
    ),
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `redis://127.0.0.1:${port}`;
  const admin = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // Refused connections while the server starts are expected: the loop below retries.
  const quiet = () => {};
  admin.on("error", quiet);
  for (let i = 0; ; i++) {
    try {
      await admin.connect();
      await admin.ping();
      break;
    } catch (error) {
      if (i > 100) throw error;
      admin.disconnect();
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  admin.off("error", quiet);
  return {
    url,
    admin,
    async stop() {
      admin.disconnect();
      child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Calls per command since the server started (`cmdstat_*`). */
export async function commandStats(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info("commandstats");
  const out = new Map<string, number>();
  for (const line of info.split("\n")) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

/** Commands executed between two snapshots, less the `INFO` calls that took them. */
export function billedBetween(before: Map<string, number>, after: Map<string, number>): number {
  let total = 0;
  for (const [cmd, calls] of after) {
    if (cmd === "info") continue;
    total += calls - (before.get(cmd) ?? 0);
  }
  return total;
}

/** Per-command breakdown between two snapshots (for the printed details). */
export function commandsBetween(
  before: Map<string, number>,
  after: Map<string, number>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [cmd, calls] of after) {
    const n = calls - (before.get(cmd) ?? 0);
    if (cmd !== "info" && n > 0) out[cmd] = n;
  }
  return out;
}

/**
 * Microseconds Redis spent executing scripts (EVAL and EVALSHA, the commands inside included)
 * since it started, from `INFO commandstats`: the store's share of a tick, whatever the client
 * and the machine's load add around it.
 */
export async function scriptUsec(redis: Redis): Promise<number> {
  const info = await redis.info("commandstats");
  let total = 0;
  for (const line of info.split("\n")) {
    const m = /^cmdstat_(eval|evalsha):calls=\d+,usec=(\d+)/.exec(line.trim());
    if (m) total += Number(m[2]);
  }
  return total;
}

/** `used_memory` in bytes. */
export async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info("memory");
  const m = /^used_memory:(\d+)/m.exec(info);
  if (!m) throw new Error("INFO memory has no used_memory");
  return Number(m[1]);
}

/** CPU time the server has used (user + system, all threads), in µs. */
export async function redisCpu(redis: Redis): Promise<number> {
  const info = await redis.info("cpu");
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1]);
  return Math.round((field("used_cpu_user") + field("used_cpu_sys")) * 1e6);
}
