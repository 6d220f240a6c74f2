/**
 * @module
 * The records tickwork keeps: jobs, schedules and outbox messages. Pure data, no I/O.
 * Times are epoch milliseconds throughout; the HTTP layer renders them as ISO-8601.
 */
import type { Placement } from "./placement.ts";
import type { TraceContext } from "./trace.ts";

/**
 * Lifecycle of a job (a one-off submit or one occurrence of a schedule). `waiting`: submitted with
 * `after`, not dispatched until its dependencies finish (ADR 0014).
 */
export type JobStatus =
  | "waiting"
  | "queued"
  | "running"
  | "succeeded"
  | "failed"
  | "dead"
  | "cancelled"
  | "skipped";

/** Statuses after which a job never runs again unless retried from the dead-letter list. */
export const FINAL_JOB_STATUSES: readonly JobStatus[] = [
  "succeeded",
  "dead",
  "cancelled",
  "skipped",
];

/** The tenant of records written without one (auth off, or plain API keys). */
export const DEFAULT_TENANT = "default";

/** An error as stored on a job. */
export interface JobError {
  /** Error class name, e.g. `"TypeError"`, `"NonRetryableError"`, `"TimeoutError"`. */
  name: string;
  message: string;
}

/** The immutable part of a job, fixed when it is created. */
export interface JobSpec {
  id: string;
  /** Tenant that owns the job; `"default"` when auth is off. */
  tenant: string;
  handler: string;
  input: unknown;
  /** 1–10; 1–3 low, 4–7 normal, 8–10 high. @default 5 */
  priority: number;
  /** Handler timeout in ms. */
  timeoutMs: number;
  /** Retries after the first attempt (total attempts = 1 + retries). */
  retries: number;
  tags: string[];
  /** When the job may first run. */
  runAt: number;
  createdAt: number;
  /** Set when the job is an occurrence of a schedule. */
  scheduleId?: string;
  /** The occurrence's nominal fire time (before jitter). */
  fireAt?: number;
  /** Overlap policy inherited from the schedule. */
  overlap?: Overlap;
  idempotencyKey?: string;
  /** Ids of jobs (same tenant) this job waits for: it runs once they all succeeded (ADR 0014). */
  after?: string[];
  /** What a dependency that ends dead, cancelled or skipped does to it. @default "cancel" */
  onFailure?: OnFailure;
  /** Where it may run (docs/adr/0017-placement.md); absent: on any node of the default group. */
  placement?: Placement;
  /**
   * W3C trace context of its submit (or, for an occurrence, of the tick that dispatched it),
   * carried on every delivery: its run span joins that trace (docs/adr/0019-opentelemetry-traces.md).
   */
  trace?: TraceContext;
}

/** What a failed dependency does to a waiting job: cancel it (and its dependents), or run it anyway. */
export type OnFailure = "cancel" | "run";

/** A job as stored: its spec plus mutable state. */
export interface JobRecord extends JobSpec {
  status: JobStatus;
  /** Attempts begun so far. */
  attempts: number;
  /**
   * Attempts made before the job was last re-dispatched from the dead-letter list: its retry
   * budget (`retries`) counts from here. Absent until then.
   */
  attemptBase?: number;
  startedAt?: number;
  finishedAt?: number;
  result?: unknown;
  error?: JobError;
  /** The last value a handler reported with `ctx.progress()`, and when (absent: none yet). */
  progress?: JobProgress;
  /** Set once a cancel was asked for while the job ran; it ends `cancelled` (unless it succeeded first). */
  cancelRequested?: true;
  /** The node that began its latest attempt (its `instanceId`), when the runner named one. */
  node?: string;
  /** The last time a node refused to run it for its placement: which node, why, when. */
  refused?: PlacementRefusalRecord;
}

/** A node's refusal of a job for its placement (docs/adr/0017-placement.md). */
export interface PlacementRefusalRecord {
  node: string;
  reason: string;
  at: number;
}

/** A job's progress: the last value its handler reported (JSON, at most 4 KiB) and when. */
export interface JobProgress {
  value: unknown;
  at: number;
}

/** Level of a job log entry. */
export type JobLogLevel = "debug" | "info" | "warn" | "error";

/** One entry of a job's log (`ctx.log()`), as stored: at most 2 KiB as JSON. */
export interface JobLogEntry {
  /** When the store took it (its clock), ms. */
  at: number;
  /** The attempt that wrote it. */
  attempt: number;
  level: JobLogLevel;
  message: string;
  fields?: Record<string, unknown>;
}

