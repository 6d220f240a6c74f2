/**
 * @module
 * A private redis-server for one test file (started before its tests, stopped after) and what a
 * call bills on it: EVALSHA plus every command a script runs, from `INFO commandstats`, as
 * Upstash bills. For the Redis store's cost tests.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll } from "vitest";
import {
  billedBetween,
  commandsExecuted,
  type PrivateRedis,
  startRedisServer,
} from "./redis-server.ts";

/** What one call billed: the total, and the count of each command (INFO excluded). */
export interface Billed {
  total: number;
  byCommand: Map<string, number>;
}

/**
 * Registers `beforeAll`/`afterAll` in the calling file (or describe block).
 *
 * @example
 * const priv = privateRedis();
 * it("…", async () => {
 *   const store = new RedisStore({ client: fromIoredis(priv.redis) });
 *   expect((await priv.billed(() => store.now())).total).toBe(2);
 * });
 */
export function privateRedis(): {
  readonly redis: Redis;
  billed(fn: () => Promise<unknown>): Promise<Billed>;
} {
  let server: PrivateRedis | undefined;
  let redis: Redis | undefined;
  beforeAll(async () => {
    server = await startRedisServer();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });
  const client = (): Redis => {
    if (!redis) throw new Error("privateRedis: used outside the file's tests");
    return redis;
  };
  return {
    get redis() {
      return client();
    },
    async billed(fn) {
      const before = await commandsExecuted(client());
      await fn();
      const after = await commandsExecuted(client());
      const byCommand = new Map<string, number>();
      for (const [cmd, calls] of after) {
        const d = calls - (before.get(cmd) ?? 0);
        if (cmd !== "info" && d > 0) byCommand.set(cmd, d);
      }
      return { total: billedBetween(before, after), byCommand };
    },
  };
}
