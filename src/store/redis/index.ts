/**
 * @module
 * The Redis store: `RedisStore` over any client that can EVAL/EVALSHA (`@upstash/redis` as is,
 * ioredis through `fromIoredis`).
 */
export { ErrorCode, RedisStoreError } from "./errors.ts";
export { DEFAULT_RETENTION, RedisStore, type RedisStoreOptions } from "./redis-store.ts";
export {
  fromIoredis,
  type IoredisScripting,
  type LuaScript,
  type ScriptClient,
  safeEval,
} from "./script.ts";
