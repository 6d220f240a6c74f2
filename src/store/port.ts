/**
 * @module
 * The Store port. Every state change is ONE atomic operation (one Lua script on Redis,
 * one synchronous step in memory). The engine composes these; it never builds keys.
 *
 * Time: operations that judge time use the store's clock (Redis `TIME`, the clock of record;
 * the memory store's injected clock). Callers never pass "now" — except where noted.
 */
import type {
  Admission,
  DegradationLevel,
  DegradationPolicy,
  DegradationState,
  Denied,
  QuotaState,
} from "../core/admission.ts";
import type {
  DeliveryToken,
  JobError,
  JobRecord,
  JobSpec,
  JobStatus,
  NewJob,
  OutboxMessage,
  ScheduleRecord,
  ScheduleStatus,
} from "../core/model.ts";

/** Result of {@link Store.beginTick}. */
export type BeginTickResult =
  /** Nothing due and nothing to recover; the lease was not touched. */
  | { kind: "idle"; now: number; leaseRemainingMs: number }
  /** There is work but another tick holds the lease. */
  | { kind: "busy"; now: number; leaseRemainingMs: number }
  /** This tick took the lease with a fresh fencing `token`. */
  | {
      kind: "leader";
      now: number;
      token: number;
      /**
       * The degradation level after this tick's evaluation (`opts.degradation`), else the stored
       * one. At `critical` the ticker holds schedules with priority < 8 (see {@link ScheduleCommit.dueAt}).
       */
      degradation: DegradationLevel;
      /** Set when `opts.holder` differs from the previous leader tick's holder (a `leader.changed` event was written). */
      leaderChanged?: { previous: string | null };
      /** Active schedules with `nextRunAt <= now + horizonMs`, earliest first, at most `limit`. */
      due: ScheduleRecord[];
      /** True when more schedules are due than were returned. */
      more: boolean;
      /** Outbox messages whose `recoverAt <= now` (at most `recoverLimit`, oldest `recoverAt`
       * first); their `recoverAt` was pushed to `now + recoverGraceMs` (an attempt's watch, a
       * message with `attempt`: `now + reapAfterMs`, and its `reaps` count + 1) so a concurrent
       * or later tick does not re-take them at once. They are returned as pushed. */
      recover: OutboxMessage[];
    };

/**
 * How long a started job may go without a delivery before the tick re-dispatches it (its run lease
 * expired, or its attempt failed and the queue's retry never came): one hour, longer than
 * QStash's default retry backoff (12 s, 2.5 min, 30 min) and its 10-minute dedup window.
 */
export const DEFAULT_REAP_AFTER_MS = 3_600_000;

/** Options of {@link Store.beginTick}. */
export interface BeginTickOptions {
  /** Lease time to live. */
  leaseMs: number;
  /** Look-ahead: schedules due within this many ms are returned now. */
  horizonMs: number;
  /** Max schedules returned. */
  limit: number;
  /** Max outbox messages returned for recovery. */
  recoverLimit: number;
  /** How far recovered messages' `recoverAt` is pushed. */
  recoverGraceMs: number;
  /** How far recovered watches' (messages with `attempt`) `recoverAt` is pushed.
   * @default {@link DEFAULT_REAP_AFTER_MS} */
  reapAfterMs?: number | undefined;
  /**
   * Who ticks (an instance id). Leader path only: if it differs from the stored holder, count a
   * leader change (a flap if within {@link FLAP_WINDOW_MS} of the previous change), write a
   * `leader.changed` event and set `acquiredAt = now`. Not read or written by an idle tick.
   * The first holder ever is a change too (`previous: null`; never a flap: no previous change).
   * Absent: the stored holder is left alone and nothing is counted.
   *
   * Every leader path (with or without `holder`) also counts `totals.ticks` += 1 and
   * `totals.recovered` += the number of messages returned in `recover`. Idle and busy ticks count
   * nothing and evaluate nothing.
   */
  holder?: string;
  /**
   * Evaluate the degradation controller (leader path only; an idle tick stays 5 commands), after
   * taking the lease and before reading the due schedules.
   */
  degradation?: DegradationPolicy | undefined;
}

