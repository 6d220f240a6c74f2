/**
 * @module
 * `tickwork redis-rest`: an Upstash-REST-compatible bridge in front of any Redis, so code written
 * for `@upstash/redis` (tickwork's Redis store on Workers and Vercel included) runs against a local
 * or self-hosted Redis. `createRedisRestBridge` is the Hono app; `serveRedisRest` runs it on Node.
 */
export { createRedisRestBridge, type RedisRestBridgeOptions } from "./bridge.ts";
export { RedisRestError, type RedisRestStatus } from "./errors.ts";
export type { BridgeRedis } from "./execute.ts";
export { type RedisRestServer, type ServeRedisRestOptions, serveRedisRest } from "./serve.ts";
