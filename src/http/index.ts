/**
 * @module
 * `tickwork/http`: the Hono app serving the HTTP API (docs/api.md) over an engine.
 */
export { createApp } from "./app.ts";
export { deliveryResponse, unavailableDelivery } from "./delivery.ts";
export { tenantAuthorize } from "./middleware/auth.ts";
export { type RateLimitInfo, setRateLimitHeaders } from "./middleware/rate-limit.ts";
export { requireScope } from "./middleware/scope.ts";
export {
  type AppEnv,
  type AppOptions,
  type AppVariables,
  type Authorize,
  type Platform,
  SERVERLESS_PLATFORMS,
} from "./options.ts";
export { type FieldIssue, PROBLEM_JSON, type Problem } from "./problem.ts";
export { normalizeRoles, parseRoles, ROLES, type Role, type RouteSet, routeSet } from "./roles.ts";
export type {
  JobResource,
  JobSummary,
  PageResource,
  ScheduleResource,
  TickResource,
} from "./serialize.ts";
export { STREAM_DEFAULTS, type StreamConfig } from "./stream/sse.ts";
