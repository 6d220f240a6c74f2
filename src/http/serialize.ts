/**
 * @module
 * How records look on the wire (docs/api.md, typed by `src/core/wire.ts`): times as ISO-8601
 * strings, durations in ms, the API's field names (`timeout`, `jitter`). Internal fields
 * (`tenant`, `rev`, a job's inherited `overlap`) are left out. An absent optional value is
 * omitted, never `null` — except a schedule's `nextRunAt`, which is `null` once it is completed.
 */
import type { JobLogEntry, JobRecord, ScheduleRecord } from "../core/model.ts";
import type {
  CancelResource,
  JobLogEntryResource,
  JobResource,
  JobSummary,
  PageResource,
  ScheduleResource,
  TickResource,
} from "../core/wire.ts";
import type { TickResult } from "../engine/ticker.ts";
import type { Page } from "../store/port.ts";

// The answers' JSON is declared once, in core, and read by the client too.
export type {
  CancelResource,
  JobLogEntryResource,
  JobResource,
  JobSummary,
  PageResource,
  ScheduleResource,
  TickResource,
};

/** The largest |ms| a `Date` holds (±100,000,000 days from the epoch). */
const DATE_LIMIT_MS = 8.64e15;

/**
 * `ms` as ISO-8601. Requests can only store years 1970–9999, but a record written before those
 * bounds may hold a time no `Date` can: it is shown clamped to the nearest one a `Date` holds
 * (`+275760-09-13T00:00:00.000Z`), and one that is not a number at all as the epoch — never
 * thrown over: one such record must not fail a listing.
 *
 * @example
 * iso(0);     // "1970-01-01T00:00:00.000Z"
 * iso(1e300); // "+275760-09-13T00:00:00.000Z"
 */
export function iso(ms: number): string {
  if (typeof ms !== "number" || Number.isNaN(ms)) return new Date(0).toISOString();
  // A job's createdAt and runAt, and the jobs of one busy millisecond, share their times.
  if (ms === lastMs) return lastIso;
  const text = new Date(Math.min(Math.max(ms, -DATE_LIMIT_MS), DATE_LIMIT_MS)).toISOString();
  lastMs = ms;
  lastIso = text;
  return text;
}

let lastMs = Number.NaN;
let lastIso = "";

function isoIf<K extends string>(key: K, ms: number | undefined): { [P in K]?: string } {
  return (ms === undefined ? {} : { [key]: iso(ms) }) as { [P in K]?: string };
}

/** A job record as the API shows it. */
export function jobResource(job: JobRecord): JobResource {
  return {
    id: job.id,
    handler: job.handler,
    status: job.status,
    input: job.input,
    ...("result" in job && job.result !== undefined ? { result: job.result } : {}),
    ...(job.error ? { error: job.error } : {}),
    attempts: job.attempts,
    priority: job.priority,
    tags: job.tags,
    runAt: iso(job.runAt),
    createdAt: iso(job.createdAt),
    ...isoIf("startedAt", job.startedAt),
    ...isoIf("finishedAt", job.finishedAt),
    ...(job.scheduleId !== undefined ? { scheduleId: job.scheduleId } : {}),
    ...isoIf("fireAt", job.fireAt),
    timeout: job.timeoutMs,
    retries: job.retries,
    ...(job.idempotencyKey !== undefined ? { idempotencyKey: job.idempotencyKey } : {}),
    ...(job.progress ? { progress: { value: job.progress.value, at: iso(job.progress.at) } } : {}),
    ...(job.cancelRequested ? { cancelRequested: true as const } : {}),
    ...(job.after !== undefined ? { after: job.after, onFailure: job.onFailure ?? "cancel" } : {}),
    ...(job.placement ? { placement: job.placement } : {}),
    ...(job.node !== undefined ? { node: job.node } : {}),
    ...(job.refused
      ? { refused: Object.assign({}, job.refused, { at: iso(job.refused.at) }) }
      : {}),
  };
}

/**
 * Every top-level member a job's resource may have: what `GET /v1/jobs?fields=` chooses among.
 * The `satisfies` and the check below keep it in step with {@link JobResource}.
 */
