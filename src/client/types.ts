/**
 * @module
 * Request and response bodies of the HTTP API (docs/api.md), as the client sends and receives
 * them: times are ISO-8601 strings in responses; requests take ISO strings, epoch ms or `Date`.
 * Durations are ms or strings like `"500ms"`, `"30s"`, `"5m"`, `"1h"`, `"1d"`.
 *
 * The response bodies are the server's own declarations (`src/core/wire.ts`, which the server's
 * serializers are typed by), under the client's names; the request bodies are the client's, with
 * their keys checked against the server's schemas (`types.test.ts`).
 */
import type { JobError, JobStatus, ScheduleStatus } from "../core/model.ts";
import type { Placement } from "../core/placement.ts";
import type {
  CancelResource,
  FieldIssue,
  JobLogEntryResource,
  JobProgressUpdate,
  JobResource,
  JobStatusUpdate,
  JobSummary,
  NodeResource,
  NodesResource,
  PageResource,
  Problem,
  ScheduleResource,
  TickResource,
} from "../core/wire.ts";
import type { HandlerInput, HandlerName, Handlers, InputField } from "../engine/handlers.ts";

export type {
  FieldIssue,
  JobError,
  JobProgressUpdate,
  JobStatus,
  JobStatusUpdate,
  JobSummary,
  Problem,
  ScheduleStatus,
};

/** Milliseconds, or a string with a unit: `"500ms"`, `"30s"`, `"5m"`, `"1h"`, `"1d"`. */
export type Duration = number | string;

/** A point in time in a request: ISO-8601 string, epoch ms or `Date`. */
export type Instant = string | number | Date;

/** `POST /v1/jobs` body but `handler` and `input`. */
export interface SubmitJobOptions {
  /** 1–10 (1–3 low, 4–7 normal, 8–10 high). @default 5 */
  priority?: number;
  /** Run after this long. Exclusive with `runAt`. */
  delay?: Duration;
  /** Run at this time. Exclusive with `delay`. */
  runAt?: Instant | null;
  /** Handler timeout. @default the handler's, else "60s" */
  timeout?: Duration;
  /** Retries after the first attempt. @default the handler's, else 3 */
  retries?: number;
  tags?: string[];
  /** The same key again (per tenant, 24 h) answers the first job instead of submitting. */
  idempotencyKey?: string;
  /**
   * Ids of jobs (of the same tenant, at most 100) to wait for: the job is `waiting`, and runs once
   * they all succeeded (an unknown id answers 422 `unknown_dependencies`).
   */
  after?: string[];
  /** When a dependency ends dead, cancelled or skipped: cancel this job too, or run it anyway. @default "cancel" */
  onFailure?: "cancel" | "run";
  /** Where it may run: a worker group, capabilities, allowed or forbidden nodes. */
  placement?: Placement;
}

/**
 * `POST /v1/jobs` body. Only `handler` is required — unless the handler's schema requires input.
 * With a handler map (`createClient<typeof handlers>()`), `handler` is one of its names and
 * `input` is typed by that handler's schema; without one, any name and any input.
 */
export type SubmitJobRequest<
  H extends Handlers = Handlers,
  K extends HandlerName<H> = HandlerName<H>,
> = SubmitJobOptions & { handler: K } & InputField<HandlerInput<H, K>>;

/**
 * One job of `POST /v1/jobs/batch` (`client.jobs.submitMany`): a {@link SubmitJobRequest} for
 * any one handler of the map, each with that handler's input.
 */
export type SubmitManyItem<H extends Handlers = Handlers> = {
  [K in HandlerName<H>]: SubmitJobRequest<H, K>;
}[HandlerName<H>];

/** A job, as `GET /v1/jobs/:id` and the listings show it (`progress` once its handler reported some). */
export type Job = JobResource;

/** One entry of a job's log, as `GET /v1/jobs/:id/logs` shows it. */
export type JobLogEntry = JobLogEntryResource;

/**
 * What a cancel answers: `{ id, status: "cancelled" }` for a queued job, or the running job
 * (`status: "running"`, `cancelRequested: true`), which ends `cancelled` soon.
 */
export type CancelResult = CancelResource;

/** `GET /v1/jobs` filters. */
export interface ListJobsQuery {
  status?: JobStatus;
  handler?: string;
  scheduleId?: string;
  /** Page size, 1–100. @default 20 */
  limit?: number;
  /** Start after this page (from a previous page's `cursor`). */
  cursor?: string;
}

/** `POST /v1/schedules` body but `handler` and `input`. */
export interface CreateScheduleOptions {
  /** Your id; creating with an existing id replaces that schedule. @default generated */
  id?: string;
  /** Cron (5 or 6 fields, `@hourly`, `L`, `W`, `#`) or an interval (`"30s"`, `"5m"`, `"1h"`, `"1d"`). */
  schedule: string;
  /** IANA time zone of the cron expression. @default "UTC" */
  tz?: string;
  priority?: number;
  timeout?: Duration;
  retries?: number;
  /** Complete after this many occurrences. */
  maxRuns?: number | null;
  startAt?: Instant | null;
  endAt?: Instant | null;
  /** What to do with occurrences missed while nothing ticked. @default "once" */
  misfire?: "skip" | "once" | "all";
  /** `skip`: an occurrence whose predecessor still runs is recorded as `skipped`. @default "allow" */
  overlap?: "allow" | "skip";
  /** Upper bound of a per-occurrence delay. @default 0 */
  jitter?: Duration;
  tags?: string[];
  /** Where its occurrences may run. `{}` in an update removes it. */
  placement?: Placement;
}

/** `POST /v1/schedules` body, typed by a handler map like {@link SubmitJobRequest}. */
export type CreateScheduleRequest<
  H extends Handlers = Handlers,
  K extends HandlerName<H> = HandlerName<H>,
> = CreateScheduleOptions & { handler: K } & InputField<HandlerInput<H, K>>;

/**
 * `PATCH /v1/schedules/:id` body: any field but `id`; `null` clears `maxRuns`, `startAt`, `endAt`.
 * The server checks `input` against the handler the schedule ends up with.
 */
export type UpdateScheduleRequest<H extends Handlers = Handlers> = Partial<
  Omit<CreateScheduleOptions, "id">
> & { handler?: HandlerName<H>; input?: unknown };

/** A schedule. */
export type Schedule = ScheduleResource;

/** `GET /v1/schedules` filters. */
export interface ListSchedulesQuery {
  status?: ScheduleStatus;
  handler?: string;
  limit?: number;
  cursor?: string;
}

/** `?limit=&cursor=` of the other listings. */
export interface PageQuery {
  limit?: number;
  cursor?: string;
}

/** One page of a listing; `cursor` is absent on the last page. */
export type Page<T> = PageResource<T>;

/** What `POST /v1/tick` answers. */
export type TickResult = TickResource;

/** What `GET /v1/nodes` answers: the registered nodes and where the app runs. */
export type Nodes = NodesResource;

/** One server of the fleet, as `GET /v1/nodes` lists it. */
export type RegisteredNode = NodeResource;

/**
 * What handler `K` of `H` returns (its `run`'s result, awaited): the type of a typed job handle's
 * `result()` and of its final update's `job.result`; `unknown` for an untyped map.
 */
export type HandlerResult<H extends Handlers, K extends HandlerName<H>> = H[K] extends {
  // biome-ignore lint/suspicious/noExplicitAny: any input, any context: only the result matters.
  run(...args: any[]): infer O;
}
  ? Awaited<O>
  : unknown;
