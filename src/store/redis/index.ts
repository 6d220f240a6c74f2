/**
 * @module
 * The Redis store: `RedisStore` over any client that can EVAL/EVALSHA (`@upstash/redis` as is,
 * ioredis through `fromIoredis`), and `RedisStreams`, the durable queue on Redis Streams (with
 * `RedisStore({ dispatch: "streams" })` and `PullWorker` from `tickwork`).
 */

export { DEFAULT_RETENTION } from "../port.ts";
export { ErrorCode, RedisStoreError } from "./errors.ts";
export type { BlockingClient, BlockingConnection } from "./event-waiter.ts";
export { RedisStore, type RedisStoreOptions } from "./redis-store.ts";
export {
  fromIoredis,
  type IoredisScripting,
  type LuaScript,
  type ScriptClient,
  safeEval,
} from "./script.ts";
export {
  RedisStreams,
  type RedisStreamsOptions,
  type StreamMessage,
  type StreamsClient,
  type StreamsStats,
} from "./streams/redis-streams.ts";