/** One schedule's change in a tick commit, planned in TS from the record read by the tick. */
export interface ScheduleCommit {
  id: string;
  /** The `rev` the plan was made from; a different stored rev means the schedule changed: skip it. */
  rev: number;
  /** New nominal next run, or `null` when the schedule is completed. */
  nextRunAt: number | null;
  /** Occurrences dispatched by this commit (added to `runs`). */
  runsAdded: number;
  /** Nominal fire time of the latest dispatched occurrence, if any. */
  lastRunAt?: number;
  /** Occurrence messages to put in the outbox (one per dispatched occurrence). */
  messages: OutboxMessage[];
  /**
   * Hold the schedule (degradation `critical`, low priority): its due-index score becomes `dueAt`
   * instead of `nextRunAt` (which is stored unchanged, so misfire rules apply when it is due
   * again). Given with `runsAdded: 0` and no messages. Any later `putSchedule` resets the score.
   * The hold is an applied commit like any other (rev bumped, listed in `applied`); it writes no
   * event and counts nothing. Due-ness (`beginTick`'s idle check, `due`, `nextDue`) is judged by
   * the due-index score, so a held schedule is not due (and does not wake a tick) before `dueAt`.
   */
  dueAt?: number;
}

/** Result of {@link Store.commitTick}. */
export type CommitResult =
  | {
      kind: "ok";
      /** Ids of schedules whose commit was applied (their messages are in the outbox). */
      applied: string[];
      /** Ids skipped because the schedule was deleted, paused or its rev changed. */
      skipped: string[];
    }
  /** The lease token no longer matches: nothing was written (I3 in docs/architecture.md). */
  | { kind: "fenced" };

/**
 * An outbox acknowledgement: applies to the message `id` only if it still carries `dedupId`
 * (compare-and-set), so a late ack of an earlier dispatch cannot touch a newer message of the
 * same job (e.g. one put there by `retryDead`, or an attempt's watch put there by `beginRun`).
 */
export interface OutboxAck {
  id: string;
  dedupId: string;
}

/** Options of {@link Store.nextDue}. */
export interface NextDueOptions {
  /** Lease time to live, renewed. */
  leaseMs: number;
  /** Look-ahead, as in {@link BeginTickOptions.horizonMs}. */
  horizonMs: number;
  /** Max schedules returned. */
  limit: number;
  /** Published messages to ack (see {@link Store.ackOutbox}). */
  ackIds: OutboxAck[];
  /** @default {@link DEFAULT_REAP_AFTER_MS} */
  reapAfterMs?: number;
}

/** Result of {@link Store.nextDue}. */
export type NextDueResult =
  | { kind: "ok"; now: number; due: ScheduleRecord[]; more: boolean }
  | { kind: "fenced" };

/** Result of {@link Store.submitJob}. */
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

/** Result of {@link Store.submitJob} when admission control refused it. */
export interface SubmitDenied {
  denied: Denied;
}

/** Result of {@link Store.beginRun}. */
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
  /** Overlap `skip`: a previous occurrence of the schedule still runs; this job was marked `skipped`. */
  | { kind: "skipped"; job: JobRecord }
  /**
   * The job is missing and has no `scheduleId`: a submitted job exists before it is published, so
   * it expired after it was cancelled or finished. Nothing was written: do not run, answer 200.
   */
  | { kind: "missing" }
  /**
   * The delivery's token (see {@link Store.beginRun}) was used before: a replay of a captured
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

/** Result of {@link Store.finishRun}. */
export type FinishRunResult =
  | { kind: "ok"; job: JobRecord }
  /** The job is not `running` as this attempt (another attempt took over, or it already finished). */
  | { kind: "stale"; job: JobRecord | null };

/**
 * A page of a listing. `cursor` is opaque; absent on the last page.
 *
 * Listings are newest first by their index score (jobs: `createdAt`; schedules: `createdAt`;
 * dead-letter list: time of death; runs: `fireAt`, else `runAt`), ties by id descending. The cursor names the
 * last item returned, so writes between pages neither repeat nor skip items of the listing.
 * A page may hold fewer than `limit` items (even none) and still carry a cursor when a store bounds
 * the work of one call (the Redis store examines at most 1,000 index entries per call); only a
 * missing cursor means the end.
 */
