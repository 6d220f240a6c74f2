/**
 * @module
 * The Redis store: `RedisStore` over any client that can EVAL/EVALSHA (`@upstash/redis` as is,
 * ioredis through `fromIoredis`).
 */

export { DEFAULT_RETENTION } from "../port.ts";
export { ErrorCode, RedisStoreError } from "./errors.ts";
export { RedisStore, type RedisStoreOptions } from "./redis-store.ts";
export {
  fromIoredis,
  type IoredisScripting,
  type LuaScript,
  type ScriptClient,
  safeEval,
} from "./script.ts";
