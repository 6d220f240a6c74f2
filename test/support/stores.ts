/**
 * The stores every engine-level suite runs on: the embedded memory store and the Redis store on a
 * real Redis (127.0.0.1:6379, a random key prefix per store, removed afterwards).
 */
import { Redis } from "ioredis";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { Store } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";

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

export const storeFactories: StoreFactory[] = [
  { name: "memory", make: async () => ({ store: new MemoryStore(), cleanup: async () => {} }) },
  { name: "redis", make: () => makeRedisStore() },
];
