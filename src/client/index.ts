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
 */
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
  ResultTimeoutError,
  TickworkApiError,
  UnauthorizedError,
  UnavailableError,
  ValidationError,
} from "./errors.ts";
export { JobHandle, JobsApi, type ResultOptions } from "./jobs.ts";
export { PagedList } from "./paginate.ts";
export { ScheduleHandle, SchedulesApi } from "./schedules.ts";
export type * from "./types.ts";