export interface Page<T> {
  items: T[];
  cursor?: string;
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

export interface ListSchedulesQuery {
  /** Whose schedules. @default "default" */
  tenant?: string | undefined;
  status?: ScheduleStatus | undefined;
  handler?: string | undefined;
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

/** Result of {@link Store.putSchedule}. */
export type PutScheduleResult =
  | { kind: "ok"; created: boolean; schedule: ScheduleRecord; quota?: QuotaState }
  /** `expectRev` was given and the stored rev differs (or the schedule is missing). */
  | { kind: "conflict"; schedule: ScheduleRecord | null }
  /** `admission.quota` refused it: nothing written, nothing counted. */
  | { kind: "denied"; denied: Denied };

/** Result of {@link Store.cancelJob}. */
export type CancelResult =
  | { kind: "ok"; job: JobRecord }
  /** Not `queued` any more (running or finished). */
  | { kind: "conflict"; job: JobRecord }
  | { kind: "missing" };

/**
 * Retention and expiry settings the store applies inside its operations. A job's retention starts
 * when it reaches a final status (`succeeded`, `dead`, `cancelled`, `skipped`); `queued`, `running`
 * and `failed` jobs do not expire. An expired dead job leaves the dead-letter list with it.
 */
export interface StoreRetention {
  /** How long a finished job record is kept. @default 7 days */
  jobMs: number;
  /** How long an idempotency key maps to its job. @default 24 h */
  idempotencyMs: number;
  /**
   * At most this many finished jobs are kept, deployment-wide: past it the oldest finished ones
   * are dropped early (BullMQ's `removeOnComplete` by count). `0` or `Infinity`: no cap. A dropped
   * job's idempotency key no longer replays it. @default 50_000 (≈ 75 MB of Redis at 1.5 KB each)
   */
  maxFinishedJobs: number;
  /**
   * At most this many finished runs are kept per schedule (its runs list and the job records):
   * a `"1s"` schedule would otherwise keep 86,400 a day. `0` or `Infinity`: no cap. @default 100
   */
  maxRunsPerSchedule: number;
}

/**
 * Retention both stores apply unless told otherwise: finished jobs 7 days but at most 50,000 of
 * them, and the last 100 runs of each schedule; idempotency keys 24 h. Sized for a small Redis
 * (a 256 MB Upstash database): finished jobs take at most about 75 MB whatever the daily volume.
 */
export const DEFAULT_RETENTION: StoreRetention = {
  jobMs: 7 * 24 * 60 * 60 * 1000,
  idempotencyMs: 24 * 60 * 60 * 1000,
  maxFinishedJobs: 50_000,
  maxRunsPerSchedule: 100,
};

/** The lease `beginTick` takes (docs/architecture.md, "Keys": `{tw}:lease:tick`). */
export const TICK_LEASE = "tick";

// ── admission (quotas, degradation): domain types, in core ──────────────────

export type {
  Admission,
  DegradationLevel,
  DegradationPolicy,
  DegradationState,
  Denied,
  QuotaCheck,
  QuotaState,
  QuotaWindow,
  Thresholds,
} from "../core/admission.ts";

// ── observability ────────────────────────────────────────────────────────────

/** Upper bounds (ms) of every histogram's buckets; a last `+Inf` bucket follows. */
export const HISTOGRAM_BOUNDS_MS: readonly number[] = [
  5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000,
];

/** A histogram: `counts[i]` observations `<= bounds[i]` and `> bounds[i-1]` (NOT cumulative);
 * `counts[bounds.length]` the ones above the last bound. `sum` adds the observed values (ms),
 * `count` the observations. All start at 0. */
export interface Histogram {
  bounds: readonly number[];
  counts: number[];
  sum: number;
  count: number;
}

/** Everything the stores count, for `/metrics` and `/v1/stats`. */
export interface StoreStats {
  now: number;
  /**
   * Gauges of jobs not yet finished. `queued`: submitted, re-queued from the dead-letter list, or
   * an occurrence committed by a tick, not yet started; `running`; `failed`: waiting for a retry.
   * An occurrence counts as queued from its commit (its record is created at delivery).
   * Counters kept by the operations that change a status: leaving `queued` (start, skip, cancel,
   * dead) decrements `queued` only if the job was in `{p}:pending` (an occurrence never committed
   * was never counted); leaving `running`/`failed` decrements those; never below 0.
   */
  jobs: { queued: number; running: number; failed: number };
  /** Monotonic counters since the store was created. */
  totals: {
    submitted: number;
    /** Occurrences committed by ticks. */
    dispatched: number;
    /** Outbox messages handed back by `beginTick` for re-publishing. */
    recovered: number;
    /** Attempts begun. */
    started: number;
    succeeded: number;
    /** Attempts that failed (retryable or not). */
    failed: number;
    dead: number;
    cancelled: number;
    skipped: number;
    /** Dead jobs re-queued. */
    retried: number;
    /** Ticks that took the lease (idle ticks are not counted: they write nothing). */
    ticks: number;
  };
  /** Outbox entries: accepted and not yet acknowledged by the queue, plus the watches of started
   * attempts (one per `running` or `failed` job; see {@link Store.beginRun}). */
  outbox: number;
  /**
   * Due backlog: jobs `queued` with `runAt <= now` (occurrences from their commit) plus jobs
   * `failed` (waiting for the queue's retry) — kept as a sorted set `{p}:pending` (job id → runAt,
   * or the failure time for failed jobs), written by the same scripts that change a job's status;
   * this is `ZCOUNT pending -inf now`.
   */
  backlog: number;
  /** First attempt's `startedAt - runAt`. */
  dispatchLagMs: Histogram;
  /** `finishedAt - startedAt` of every finished attempt. */
  handlerDurationMs: Histogram;
  /** As reported by `endTick`. */
  tickDurationMs: Histogram;
  /** `beginTick` round trip of leader ticks, as reported by `endTick`. */
  leaseAcquisitionMs: Histogram;
  /**
   * Moving averages (α = 0.1) feeding the degradation controller: start at 0; each observation
   * `x` sets `avg = avg + 0.1 * (x - avg)`. `lagMs` is fed with every `dispatchLagMs`
   * observation, `failureRate` by `finishRun` (1 failed attempt, 0 success).
   */
  averages: { lagMs: number; failureRate: number };
  leader: {
    /** Holder of the last leader tick (`BeginTickOptions.holder`), null if never. */
    holder: string | null;
    /** Whether the tick lease is held now, and for how much longer. */
    active: boolean;
    leaseRemainingMs: number;
    /** Times a leader tick's holder differed from the previous one (the first holder included). */
    changes: number;
    /** Changes less than `FLAP_WINDOW_MS` after the previous change. */
    flaps: number;
    /** When the current holder first took the lease (0 = never). */
    acquiredAt: number;
  };
  degradation: DegradationState;
}

/** A leader change within this long of the previous one counts as a flap. */
export const FLAP_WINDOW_MS = 5 * 60_000;

export type EventType =
  | "job.created"
  | "job.dispatched"
  | "job.started"
  | "job.succeeded"
  | "job.failed"
  | "job.retried"
  | "job.dead"
  | "job.cancelled"
  | "job.skipped"
  | "leader.changed"
  | "degradation.changed";

/**
 * A lifecycle event, written by the store inside the operation it records (capped stream).
 * `id` is `<ms>-<seq>` (a Redis stream id): strictly increasing, usable as `after`; ids compare
 * by `ms`, then `seq`, as numbers. `at` is the store's `now` of the operation.
 *
 * Which operation writes which event: `job.created` submitJob (not a replay); `job.dispatched`
 * commitTick, per message of an applied commit; `job.started` beginRun `run`; `job.skipped`
 * beginRun `skipped`; `job.succeeded` finishRun; `job.failed` finishRun, failure not final;
 * `job.dead` finishRun final failure or markDead; `job.cancelled` cancelJob; `job.retried`
 * retryDead; `leader.changed` beginTick (leader, new holder); `degradation.changed` any
 * evaluation that changes the level (submitJob, beginTick, stats).
 * Job events carry `jobId`, `handler`, `tenant` and, for occurrences, `scheduleId`; the other
 * fields only where noted below. Fields that do not apply are absent (never null, except
 * `previous`).
 *
 * The stream keeps the newest `eventsMaxLen` events (a store option: default 10_000, exact trim;
 * `0` writes no events at all).
 */
export interface TickEvent {
  id: string;
  type: EventType;
  at: number;
  jobId?: string;
  scheduleId?: string;
  handler?: string;
  tenant?: string;
  /** job.started: the attempt number; job.failed/job.dead: the attempt that ended. */
  attempt?: number;
  error?: { name: string; message: string };
  /** leader.changed: new and previous holder. */
  holder?: string;
  previous?: string | null;
  /** degradation.changed: the levels. */
  from?: DegradationLevel;
  to?: DegradationLevel;
}

export interface EventsQuery {
  /**
   * Only events with id greater than this: an event id, `<ms>-<seq>` (anything else is a
   * `ValidationError`, 400).
   */
  after?: string | undefined;
  /** Absent or empty: every type. */
  types?: readonly EventType[] | undefined;
  /** Oldest first, at most this many (1–1,000). */
  limit: number;
}

/**
 * Oldest first; `last` is the id of the last event examined (pass it as `after` to continue).
 * A call examines the events after `after`, oldest first, until it holds `limit` matching ones
 * or has examined 1,000 events; `last` is then the id of the last one examined (the last match
 * when it stopped at `limit`), absent when there was nothing after `after`. A page may hold fewer
 * than `limit` events while more match later: read on with `after: last` until `last` is absent.
 */
export interface EventsPage {
  events: TickEvent[];
  last?: string;
}

/**
 * The persistence port. Implementations: `RedisStore` (Lua, one script per operation)
 * and `MemoryStore` (embedded). Both pass `test/contract/store.contract.ts`.
 */
export interface Store {
  /** The store's clock (Redis `TIME`). One round trip; used by the broker to stamp records. */
  now(): Promise<number>;

