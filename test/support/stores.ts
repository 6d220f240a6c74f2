/**
 * The stores every engine-level suite runs on: the embedded memory store, the Redis store on a
 * real Redis (127.0.0.1:6379, a random key prefix per store, removed afterwards), and the same
 * Redis store on `@upstash/redis` through the REST bridge in front of that Redis (one bridge per
 * test file, started on first use).
 */
import { Redis } from "ioredis";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { Store } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { deletePrefix, upstashClient } from "../redis-rest/harness.ts";

export interface StoreHandle {
  store: Store;
  cleanup(): Promise<void>;
}

export interface StoreFactory {
  name: string;
  make(): Promise<StoreHandle>;
}

export const REDIS_URL = "redis://127.0.0.1:6379";

/** A Redis store under a fresh prefix; cleanup deletes that prefix's keys and disconnects. */
export async function makeRedisStore(
  redis = new Redis(REDIS_URL),
): Promise<StoreHandle & { prefix: string; redis: Redis }> {
  const prefix = `t${Math.random().toString(36).slice(2, 10)}`;
  const store = new RedisStore({ client: fromIoredis(redis), prefix });
  return {
    store,
    prefix,
    redis,
    async cleanup() {
      let cursor = "0";
      do {
        const [next, found] = await redis.scan(cursor, "MATCH", `{${prefix}}:*`, "COUNT", 1000);
        if (found.length > 0) await redis.del(...found);
        cursor = next;
      } while (cursor !== "0");
      redis.disconnect();
    },
  };
}

/** The Redis store on `@upstash/redis` (production defaults) through the file's REST bridge. */
export async function makeUpstashStore(): Promise<StoreHandle> {
  const prefix = `u${Math.random().toString(36).slice(2, 10)}`;
  const store = new RedisStore({ client: await upstashClient(), prefix });
  return { store, cleanup: () => deletePrefix(prefix) };
}

export const storeFactories: StoreFactory[] = [
  { name: "memory", make: async () => ({ store: new MemoryStore(), cleanup: async () => {} }) },
  { name: "redis", make: () => makeRedisStore() },
  { name: "upstash", make: makeUpstashStore },
];
