/**
 * @module
 * `tickwork/node`: run tickwork on Node — `startServer` (everything in one call), or the parts:
 * `serve` (an app on a Node HTTP server with graceful shutdown) and `startTicker` (the tick timer);
 * and `serverOptionsFromEnv`, the environment variables every entry file reads, in one place.
 */

export { TickworkConfigError } from "../../core/errors.ts";
export { apiKeyAuthorize } from "./api-key.ts";
export {
  BANNER_IDEMPOTENCY_KEY,
  type BannerInfo,
  curlLines,
  formatBanner,
  NO_SUBMIT_ROUTE_LINE,
  redactRedisUrl,
} from "./banner.ts";
export { coalesceWrites, type IoredisLike } from "./coalesce.ts";
export { loadConfig } from "./config.ts";
export {
  type Env,
  parsePort,
  type QStashSelection,
  type StoreSelection,
  selectQStash,
  selectStore,
  serverOptionsFromEnv,
} from "./env.ts";
export { ConfigError, StartError } from "./errors.ts";
export { type NodeQStashHttpOptions, nodeQStashHttp } from "./qstash-http.ts";
export { type FetchApp, type NodeServer, type ServeOptions, serve } from "./serve.ts";
export { nodeSignals } from "./signals.ts";
export {
  type QStashCredentials,
  type RunningServer,
  type StartServerOptions,
  startServer,
} from "./start.ts";
export { type OpenStore, openStore, type StoreTarget } from "./store.ts";
export { startTicker, type TickerTimer, type TickerTimerOptions } from "./tick-timer.ts";
