/**
 * The stores the realtime stream tests run on: memory (woken in process), Redis over TCP with a
 * blocking client (`XREAD BLOCK` on its own connection) and `@upstash/redis` through the REST
 * bridge (no blocking reads: polled). Each Redis store under a fresh prefix, removed afterwards.
 */
import { Redis } from "ioredis";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { deletePrefix, upstashClient } from "../redis-rest/harness.ts";
import type { StoreHandle } from "../support/stores.ts";

const REDIS_URL = "redis://127.0.0.1:6379";

export const streamStores: { name: string; make(): Promise<StoreHandle> }[] = [
  { name: "memory", make: async () => ({ store: new MemoryStore(), cleanup: async () => {} }) },
  {
    name: "redis (blocking)",
    make: async () => {
      const redis = new Redis(REDIS_URL);
      const prefix = `st${Math.random().toString(36).slice(2, 10)}`;
      const store = new RedisStore({ client: fromIoredis(redis), prefix, blocking: redis });
      return {
        store,
        async cleanup() {
          await store.close();
          const keys = await redis.keys(`{${prefix}}:*`);
          if (keys.length > 0) await redis.del(...keys);
          redis.disconnect();
        },
      };
    },
  },
  {
    name: "upstash (polled)",
    make: async () => {
      const prefix = `us${Math.random().toString(36).slice(2, 10)}`;
      const store = new RedisStore({ client: await upstashClient(), prefix });
      return { store, cleanup: () => deletePrefix(prefix) };
    },
  },
];
