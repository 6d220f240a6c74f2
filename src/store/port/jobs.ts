/**
 * @module
 * The jobs' part of the Store port: submit, cancel and list jobs; begin and finish attempts;
 * the failure callback (`markDead`) and the dead-letter list.
 */
import type {
  Admission,
  DegradationLevel,
  DegradationPolicy,
  Denied,
  QuotaCheck,
  QuotaState,
} from "../../core/admission.ts";
import type {
  DeliveryToken,
  JobError,
  JobRecord,
  JobSpec,
  JobStatus,
  NewJob,
  OutboxMessage,
} from "../../core/model.ts";
import type { StoreStats } from "./observability.ts";
import type { Page } from "./page.ts";
import type { RateLimit } from "./rate.ts";
import type { StoreRetention } from "./retention.ts";
import type { SubmitTiming, WebhookSubmit } from "./webhooks.ts";

/** Result of {@link JobStore.submitJob}. */
export interface SubmitResult {
  job: JobRecord;
  /** The outbox message written (absent when replayed). */
  message?: OutboxMessage;
  /** True when the idempotency key was already used: `job` is the first job, nothing was written. */
  replayed: boolean;
  /** With `admission.quota` (not on replay: a replay is not counted). */
  quota?: QuotaState;
  /** With `admission.degradation`: the level after evaluation and the delay it added to `runAt`. */
  degradation?: { level: DegradationLevel; delayedMs: number };
}

/** Result of {@link JobStore.submitJob} when admission control refused it. */
export interface SubmitDenied {
  denied: Denied;
}

/** The shortest `retryAfterMs` of a `limited` answer ({@link BeginRunResult}). */
export const LIMITED_MIN_RETRY_MS = 250;

/**
 * A concurrency limit for {@link JobStore.beginRun}: at most `limit` jobs whose run holds a slot of
 * `key` run at once, across every caller of the store. The store does not interpret `key`; the
 * runner derives it from the handler's `concurrency` and the job's input (`src/engine/concurrency.ts`).
 */
export interface RunLimit {
  /** The slot set's name, e.g. `email.send` or `email.send=7:default:42` (bounded in length). */
  key: string;
  /** A whole number from 1 to 10,000. */
  limit: number;
}

/** Most jobs of one {@link RunLimit} key that may run at once. */
export const MAX_RUN_LIMIT = 10_000;

/**
 * Refuse a {@link RunLimit} a store cannot honour: a limit that is not a whole number from 1 to
 * {@link MAX_RUN_LIMIT}, or an empty key. Both stores call it before they write anything.
 *
 * @throws RangeError naming the value.
 */
export function checkRunLimit(limit: RunLimit): void {
  if (!(Number.isInteger(limit.limit) && limit.limit >= 1 && limit.limit <= MAX_RUN_LIMIT)) {
    throw new RangeError(
      `a run limit must be a whole number from 1 to ${MAX_RUN_LIMIT}, got ${limit.limit}`,
    );
  }
  if (typeof limit.key !== "string" || limit.key === "") {
    throw new RangeError("a run limit needs a non-empty key");
  }
}

