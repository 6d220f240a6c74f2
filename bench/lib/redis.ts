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
  /** The `redis-server` process id. */
  pid: number;
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
    pid: server.child.pid ?? 0,
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
 * Microseconds Redis spent executing scripts (EVAL, EVALSHA and FCALL, the commands inside included)
 * since it started, from `INFO commandstats`: the store's share of a tick, whatever the client
 * and the machine's load add around it.
 */
export async function scriptUsec(redis: Redis): Promise<number> {
  const info = await redis.info("commandstats");
  let total = 0;
  for (const line of info.split("\n")) {
    const m = /^cmdstat_(eval|evalsha|fcall):calls=\d+,usec=(\d+)/.exec(line.trim());
    if (m) total += Number(m[2]);
  }
  return total;
}

/** Calls and µs spent, by command, as `INFO commandstats` lists them (`client|setname` etc.). */
export type CommandUsage = Map<string, { calls: number; usec: number }>;

/** `INFO commandstats`: calls and usec of every command since the server started. */
export async function commandUsage(redis: Redis): Promise<CommandUsage> {
  const info = await redis.info("commandstats");
  const out: CommandUsage = new Map();
  for (const line of info.split("\n")) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim());
    if (m) out.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
  }
  return out;
}

/**
 * µs Redis spent executing the commands the clients sent between two snapshots: each script call
 * (EVAL/EVALSHA, whose usec already holds the commands the script ran) and each command sent on
 * its own. `INFO commandstats` lists a script's inner commands a second time under their own
 * names, so a plain sum counts them twice; `sent` (calls the clients sent in the window, by
 * command name, counted client side) tells them apart: of a command's usec, the share
 * `sent / calls` (at most 1) is the clients' own, the rest ran inside scripts. `INFO` (the
 * benchmark's own reads) is left out.
 */
export function ownUsecBetween(
  before: CommandUsage,
  after: CommandUsage,
  sent: Record<string, number>,
): number {
  let total = 0;
  for (const [cmd, a] of after) {
    if (cmd === "info") continue;
    const b = before.get(cmd) ?? { calls: 0, usec: 0 };
    const calls = a.calls - b.calls;
    if (calls <= 0) continue;
    const own = sent[cmd] ?? sent[cmd.split("|")[0]!] ?? 0;
    total += (a.usec - b.usec) * Math.min(1, own / calls);
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
