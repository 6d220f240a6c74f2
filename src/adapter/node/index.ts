/**
 * @module
 * `tickwork/node`: run tickwork on Node — `startServer` (everything in one call), or the parts:
 * `serve` (an app on a Node HTTP server with graceful shutdown) and `startTicker` (the tick timer).
 */
export { apiKeyAuthorize } from "./api-key.ts";
export {
  BANNER_IDEMPOTENCY_KEY,
  type BannerInfo,
  curlLines,
  formatBanner,
  redactRedisUrl,
} from "./banner.ts";
export { type FetchApp, type NodeServer, type ServeOptions, serve } from "./serve.ts";
export { type RunningServer, StartError, type StartServerOptions, startServer } from "./start.ts";
export { startTicker, type TickerTimer, type TickerTimerOptions } from "./ticker.ts";