/** Result of {@link JobStore.beginRun}. */
export type BeginRunResult =
  /** The caller must run the handler now, as attempt number `attempt` (1-based). */
  | { kind: "run"; attempt: number; job: JobRecord }
  /** The job is in a final state (succeeded, cancelled, dead or skipped): do not run, answer 200. */
  | { kind: "final"; job: JobRecord }
  /**
   * Another attempt holds an unexpired run lease (or, overlap `skip`, another occurrence holds the
   * schedule's run lease while this one already started): answer 409 so the queue retries later.
   */
  | { kind: "busy"; retryAfterMs: number }
  /**
   * The {@link RunLimit} is reached: `limit` other jobs hold a slot of its key under unexpired run
   * leases (or the {@link RateLimit}: `limit` runs of its key began within its period). Not an
   * attempt: nothing written to the job, nothing counted but `totals.limited`.
   * `retryAfterMs`: until the earliest of those leases ends (when a slot is free at the latest),
   * or until a start leaves the rate window, at least {@link LIMITED_MIN_RETRY_MS}.
   */
  | { kind: "limited"; retryAfterMs: number }
  /**
   * An occurrence that never started was marked `skipped`: its schedule was paused or deleted, or
   * (overlap `skip`) a previous occurrence of the schedule still runs.
   */
  | { kind: "skipped"; job: JobRecord }
  /**
   * The job is missing and has no `scheduleId`: a submitted job exists before it is published, so
   * it expired after it was cancelled or finished. Nothing was written: do not run, answer 200.
   */
  | { kind: "missing" }
  /**
   * The delivery's token (see {@link JobStore.beginRun}) was used before: a replay of a captured
   * delivery. Nothing was written: do not run, answer 200.
   */
  | { kind: "replayed" };

/** How an attempt ended. */
export type RunOutcome =
  | { ok: true; result: unknown }
  | {
      ok: false;
      error: JobError;
      /** True when no retry will follow (non-retryable error or attempts exhausted): the job goes `dead`. */
      final: boolean;
    };

/** Result of {@link JobStore.finishRun}. */
export type FinishRunResult =
  | { kind: "ok"; job: JobRecord }
  /**
   * A success recorded, the job not read back: answered only to a caller that asked
   * ({@link FinishRunOptions.recordOnly}).
   */
  | { kind: "recorded" }
  /** The job is not `running` as this attempt (another attempt took over, or it already finished). */
  | { kind: "stale"; job: JobRecord | null };

/** How `finishRun` answers. */
export interface FinishRunOptions {
  /**
   * A success answers `{ kind: "recorded" }` instead of the job as it now is, for a caller that
   * does not read it (the runner reads the job only after a failure): the store then builds and
   * sends no copy of the record. A failure and `stale` answer as without it.
   */
  recordOnly?: boolean | undefined;
}

