/**
 * @module
 * tickwork: background jobs and cron schedules for serverless apps.
 *
 * This entry is the engine: define handlers, compose an engine from a store and a transport, and
 * use its broker (submit, schedules), ticker (the tick your cron calls) and runner (the worker).
 * Stores, transports, the HTTP app, the client and each platform have entries of their own:
 * `tickwork/redis`, `tickwork/memory`, `tickwork/qstash`, `tickwork/local`, `tickwork/http`,
 * `tickwork/client`, `tickwork/node`, `tickwork/cloudflare`, `tickwork/vercel`; the store contract
 * is `tickwork/store`.
 *
 * @example
 * import { createEngine, defineHandlers } from "tickwork";
 * import { MemoryStore } from "tickwork/memory";
 * import { LocalTransport } from "tickwork/local";
 * import * as z from "zod";
 *
 * const handlers = defineHandlers({
 *   "email.send": { input: z.object({ to: z.email() }), run: ({ to }) => sendMail(to) },
 * });
 * const engine = createEngine({ store: new MemoryStore(), transport, handlers });
 * const { job } = await engine.broker.submit({ handler: "email.send", input: { to: "a@b.c" } });
 */

// Records
export type { DeliveryOutcome } from "./core/delivery.ts";
export type { Duration } from "./core/duration.ts";
// Errors: thrown by the engine (each maps to an HTTP status), thrown by handlers to steer retries,
// and the one error of a setup tickwork cannot run with. `ValidationError`, `NotFoundError`,
// `ConflictError` and `ForbiddenError` are deprecated aliases of the engine's renamed errors:
// those names belong to the HTTP client's errors (`tickwork/client`).
export {
  ConflictError,
  ForbiddenError,
  InputTooLargeError,
  InvalidRequestError,
  NonRetryableError,
  NotFoundError,
  NotPermittedError,
  OverloadedError,
  QuotaExceededError,
  RecordNotFoundError,
  RetryAfterError,
  StateConflictError,
  TickworkConfigError,
  TickworkError,
  TimeoutError,
  UnprocessableError,
  ValidationError,
} from "./core/errors.ts";
export type {
  JobError,
  JobRecord,
  JobSpec,
  JobStatus,
  Misfire,
  Overlap,
  ScheduleDef,
  ScheduleRecord,
  ScheduleStatus,
} from "./core/model.ts";
// What an inbound webhook's job carries as input (docs/webhooks.md)
export type { WebhookJobInput } from "./core/webhooks/index.ts";
// The engine
export {
  type Actor,
  Broker,
  type JobRequest,
  type QuotaReport,
  type ScheduleChanged,
  type SchedulePatch,
  type ScheduleRequest,
  type ScheduleWritten,
  type Scope,
  type Submitted,
} from "./engine/broker.ts";
// Handlers
export type { ConcurrencyOption } from "./engine/concurrency.ts";
export {
  type DefinedHandlers,
  defineHandler,
  defineHandlers,
  type HandlerContext,
  type HandlerDefinition,
  type HandlerInput,
  type HandlerName,
  type Handlers,
  type InputField,
  type SubmitJob,
} from "./engine/handlers.ts";
export { createEngine, type Engine, type EngineConfig } from "./engine/index.ts";
export { jsonLogger, type Logger, silentLogger } from "./engine/logger.ts";
export {
  type DegradationOptions,
  type EngineOptions,
  type JobDefaults,
  lookAheadFor,
  type TickOptions,
} from "./engine/options.ts";
export {
  PullWorker,
  type PullWorkerOptions,
  type PullWorkerStats,
} from "./engine/pull-worker.ts";
export type { RateLimitOption } from "./engine/rate-limit.ts";
export { Runner } from "./engine/runner.ts";
export { Ticker, type TickResult } from "./engine/ticker.ts";

// The ports, for code that is handed a store or a transport
export type { Store } from "./store/port.ts";
export type {
  Delivery,
  FailureCallbackBody,
  PublishOutcome,
  PulledMessage,
  PullQueue,
  Transport,
} from "./transport/port.ts";