export const JOB_RESOURCE_FIELDS = [
  "id",
  "handler",
  "status",
  "input",
  "result",
  "error",
  "attempts",
  "priority",
  "tags",
  "runAt",
  "createdAt",
  "startedAt",
  "finishedAt",
  "scheduleId",
  "fireAt",
  "timeout",
  "retries",
  "idempotencyKey",
  "progress",
  "cancelRequested",
  "after",
  "onFailure",
  "placement",
  "node",
  "refused",
] as const satisfies readonly (keyof JobResource)[];

/** A member of {@link JobResource} missing from {@link JOB_RESOURCE_FIELDS} fails to compile here. */
type MissingField = Exclude<keyof JobResource, (typeof JOB_RESOURCE_FIELDS)[number]>;
const everyField: [MissingField] extends [never] ? true : MissingField = true;
void everyField;

/** A job field name `GET /v1/jobs?fields=` takes. */
export type JobResourceField = (typeof JOB_RESOURCE_FIELDS)[number];

/**
 * `jobResource(job)` with only the members named in `fields` (and `id`, always): a listing that
 * shows a few columns need not carry every job's input and result.
 *
 * @example
 * jobFields(job, new Set(["status"])); // { id: "j_…", status: "queued" }
 */
export function jobFields(
  job: JobRecord,
  fields: ReadonlySet<JobResourceField>,
): Partial<JobResource> {
  const whole = jobResource(job);
  const out: Partial<Record<JobResourceField, unknown>> = { id: whole.id };
  for (const field of fields) if (whole[field] !== undefined) out[field] = whole[field];
  return out as Partial<JobResource>;
}

/** A job log entry as the API shows it. */
export function logEntryResource(entry: JobLogEntry): JobLogEntryResource {
  return {
    at: iso(entry.at),
    attempt: entry.attempt,
    level: entry.level,
    message: entry.message,
    ...(entry.fields !== undefined ? { fields: entry.fields } : {}),
  };
}

/**
 * A job as a submit answers it (docs/api.md:
 * `{ id, handler, status, runAt, priority, attempts, createdAt }`).
 */
export function jobSummary(job: JobRecord): JobSummary {
  const createdAt = iso(job.createdAt);
  return {
    id: job.id,
    handler: job.handler,
    status: job.status,
    // A job to run at once runs at its creation time: formatted once.
    runAt: job.runAt === job.createdAt ? createdAt : iso(job.runAt),
    priority: job.priority,
    attempts: job.attempts,
    createdAt,
  };
}

/** A schedule record as the API shows it. */
export function scheduleResource(s: ScheduleRecord): ScheduleResource {
  return {
    id: s.id,
    handler: s.handler,
    schedule: s.schedule,
    tz: s.tz,
    status: s.status,
    input: s.input,
    priority: s.priority,
    timeout: s.timeoutMs,
    retries: s.retries,
    ...(s.maxRuns !== undefined ? { maxRuns: s.maxRuns } : {}),
    ...isoIf("startAt", s.startAt),
    ...isoIf("endAt", s.endAt),
    misfire: s.misfire,
    overlap: s.overlap,
    jitter: s.jitterMs,
    tags: s.tags,
    ...(s.placement ? { placement: s.placement } : {}),
    nextRunAt: s.nextRunAt === null ? null : iso(s.nextRunAt),
    ...isoIf("lastRunAt", s.lastRunAt),
    runs: s.runs,
    createdAt: iso(s.createdAt),
    updatedAt: iso(s.updatedAt),
  };
}

/** A tick's result as the API shows it (the engine's `idle` and `fenced` flags stay internal). */
export function tickResource(result: TickResult): TickResource {
  if (!result.leader) return { leader: false, leaseRemainingMs: result.leaseRemainingMs };
  const { dispatched, recovered, due, tookMs } = result;
  return { leader: true, dispatched, recovered, due, tookMs };
}

/** A page with each item rendered by `render`. */
export function pageResource<T, R>(page: Page<T>, render: (item: T) => R): PageResource<R> {
  return { items: page.items.map(render), ...(page.cursor ? { cursor: page.cursor } : {}) };
}