/** A listing reads one tenant's index: a page holds only that tenant's records. */
export interface ListJobsQuery {
  /** Whose jobs. @default "default" */
  tenant?: string | undefined;
  status?: JobStatus | undefined;
  handler?: string | undefined;
  scheduleId?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/** The dead-letter listing's query. */
export interface DeadQuery {
  /** Whose dead letters. @default "default" */
  tenant?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/** Result of {@link JobStore.cancelJob}. */
export type CancelResult =
  | { kind: "ok"; job: JobRecord }
  /** `running` under its run lease: now `cancelRequested`; it ends `cancelled` (see `cancelJob`). */
  | { kind: "requested"; job: JobRecord }
  /** Finished, or `failed` and waiting for its retry. */
  | { kind: "conflict"; job: JobRecord }
  | { kind: "missing" };

/**
 * Jobs, their attempts and the dead-letter list. Finished records expire after
 * {@link StoreRetention.jobMs}, within the caps of {@link StoreRetention}.
 */
export interface JobStore {
  /**
   * Atomically: if `job.idempotencyKey` is set and known for the tenant, return that job with
   * `replayed: true` and write nothing; else stamp `createdAt = now` and
   * `runAt = timing.runAt ?? now + timing.delayMs`, write the job (status `queued`), index it,
   * remember the key (for `retention.idempotencyMs`, or `timing.idempotencyMs` when longer), and
   * put its message in the outbox
   * (`{ id, dedupId: id, job, notBefore: runAt, recoverAt: runAt + timing.recoverGraceMs }`).
   * The caller publishes {@link SubmitResult.message} afterwards.
   *
   * With `admission`, in this order, all in the same atomic step:
   * 1. idempotency replay (as above): returned at once — nothing evaluated, nothing counted;
   * 2. `admission.degradation`: evaluate the controller (see {@link DegradationPolicy}; its state
   *    change and `degradation.changed` event are kept even if the submit is then refused), then
   *    act on the resulting level: `degraded` → `runAt += degradedDelayMs`; `critical` →
   *    `reject`: {@link SubmitDenied} `{ kind: "overloaded", level: "critical", retryAfterMs }`
   *    (quota not counted), or `delay`: `runAt += criticalDelayMs`. The delay is added after
   *    `runAt` is computed from `timing` (so `notBefore`/`recoverAt` include it);
   * 3. `admission.quota` (see {@link QuotaCheck}): denied → {@link SubmitDenied}
   *    `{ kind: "quota", quota }`; nothing written, nothing counted;
   * 4. the write, plus: `totals.submitted` += 1, `jobs.queued` += 1, a `job.created` event, and the
   *    job in `{p}:pending` with score `runAt`.
   *
   * With `timing.webhook` ({@link WebhookSubmit}), also in the same step: the endpoint's
   * `accepted` (written) or `replayed` (step 1) counter, its history, and `webhook` on
   * `job.created`. A refusal (steps 2–3) counts nothing: the caller counts `limited`.
   */
  submitJob(
    job: NewJob,
    timing: SubmitTiming,
    admission?: Admission,
  ): Promise<SubmitResult | SubmitDenied>;
  /**
   * The job, or `null` when it does not exist. With `tenant`, a job of another tenant answers
   * `null` as well, and no more of it is read than of a missing one (its tenant only, not its
   * input or result): the time of the answer tells another tenant nothing of the job. A job
   * stored without a tenant is the default tenant's.
   */
  getJob(id: string, tenant?: string): Promise<JobRecord | null>;
  /**
   * For each of `ids`, whether that job exists and is `tenant`'s, reading no more of it than its
   * status and tenant (not its input or result): a flow checks every child's `after` before it
   * writes anything. Optional: without it, the engine reads each job with {@link getJob}.
   * One round trip.
   */
  jobsExist?(ids: readonly string[], tenant: string): Promise<boolean[]>;
  /**
   * `queued` → `cancelled` with `finishedAt = now` (and its outbox message removed). Counts
   * `totals.cancelled`, writes `job.cancelled`, leaves `{p}:pending`.
   *
   * `running` under an unexpired run lease → `requested`: the job gets `cancelRequested` (nothing
   * else changes, nothing counted; asking again changes nothing). The attempt's runner sees it
   * (`cancelRequested`, or the answer of a progress or log write) and aborts the handler; its
   * `finishRun` with a failure then records `cancelled` (never `failed` or `dead`, never retried),
   * while a success that came first stands. A `running` job whose run lease ran out (nobody holds
   * it) is cancelled at once, as a queued one is (its run lease and slot released); so is one
   * whose lease runs out after the request, by the next `beginRun` (answered `final`).
   * Anything else (finished, or `failed` waiting for its retry) is a conflict.
   */
  cancelJob(id: string): Promise<CancelResult>;
  listJobs(query: ListJobsQuery): Promise<Page<JobRecord>>;
  /**
   * A delivery arrived for `spec.id`. Creates the job from `spec` if missing and it is an
   * occurrence (has a `scheduleId`; occurrences are created here); a missing job without
   * `scheduleId` expired after it was cancelled or finished → `missing` (only a leftover outbox
   * message of it is removed).
   * Then:
   * final status → `final` (its outbox message removed); `running` with an unexpired run lease →
   * `busy` (nothing written: the running attempt's watch stays);
   * an occurrence that never started (`attempts == 0`, not retried from the dead-letter list)
   * whose schedule is paused or no longer exists → job `skipped` (`finishedAt = now`);
   * overlap `skip` and another job of the same schedule holds the schedule's run lease → job
   * `skipped` (`finishedAt = now`) if it never started (`attempts == 0`), else `busy` (a retry of
   * a started occurrence waits for the lease); else `running`, `attempts + 1`, `startedAt = now`,
   * `finishedAt` cleared (the last `error` is kept), run lease until now + `leaseMs` (and, for
   * overlap `skip`, the schedule's run lease for the same time). A `skipped` job's outbox message
   * is removed. A `run` replaces the job's outbox message by the attempt's **watch**:
   * `{ id, dedupId: "<id>~a<attempt>", job: <the stored job's spec>, notBefore: runAt,
   * recoverAt: leaseEnd + reapAfterMs, attempt }`. If the queue stops delivering (a dead worker,
   * retries spent) and its failure callback never arrives, the tick's recover step finds the watch
   * and re-dispatches the job, or dead-letters it if `attempt > retries` (the reaper, ADR 0010).
   * A store that dispatches to Redis Streams removes the message instead and keeps no watch: the
   * consumer group's pending list redelivers the attempt (docs/adr/0033-no-watch-on-streams.md).
   *
   * Counting (see {@link StoreStats.jobs} for the gauge rule): `run` → `totals.started` += 1, a
   * `job.started` event with `attempt`, the job leaves `{p}:pending`; on the first attempt
   * (`attempts` becomes 1) `max(0, startedAt - max(runAt, createdAt))` is observed in
   * `dispatchLagMs` and fed to the `lagMs` average, with `startedAt` taken as the first `limited`
   * answer's time when a limit held the job before (a handler's own limit is not lag). `skipped` → `totals.skipped` += 1, a `job.skipped` event, leaves
   * `{p}:pending`. `busy` and `missing` count nothing; `final`
   * counts nothing either but drops a leftover `{p}:pending` entry (an occurrence committed again
   * after it finished, e.g. by a re-created schedule), decrementing `queued` if there was one.
   *
   * With `limit` (checked after `final`, `busy` and overlap `skip`, before the run): the slot set
   * of `limit.key` (`{p}:limit:<n>:<key>`, job id → run lease end) first drops members whose lease
   * ended (`<= now`); if the job is not a member and the set holds `limit.limit` members →
   * `limited` (see {@link BeginRunResult}): the job is unchanged (status, attempts, pending entry,
   * no event), its outbox entry's `recoverAt` moves to `now + retryAfterMs + reapAfterMs` (it is
   * alive, only waiting: the reaper leaves it alone until the queue should have come back),
   * `totals.limited` += 1. Otherwise the run takes a slot
   * (member = job id, score = the run lease's end) and the job remembers it, so `finishRun`,
   * `markDead`, `cancelJob` and a `skipped` answer release it (and a later run of the job under
   * another key, or without a limit, leaves the old one). A job without `limit` costs nothing
   * extra; a slot whose run lease ended is free again without anyone releasing it.
   *
   * With `rate` ({@link RateLimit}, checked together with `limit`, after the same checks): the
   * window of `rate.key` (`{p}:rate:<n>:<key>`, `<id>:<attempt>` → the time that run began) first
   * drops starts at or before `now - rate.periodMs`; if it still holds `rate.limit` starts →
   * `limited`, exactly as above, with `retryAfterMs` until enough of them leave the window (the
   * oldest, when it holds exactly `limit`; at least {@link LIMITED_MIN_RETRY_MS}). When both
   * `limit` and `rate` refuse, `retryAfterMs` is the longer wait. A begin that either refuses
   * takes nothing from the other (no slot, no start). A run records its start (score `now`) and
   * the window expires `periodMs` after its newest start. A job without `rate` costs nothing
   * extra.
   */
  beginRun(
    spec: JobSpec,
    leaseMs: number,
    reapAfterMs?: number,
    token?: DeliveryToken,
    limit?: RunLimit,
    rate?: RateLimit,
    node?: string,
  ): Promise<BeginRunResult>;
  /**
   * Record how `attempt` ended, only if the job is `running` as that attempt.
   * Success → `succeeded` with `result` (and no `error`); failure → `failed` with `error`, or `dead`
   * (and listed in the dead-letter list) when `final`. Sets `finishedAt = now`.
   * Releases the run lease (and the schedule's overlap lease).
   * Finished records expire after `retention.jobMs`. The attempt's watch (see {@link beginRun})
   * is removed when the job is final; after a failure that will be retried its `recoverAt` moves
   * to `now + reapAfterMs` (the queue's retry should begin the next attempt before then).
   *
   * Counting (not on `stale`): `finishedAt - startedAt` observed in `handlerDurationMs`; the
   * `failureRate` average fed 0 (success) or 1 (failure, final or not). Success →
   * `totals.succeeded`, `job.succeeded` event. Failure → `totals.failed` += 1; not final → a
   * `job.failed` event (`attempt`, `error`) and the job enters `{p}:pending` with score `now`;
   * final → `totals.dead` += 1 and a `job.dead` event (`attempt`, `error`; no `job.failed`).
   *
   * A failure of a job with `cancelRequested` (see {@link cancelJob}) → `cancelled` with `error`,
   * final whatever `final` says: its watch removed, retained, `totals.cancelled` += 1 and a
   * `job.cancelled` event (no failure counted, nothing fed to `failureRate`).
   */
  finishRun(
    id: string,
    attempt: number,
    outcome: RunOutcome,
    reapAfterMs?: number,
    options?: FinishRunOptions,
  ): Promise<FinishRunResult>;
  /**
   * The queue gave up on a delivery (failure callback): unless already `succeeded` or `cancelled`,
   * mark the job `dead` with `error` and list it in the dead-letter list. Creates it from `spec` if
   * missing and it is an occurrence (has a `scheduleId`); a missing job without `scheduleId`
   * (expired after cancel or finish) is not re-created: `null`, and its outbox message (a
   * leftover watch), if any, is removed. Idempotent.
   *
   * Returned unchanged, nothing written: a `skipped` job (it was deliberately not run), an already
   * `dead` one, one whose `runAt` differs from `spec.runAt` (the callback is for an earlier
   * dispatch: `retryDead` set a new `runAt` since), one `running` with an unexpired run lease
   * (the live attempt may still succeed; its own outcome or lease expiry decides), and, with
   * `expect`, one whose `attempts` differ (the reaper's watch is out of date).
   * Otherwise sets `finishedAt = now`; releases the run lease and the schedule's overlap lease;
   * removes the job's outbox message. Counts `totals.dead`, writes `job.dead` (`attempt` = the
   * job's `attempts`, 0 if it never started; `error`), leaves `{p}:pending`; no average or
   * histogram is fed. A job returned unchanged counts nothing.
   */
  markDead(
    spec: JobSpec,
    error: JobError,
    expect?: { attempts: number },
    token?: DeliveryToken,
  ): Promise<JobRecord | null>;
  /** One tenant's dead-letter list, newest death first. */
  listDead(query: DeadQuery): Promise<Page<JobRecord>>;
  /**
   * `dead` → `queued` again (attempts and last `error` kept, `runAt = now`, `finishedAt` cleared,
   * no longer expiring), removed from the dead-letter list, and
   * a message with `dedupId = <id>~r<n>` put in the outbox, `n` the job's count of such
   * dispatches (1, 2, …; never repeats, unlike `attempts`, which a callback-killed dispatch leaves
   * unchanged): a fresh dedup id, as earlier ones may still be inside the queue's dedup window.
   * `null` if the job is not dead. Counts `totals.retried` and `jobs.queued`, writes `job.retried`,
   * and the job enters `{p}:pending` with score `now`.
   */
  retryDead(
    id: string,
    timing: { recoverGraceMs: number },
  ): Promise<{ job: JobRecord; message: OutboxMessage } | null>;
  /** Remove a dead job from the dead-letter list and delete it. */
  deleteDead(id: string): Promise<boolean>;
}