  // ── lease ────────────────────────────────────────────────────────────────
  /** Take the named lease if free: a fresh fencing token from a monotonically increasing sequence. */
  acquireLease(
    name: string,
    ttlMs: number,
  ): Promise<{ acquired: true; token: number } | { acquired: false; remainingMs: number }>;
  /** Extend the lease if `token` still holds it. */
  renewLease(name: string, token: number, ttlMs: number): Promise<boolean>;
  /** Release the lease if `token` still holds it (compare-and-delete). */
  releaseLease(name: string, token: number): Promise<boolean>;

  // ── tick ─────────────────────────────────────────────────────────────────
  /**
   * First step of a tick, one round trip: read the clock; if no active schedule is due within
   * `horizonMs` and no outbox message is due for recovery, answer `idle` WITHOUT taking the lease
   * (an idle tick writes nothing). Otherwise take the tick lease (or answer `busy`) and return the
   * first chunk of due schedules plus the messages to recover.
   *
   * The tick lease is the lease named `"tick"` (the lease operations see it); only `leader` draws
   * a token from the sequence.
   */
  beginTick(opts: BeginTickOptions): Promise<BeginTickResult>;
  /**
   * Next chunk, fenced: ack `ackIds` (published since; see {@link ackOutbox}), renew the lease,
   * and return due schedules as in `beginTick`. `fenced` (and nothing acked) if the token lost
   * the lease.
   */
  nextDue(token: number, opts: NextDueOptions): Promise<NextDueResult>;
  /**
   * Fenced commit: if `token` still holds the tick lease, apply each schedule commit whose stored
   * `rev` equals `commit.rev` and whose status is `active` (set `nextRunAt` and its due score or
   * complete it, add `runsAdded`, set `lastRunAt`, bump `rev`) and write its messages to the outbox.
   * `updatedAt` is left alone (it tracks changes of the definition); `applied` and `skipped` list
   * ids in commit order.
   *
   * Per message of an applied commit: `totals.dispatched` += 1, a `job.dispatched` event (the
   * occurrence's `jobId`, `scheduleId`, `handler`, `tenant`), and the occurrence enters
   * `{p}:pending` with score `message.job.runAt` (`jobs.queued` += 1 if it was not there yet).
   * Skipped commits and holds ({@link ScheduleCommit.dueAt}) write none of these.
   */
  commitTick(token: number, commits: ScheduleCommit[]): Promise<CommitResult>;
  /**
   * The queue accepted these published messages. Each one that still carries the acked `dedupId`
   * (compare-and-set, see {@link OutboxAck}) becomes its job's attempt-0 **watch**:
   * `dedupId = "<id>~a0"`, `attempt: 0`, `recoverAt = now + reapAfterMs` — no longer re-published
   * every `recoverGraceMs`, but re-dispatched by the reaper if no delivery ever begins the job
   * (the queue gave up and its failure callback was lost; see {@link beginRun}). Unfenced:
   * harmless to repeat.
   */
  ackOutbox(acks: OutboxAck[], reapAfterMs?: number): Promise<void>;
  /**
   * Last step of a tick: ack `ackIds` (as {@link ackOutbox}, even if `token` lost the lease) and
   * release the lease if `token` holds it. `report` (measured by the ticker) goes into the
   * `tickDurationMs` and `leaseAcquisitionMs` histograms, even if `token` lost the lease
   * (`totals.ticks` is counted by `beginTick`'s leader path, not here).
   */
  endTick(
    token: number,
    ackIds: OutboxAck[],
    report?: { tickMs: number; acquireMs: number },
    reapAfterMs?: number,
  ): Promise<void>;

