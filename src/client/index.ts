/**
 * @module
 * `tickwork/client`: a typed client of the tickwork HTTP API over `fetch` alone — Node, Workers,
 * browsers.
 *
 * @example
 * import { createClient, JobFailedError } from "tickwork/client";
 *
 * const client = createClient({ url: "http://127.0.0.1:8787" });
 * const job = await client.jobs.submit({ handler: "fail", input: { times: 2 }, retries: 3 });
 * try {
 *   console.log(await job.result({ timeout: "30s" })); // { attempt: 3 }
 * } catch (error) {
 *   if (error instanceof JobFailedError) console.error(error.job.error);
 * }
 *
 * Errors: an error answer of the API is a {@link TickworkApiError} — for the common statuses one
 * of its subclasses, {@link ValidationError} (400, 422), {@link UnauthorizedError} (401),
 * {@link ForbiddenError} (403), {@link NotFoundError} (404), {@link ConflictError} (409),
 * {@link RateLimitedError} (429), {@link UnavailableError} (503) — with `status`, `code`, the
 * problem+json body (`problem`, `errors`) and `requestId`. A job's outcome is
 * {@link JobFailedError}, {@link JobCancelledError} or {@link ResultTimeoutError}. These are the
 * client's own classes: import them from `tickwork/client`. The engine's errors (`tickwork`,
 * thrown in process by `engine.broker`) are another family, named for the domain
 * (`InvalidRequestError`, `RecordNotFoundError`, `StateConflictError`, `NotPermittedError`), and
 * the same-named `ValidationError`, `NotFoundError`, `ConflictError` and `ForbiddenError` that
 * `tickwork` still exports are deprecated aliases of those, never what the client throws.
 *
 * Request and response bodies are typed (`Job`, `Schedule`, `Page`, `Problem`, …); the responses
 * are the server's own declarations of its JSON.
 */

export type {
  WebhookDeliveryResource,
  WebhookEndpointList,
  WebhookEndpointResource,
} from "../core/webhooks/wire.ts";
export { type ClientOptions, createClient, type TickworkClient } from "./client.ts";
export { DlqApi } from "./dlq.ts";
export {
  apiError,
  ConflictError,
  ForbiddenError,
  JobCancelledError,
  JobFailedError,
  NotFoundError,
  RateLimitedError,
  RequestTimeoutError,
  ResultTimeoutError,
  TickworkApiError,
  UnauthorizedError,
  UnavailableError,
  ValidationError,
} from "./errors.ts";
export { FlowsApi, type SubmitFlowRequest, type SubmittedFlow } from "./flows.ts";
export { HooksApi } from "./hooks.ts";
export {
  JobHandle,
  JobsApi,
  type ResultOptions,
  type SubmitManyOutcome,
  type SubmittedMany,
} from "./jobs.ts";
export { NodesApi } from "./nodes.ts";
export { PagedList } from "./paginate.ts";
export { ScheduleHandle, SchedulesApi } from "./schedules.ts";
export type * from "./types.ts";
export {
  type JobUpdate,
  readSse,
  StreamIdleError,
  type TypedJob,
  type UpdatesOptions,
} from "./updates.ts";
