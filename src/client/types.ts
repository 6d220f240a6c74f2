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
  priority?: number | undefined;
  /** Run after this long. Exclusive with `runAt`. */
  delay?: Duration | undefined;
  /** Run at this time. Exclusive with `delay`. */
  runAt?: Instant | null | undefined;
  /** Handler timeout. @default the handler's, else "60s" */
  timeout?: Duration | undefined;
  /** Retries after the first attempt. @default the handler's, else 3 */
  retries?: number | undefined;
  tags?: string[] | undefined;
  /** The same key again (per tenant, 24 h) answers the first job instead of submitting. */
  idempotencyKey?: string | undefined;
  /**
   * Ids of jobs (of the same tenant, at most 100) to wait for: the job is `waiting`, and runs once
   * they all succeeded (an unknown id answers 422 `unknown_dependencies`).
   */
  after?: string[] | undefined;
  /** When a dependency ends dead, cancelled or skipped: cancel this job too, or run it anyway. @default "cancel" */
  onFailure?: "cancel" | "run" | undefined;
  /** Where it may run: a worker group, capabilities, allowed or forbidden nodes. */
  placement?: Placement | undefined;
}

/**
 * `POST /v1/jobs` body. Only `handler` is required — unless the handler's schema requires input.
 * With a handler map (`createClient<typeof handlers>()`), `handler` is one of its names and
 * `input` is typed by that handler's schema; without one, any name and any input. A `handler`
 * typed as a union of names takes the input of whichever it is (each name with its own input).
 */
export type SubmitJobRequest<
  H extends Handlers = Handlers,
  K extends HandlerName<H> = HandlerName<H>,
> = K extends unknown ? SubmitJobOptions & { handler: K } & InputField<HandlerInput<H, K>> : never;

/**
 * One job of `POST /v1/jobs/batch` (`client.jobs.submitMany`): a {@link SubmitJobRequest} for
 * any one handler of the map, each with that handler's input.
 */
export type SubmitManyItem<H extends Handlers = Handlers> = {
  [K in HandlerName<H>]: SubmitJobRequest<H, K>;
}[HandlerName<H>];

/**
 * Where the tenant's quota stands after a request it counted (the answer's `RateLimit-*`
 * headers); absent when the tenant has no quota for it.
 */
export interface RateLimitState {
  /** What the tightest window of the quota admits (`RateLimit-Limit`). */
  limit: number;
  /** Left in it now (`RateLimit-Remaining`). */
  remaining: number;
  /** Seconds until it admits more (`RateLimit-Reset`). */
  resetSeconds: number;
}

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
  status?: JobStatus | undefined;
  handler?: string | undefined;
  scheduleId?: string | undefined;
  /** Page size, 1–100. @default 20 */
  limit?: number | undefined;
  /** Start after this page (from a previous page's `cursor`). */
  cursor?: string | undefined;
}

/** `POST /v1/schedules` body but `handler` and `input`. */
export interface CreateScheduleOptions {
  /** Your id; creating with an existing id replaces that schedule. @default generated */
  id?: string | undefined;
  /** Cron (5 or 6 fields, `@hourly`, `L`, `W`, `#`) or an interval (`"30s"`, `"5m"`, `"1h"`, `"1d"`). */
  schedule: string;
  /** IANA time zone of the cron expression. @default "UTC" */
  tz?: string | undefined;
  priority?: number | undefined;
  timeout?: Duration | undefined;
  retries?: number | undefined;
  /** Complete after this many occurrences. */
  maxRuns?: number | null | undefined;
  startAt?: Instant | null | undefined;
  endAt?: Instant | null | undefined;
  /** What to do with occurrences missed while nothing ticked. @default "once" */
  misfire?: "skip" | "once" | "all" | undefined;
  /** `skip`: an occurrence whose predecessor still runs is recorded as `skipped`. @default "allow" */
  overlap?: "allow" | "skip" | undefined;
  /** Upper bound of a per-occurrence delay. @default 0 */
  jitter?: Duration | undefined;
  tags?: string[] | undefined;
  /** Where its occurrences may run. `{}` in an update removes it. */
  placement?: Placement | undefined;
}

/** `POST /v1/schedules` body, typed by a handler map like {@link SubmitJobRequest}. */
export type CreateScheduleRequest<
  H extends Handlers = Handlers,
  K extends HandlerName<H> = HandlerName<H>,
> = K extends unknown
  ? CreateScheduleOptions & { handler: K } & InputField<HandlerInput<H, K>>
  : never;

/**
 * `PATCH /v1/schedules/:id` body: any field but `id`; `null` clears `maxRuns`, `startAt`, `endAt`.
 * The server checks `input` against the handler the schedule ends up with.
 */
export type UpdateScheduleRequest<H extends Handlers = Handlers> = Partial<
  Omit<CreateScheduleOptions, "id" | "schedule">
> & { handler?: HandlerName<H> | undefined; schedule?: string | undefined; input?: unknown };

/** A schedule. */
export type Schedule = ScheduleResource;

/** `GET /v1/schedules` filters. */
export interface ListSchedulesQuery {
  status?: ScheduleStatus | undefined;
  handler?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

/** `?limit=&cursor=` of the other listings. */
export interface PageQuery {
  limit?: number | undefined;
  cursor?: string | undefined;
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
 * What handler `K` of `H` returns (its `run`'s result, awaited), as it is stored and answered:
 * its JSON ({@link Jsonified}: a `Date` is its ISO text). The type of a typed job handle's
 * `result()` and of its final update's `job.result`; `unknown` for an untyped map.
 */
export type HandlerResult<H extends Handlers, K extends HandlerName<H>> = H[K] extends {
  // biome-ignore lint/suspicious/noExplicitAny: any input, any context: only the result matters.
  run(...args: any[]): infer O;
}
  ? Jsonified<Awaited<O>>
  : unknown;

/** Values JSON leaves out of an object (and writes as `null` in an array). */
// biome-ignore lint/suspicious/noExplicitAny: any function.
type Unwritten = undefined | symbol | ((...args: any[]) => unknown);

/** An array element after a JSON round trip: what JSON leaves out of an object is `null` here. */
type JsonifiedElement<E> = E extends Unwritten ? null : Jsonified<E>;

/**
 * What a value of type `T` reads as after a JSON round trip (`JSON.parse(JSON.stringify(v))`), as
 * a job's result comes back: what has `toJSON` is what that answers (a `Date` its ISO text),
 * functions, symbols and `undefined` leave an object (and are `null` in an array), a `Map` or
 * `Set` is `{}`. Numbers stay `number` (JSON writes `NaN` and `Infinity` as `null`).
 */
export type Jsonified<T> = T extends string | number | boolean | null
  ? T
  : // biome-ignore lint/suspicious/noExplicitAny: any arguments.
    T extends { toJSON(...args: any[]): infer J }
    ? Jsonified<J>
    : T extends Unwritten
      ? undefined
      : T extends bigint
        ? never
        : T extends ReadonlyMap<unknown, unknown> | ReadonlySet<unknown>
          ? Record<string, never>
          : T extends readonly unknown[]
            ? { [I in keyof T]: JsonifiedElement<T[I]> }
            : T extends object
              ? {
                  [P in keyof T as P extends string
                    ? T[P] extends Unwritten
                      ? never
                      : P
                    : never]: Jsonified<T[P]>;
                }
              : unknown;