  // ── jobs ─────────────────────────────────────────────────────────────────
  /**
   * Atomically: if `job.idempotencyKey` is set and known for the tenant, return that job with
   * `replayed: true` and write nothing; else stamp `createdAt = now` and
   * `runAt = timing.runAt ?? now + timing.delayMs`, write the job (status `queued`), index it,
   * remember the key (for `retention.idempotencyMs`), and put its message in the outbox
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
   */
  submitJob(
    job: NewJob,
    timing: { runAt?: number; delayMs: number; recoverGraceMs: number },
    admission?: Admission,
  ): Promise<SubmitResult | SubmitDenied>;
  getJob(id: string): Promise<JobRecord | null>;
  /**
   * `queued` → `cancelled` with `finishedAt = now` (and its outbox message removed); anything else
   * is a conflict. Counts `totals.cancelled`, writes `job.cancelled`, leaves `{p}:pending`.
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
   *
   * Counting (see {@link StoreStats.jobs} for the gauge rule): `run` → `totals.started` += 1, a
   * `job.started` event with `attempt`, the job leaves `{p}:pending`; on the first attempt
   * (`attempts` becomes 1) `max(0, startedAt - runAt)` is observed in `dispatchLagMs` and fed to
   * the `lagMs` average. `skipped` → `totals.skipped` += 1, a `job.skipped` event, leaves
   * `{p}:pending`. `busy` and `missing` count nothing; `final`
   * counts nothing either but drops a leftover `{p}:pending` entry (an occurrence committed again
   * after it finished, e.g. by a re-created schedule), decrementing `queued` if there was one.
   */
  beginRun(
    spec: JobSpec,
    leaseMs: number,
    reapAfterMs?: number,
    token?: DeliveryToken,
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
   */
  finishRun(
    id: string,
    attempt: number,
    outcome: RunOutcome,
    reapAfterMs?: number,
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

  // ── schedules ────────────────────────────────────────────────────────────
  /**
   * Write a schedule record (computed in TS: status, nextRunAt, runs). Without `expectRev`:
   * create, or replace keeping `runs`, `lastRunAt` and `createdAt` of the stored one.
   * With `expectRev`: write only if the stored rev equals it (else `conflict`), as given (the caller
   * read that revision, so its `runs`, `lastRunAt` and `createdAt` are current). The stored `rev`
   * becomes previous + 1; on create it is drawn from a store-wide sequence that `deleteSchedule`
   * raises to the deleted rev, so it is above every rev the id ever had (a stale tick plan made
   * before a delete can never commit onto the re-created schedule). The due index holds it iff `status` is `active` and
   * `nextRunAt` is not null (score `nextRunAt`: a write ends a hold, see {@link ScheduleCommit.dueAt}).
   *
   * `admission.quota`: judged after `expectRev` (a conflict counts nothing); denied → `denied`,
   * nothing written, nothing counted; else counted with the write and returned as `quota`.
   * A schedule write writes no event.
   */
  putSchedule(
    schedule: ScheduleRecord,
    expectRev?: number,
    admission?: Pick<Admission, "quota">,
  ): Promise<PutScheduleResult>;
  getSchedule(id: string): Promise<ScheduleRecord | null>;
  listSchedules(query: ListSchedulesQuery): Promise<Page<ScheduleRecord>>;
  /** Delete a schedule (raising the rev sequence to its rev, see {@link Store.putSchedule}). */
  deleteSchedule(id: string): Promise<boolean>;
  /** Jobs fired by a schedule (every job with that `scheduleId`), newest fire time first. */
  listRuns(
    scheduleId: string,
    query: { limit: number; cursor?: string | undefined },
  ): Promise<Page<JobRecord>>;

  // ── observability ──────────────────────────────────────────────────────
  /**
   * Every counter, gauge and histogram, the leader and the degradation state, in one round trip.
   * With `degradation`, evaluates the controller first (may change the level).
   */
  stats(degradation?: DegradationPolicy): Promise<StoreStats>;
  /** Events after `after`, oldest first, filtered by type. One round trip. */
  events(query: EventsQuery): Promise<EventsPage>;

  /** Release connections / timers. */
  close?(): Promise<void>;
}