export type Misfire = "skip" | "once" | "all";
export type Overlap = "allow" | "skip";
export type ScheduleStatus = "active" | "paused" | "completed";

/** What a user defines for a schedule (normalised: durations in ms, times in epoch ms). */
export interface ScheduleDef {
  id: string;
  tenant: string;
  handler: string;
  /** Cron expression (5 or 6 fields, `@hourly` …) or interval (`"30s"`, `"5m"`). */
  schedule: string;
  /** IANA time zone for cron expressions. @default "UTC" */
  tz: string;
  input: unknown;
  priority: number;
  timeoutMs: number;
  retries: number;
  maxRuns?: number;
  startAt?: number;
  endAt?: number;
  /** @default "once" */
  misfire: Misfire;
  /** @default "allow" */
  overlap: Overlap;
  /** Upper bound of the per-occurrence delay. @default 0 */
  jitterMs: number;
  tags: string[];
  /** Where its occurrences may run (docs/adr/0017-placement.md). */
  placement?: Placement;
}

/** A schedule as stored. */
export interface ScheduleRecord extends ScheduleDef {
  status: ScheduleStatus;
  /**
   * Next nominal fire time still to be dispatched; `null` once completed (or paused with nothing
   * left to fire).
   */
  nextRunAt: number | null;
  /** Nominal fire time of the last dispatched occurrence. */
  lastRunAt?: number;
  /** Occurrences dispatched so far (counts towards `maxRuns`). */
  runs: number;
  /** Bumped by every change; commits and updates compare it (optimistic concurrency). */
  rev: number;
  createdAt: number;
  updatedAt: number;
}

/**
 * A message waiting in the outbox until the queue has accepted it. The outbox holds at most one
 * message per job: `id` is the job id (`<scheduleId>@<fireAtMs>` for occurrences).
 */
export interface OutboxMessage {
  id: string;
  /** The queue's deduplication id: the job id, `<jobId>~r<n>` when re-dispatched from the
   * dead-letter list, `<jobId>~a<n>` when re-dispatched after attempt `n` was abandoned. */
  dedupId: string;
  /** The job this delivery runs: everything the worker needs, even if the job record is gone. */
  job: JobSpec;
  /** Deliver no earlier than this (ms). */
  notBefore: number;
  /** If still in the outbox at this time, the tick's recover step re-publishes it. */
  recoverAt: number;
  /**
   * Set on an attempt's watch (written by the store when attempt `n` begins; dedupId
   * `<jobId>~a<n>`): the tick re-dispatches the job from it if nothing happened by `recoverAt`
   * (or dead-letters it when `n > job.retries`), and never acks it — only the job's own progress
   * removes or replaces it.
   */
  attempt?: number;
  /** How many times the tick has recovered this watch (re-dispatched it) without progress. */
  reaps?: number;
}

/**
 * What identifies one signed delivery: its signature's id (`jti`) and when that signature stops
 * being valid (ms). A worker that remembers `id` until `expiresAt` tells a replay of a captured
 * delivery from a new one.
 */
export interface DeliveryToken {
  id: string;
  expiresAt: number;
}

/** A job as the broker hands it to the store: the store stamps `createdAt` and `runAt` with its clock. */
export type NewJob = Omit<JobSpec, "createdAt" | "runAt">;

/**
 * The id a schedule is stored under: the tenant's own id, qualified by the tenant (`acme:report`)
 * so that every tenant has a namespace of its own — two tenants may both have a schedule
 * `report`, and neither can learn the other's ids. The default tenant's ids are unqualified.
 * Tenant ids contain no `:` and schedule ids none, so the split is unambiguous.
 *
 * @example
 * scheduleStoreId("acme", "report");    // "acme:report"
 * scheduleStoreId("default", "report"); // "report"
 */
export function scheduleStoreId(tenant: string, id: string): string {
  return tenant === DEFAULT_TENANT ? id : `${tenant}:${id}`;
}

/**
 * The tenant's own id of a schedule stored under `storeId` (see {@link scheduleStoreId}).
 *
 * @example
 * scheduleUserId("acme", "acme:report"); // "report"
 */
export function scheduleUserId(tenant: string, storeId: string): string {
  const prefix = `${tenant}:`;
  return tenant !== DEFAULT_TENANT && storeId.startsWith(prefix)
    ? storeId.slice(prefix.length)
    : storeId;
}

/** Occurrence job id: deterministic, so any number of racing dispatches make one job. */
export function occurrenceId(scheduleId: string, fireAt: number): string {
  return `${scheduleId}@${fireAt}`;
}
