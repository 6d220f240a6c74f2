/**
 * @module
 * The shared Redis at 127.0.0.1:6379 for the Redis store's own tests: one connection per test file
 * (its users run each in a process of their own: `ISOLATED` in test/isolated.ts), closed after
 * the file's tests, and stores on it under fresh prefixes whose keys (and only those) are removed
 * afterwards.
 */
import { Redis } from "ioredis";
import { afterAll } from "vitest";
import { keys } from "../../src/store/redis/keys.ts";
import { RedisStore } from "../../src/store/redis/redis-store.ts";
import { fromIoredis, type ScriptClient } from "../../src/store/redis/script.ts";
import { uniq } from "./redis-store-fixtures.ts";

export const shared = new Redis("redis://127.0.0.1:6379");
afterAll(() => shared.disconnect());

/**
 * A store on the shared Redis under a fresh prefix, removed afterwards. Finished jobs are kept
 * `jobMs` (a minute: no record vanishes in the middle of a test on a busy machine; a test about
 * expiry passes a short one).
 */
export function withStore(client: (redis: Redis) => ScriptClient = fromIoredis, jobMs = 60_000) {
  const prefix = uniq("rs");
  const store = new RedisStore({ client: client(shared), prefix, retention: { jobMs } });
  const cleanup = async () => {
    const found = await shared.keys(`{${prefix}}:*`);
    if (found.length > 0) await shared.del(...found);
  };
  return { store, prefix, k: keys(prefix), cleanup };
}
