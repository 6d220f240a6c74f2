/**
 * @module
 * Private redis-servers for exact counts (`test/support/redis-server.ts`, tracked here): each on
 * a free loopback port with no persistence, killed when the benchmark ends. `INFO commandstats`
 * gives billed commands (EVAL/EVALSHA plus every `redis.call` inside, as Upstash bills);
 * `INFO memory` gives `used_memory`.
 */
import { Redis } from "ioredis";
import {
  billedBetween,
  commandsExecuted,
  startRedisServer,
} from "../../test/support/redis-server.ts";
import { track } from "./children.ts";

export { billedBetween, commandsExecuted as commandStats };

export interface PrivateRedis {
  url: string;
  /** A connection for the benchmark's own reads (INFO, SCRIPT LOAD). */
  admin: Redis;
  stop(): Promise<void>;
}

/** Start `redis-server --save "" --appendonly no` on a free port (killed when the bench exits). */
export async function startRedis(): Promise<PrivateRedis> {
  const server = await startRedisServer();
  track(server.child);
  const admin = new Redis(server.url);
  await admin.ping();
  return {
    url: server.url,
    admin,
    async stop() {
      admin.disconnect();
      await server.stop();
    },
  };
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
