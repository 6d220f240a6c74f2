/**
 * @module
 * `MemoryStore`: the embedded Store, for local development, tests and single-process use.
 * Same semantics as the Redis store (both pass `test/contract/store.contract.ts`).
 *
 * Atomicity: every operation's body is synchronous (no `await` inside), so it runs as one step
 * of the event loop, as a Lua script runs as one step of Redis. Records are deep-copied in and
 * out, so a caller can never reach the stored state. Time-to-live values (leases, idempotency
 * keys, finished-job retention, run leases, quota counters) are judged lazily against the
 * injected clock. Counters, histograms, the degradation state and the capped event log live in
 * the same object and change inside the operations they record, as they do in the Redis scripts.
 */

import { ValidationError } from "../../core/errors.ts";
import type {
  DeliveryToken,
  JobError,
  JobRecord,
  JobSpec,
  NewJob,
  OutboxMessage,
  ScheduleRecord,
} from "../../core/model.ts";
import { DEFAULT_TENANT, FINAL_JOB_STATUSES } from "../../core/model.ts";
import type {
  Admission,
  BeginRunResult,
  BeginTickOptions,
  BeginTickResult,
  CancelResult,
  CommitResult,
  DeadQuery,
  DegradationLevel,
  DegradationPolicy,
  DegradationState,
  EventsPage,
  EventsQuery,
  FinishRunResult,
  Histogram,
  ListJobsQuery,
  ListSchedulesQuery,
  NextDueOptions,
  NextDueResult,
  OutboxAck,
  Page,
  PutScheduleResult,
  QuotaCheck,
  RunOutcome,
  ScheduleCommit,
  Store,
  StoreRetention,
  StoreStats,
  SubmitDenied,
  SubmitResult,
  TickEvent,
} from "../port.ts";
import { DEFAULT_REAP_AFTER_MS, DEFAULT_RETENTION, FLAP_WINDOW_MS, TICK_LEASE } from "../port.ts";
import {
  checkQuota,
  emptyHistogram,
  evaluateDegradation,
  initialDegradation,
  movingAverage,
  observe,
  type QuotaCounters,
  type QuotaVerdict,
} from "./admission.ts";
import { paginate, type Scored } from "./cursor.ts";
import { ScoreIndex } from "./score-index.ts";

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * The store's clock (epoch ms): the clock of record for due-ness, leases and expiry.
   * @default Date.now
   */
  clock?: (() => number) | undefined;
  /**
   * How long finished jobs and idempotency keys are kept.
   * @default { jobMs: 7 days, idempotencyMs: 24 h }
   */
  retention?: Partial<StoreRetention> | undefined;
  /**
   * How many lifecycle events the capped event log keeps (newest); `0` writes none.
   * @default 10_000
   */
  eventsMaxLen?: number | undefined;
}

/** Events a call to `events()` examines at most (as the Redis store). */
const EVENTS_SCAN = 1_000;

interface StoredJob {
  record: JobRecord;
  /** Run lease of the current attempt, while `running`. */
  leaseUntil?: number;
  /** Retention: the record is gone from this time on (final jobs only). */
  expiresAt?: number;
  /** Dispatches from the dead-letter list so far (`retryDead`), for fresh dedup ids. */
  dispatches?: number;
}

interface Expiring<T> {
  value: T;
  expiresAt: number;
}

/** A stored event with its parsed id, for ordering. */
interface StoredEvent {
  ms: number;
  seq: number;
  event: TickEvent;
}

type Totals = StoreStats["totals"];
type GaugeStatus = keyof StoreStats["jobs"];

/**
 * In-memory {@link Store}.
 *
 * @example
 * const store = new MemoryStore();
 * const engine = createEngine({ store, transport, handlers });
 *
 * @example
 * // A test clock and short retention
 * let now = 0;
 * const store = new MemoryStore({ clock: () => now, retention: { jobMs: 1_000 } });
 */
export class MemoryStore implements Store {
  readonly #clock: () => number;
  readonly #retention: StoreRetention;
  readonly #jobs = new Map<string, StoredJob>();
  readonly #schedules = new Map<string, ScheduleRecord>();
  readonly #outbox = new Map<string, OutboxMessage>();
  /** Dead-letter list: job id → time it died. */
  readonly #dead = new Map<string, number>();
  /**
   * A schedule's runs index: schedule id → ids of the jobs it fired while it existed. Dropped with
   * the schedule, so a schedule re-created under the id starts with none.
   */
  readonly #runs = new Map<string, Set<string>>();
  /** Named leases → fencing token. */
  readonly #leases = new Map<string, Expiring<number>>();
  /** Overlap-`skip` schedules → id of the occurrence that holds the schedule's run lease. */
  readonly #running = new Map<string, Expiring<string>>();
  /** `tenant` NUL `key` → job id. */
  readonly #idempotency = new Map<string, Expiring<string>>();
  /** Delivery token ids seen, until their tokens expire: a second use is a replay. */
  readonly #deliveries = new Map<string, Expiring<true>>();
  /** Jobs deleted from the dead-letter list, never re-created by a late delivery. */
  readonly #gone = new Map<string, Expiring<true>>();
  #leaseSeq = 0;
  /** Schedule rev sequence: a created schedule's rev is above every rev a deleted one had. */
  #revSeq = 0;
  /** Earliest time any retained job, idempotency key or quota counter may have expired. */
  #sweepAt = Number.POSITIVE_INFINITY;
  /** Held schedules (degradation `critical`) → their due-index score instead of `nextRunAt`. */
  readonly #held = new Map<string, number>();
  /** `{p}:pending`: queued jobs → runAt, failed jobs → failure time. */
  readonly #pending = new ScoreIndex();
  /** Quota key → its window counters and when they expire. */
  readonly #quotas = new Map<string, { counters: QuotaCounters; expiresAt: number }>();
  readonly #gauges: StoreStats["jobs"] = { queued: 0, running: 0, failed: 0 };
  readonly #totals: Totals = {
    submitted: 0,
    dispatched: 0,
    recovered: 0,
    started: 0,
    succeeded: 0,
    failed: 0,
    dead: 0,
    cancelled: 0,
    skipped: 0,
    retried: 0,
    ticks: 0,
  };
  readonly #histograms = {
    dispatchLagMs: emptyHistogram(),
    handlerDurationMs: emptyHistogram(),
    tickDurationMs: emptyHistogram(),
    leaseAcquisitionMs: emptyHistogram(),
  };
  readonly #averages = { lagMs: 0, failureRate: 0 };
  readonly #leader = { holder: null as string | null, changes: 0, flaps: 0, acquiredAt: 0 };
  #degradation: DegradationState = initialDegradation();
  readonly #eventsMaxLen: number;
  /** The capped event log, oldest first, from index `#eventsStart` on. */
  #events: StoredEvent[] = [];
  #eventsStart = 0;
  #lastEvent = { ms: 0, seq: -1 };

  constructor(options: MemoryStoreOptions = {}) {
    this.#clock = options.clock ?? Date.now;
    this.#retention = { ...DEFAULT_RETENTION, ...definedOnly(options.retention ?? {}) };
    this.#eventsMaxLen = Math.max(0, Math.floor(options.eventsMaxLen ?? 10_000));
  }

  async now(): Promise<number> {
    return this.#clock();
  }

  // ── lease ────────────────────────────────────────────────────────────────

  async acquireLease(
    name: string,
    ttlMs: number,
  ): Promise<{ acquired: true; token: number } | { acquired: false; remainingMs: number }> {
    const now = this.#now();
    const held = live(this.#leases, name, now);
    if (held) return { acquired: false, remainingMs: held.expiresAt - now };
    return { acquired: true, token: this.#takeLease(name, ttlMs, now) };
  }

  async renewLease(name: string, token: number, ttlMs: number): Promise<boolean> {
    const now = this.#now();
    const held = live(this.#leases, name, now);
    if (held?.value !== token) return false;
    held.expiresAt = now + ttlMs;
    return true;
  }

  async releaseLease(name: string, token: number): Promise<boolean> {
    const now = this.#now();
    if (live(this.#leases, name, now)?.value !== token) return false;
    this.#leases.delete(name);
    return true;
  }

  // ── tick ─────────────────────────────────────────────────────────────────

  async beginTick(opts: BeginTickOptions): Promise<BeginTickResult> {
    const now = this.#now();
    const due = this.#due(now + opts.horizonMs);
    const recoverable = [...this.#outbox.values()]
      .filter((m) => m.recoverAt <= now)
      .sort((a, b) => a.recoverAt - b.recoverAt || compareIds(a.id, b.id));
    const held = live(this.#leases, TICK_LEASE, now);
    const leaseRemainingMs = held ? held.expiresAt - now : 0;
    if (due.length === 0 && recoverable.length === 0)
      return { kind: "idle", now, leaseRemainingMs };
    if (held) return { kind: "busy", now, leaseRemainingMs };

    const token = this.#takeLease(TICK_LEASE, opts.leaseMs, now);
    const recover = recoverable.slice(0, Math.max(0, opts.recoverLimit));
    for (const message of recover) {
      if (message.attempt === undefined) message.recoverAt = now + opts.recoverGraceMs;
      else {
        message.recoverAt = now + (opts.reapAfterMs ?? DEFAULT_REAP_AFTER_MS);
        message.reaps = (message.reaps ?? 0) + 1;
      }
    }
    this.#totals.ticks += 1;
    this.#totals.recovered += recover.length;
    let leaderChanged: { previous: string | null } | undefined;
    if (opts.holder !== undefined && opts.holder !== this.#leader.holder) {
      const previous = this.#leader.holder;
      const leader = this.#leader;
      if (leader.changes > 0 && now - leader.acquiredAt < FLAP_WINDOW_MS) leader.flaps += 1;
      leader.changes += 1;
      leader.holder = opts.holder;
      leader.acquiredAt = now;
      leaderChanged = { previous };
      this.#event(now, { type: "leader.changed", holder: opts.holder, previous });
    }
    if (opts.degradation) this.#evaluate(opts.degradation, now);
    return {
      kind: "leader",
      now,
      token,
      degradation: this.#degradation.level,
      ...(leaderChanged ? { leaderChanged } : {}),
      due: clone(due.slice(0, opts.limit)),
      more: due.length > opts.limit,
      recover: clone(recover),
    };
  }

  async nextDue(token: number, opts: NextDueOptions): Promise<NextDueResult> {
    const now = this.#now();
    const held = live(this.#leases, TICK_LEASE, now);
    if (held?.value !== token) return { kind: "fenced" };
    this.#ack(opts.ackIds, now + (opts.reapAfterMs ?? DEFAULT_REAP_AFTER_MS));
    held.expiresAt = now + opts.leaseMs;
    const due = this.#due(now + opts.horizonMs);
    return { kind: "ok", now, due: clone(due.slice(0, opts.limit)), more: due.length > opts.limit };
  }

  async commitTick(token: number, commits: ScheduleCommit[]): Promise<CommitResult> {
    const now = this.#now();
    if (live(this.#leases, TICK_LEASE, now)?.value !== token) return { kind: "fenced" };
    const applied: string[] = [];
    const skipped: string[] = [];
    for (const commit of commits) {
      const schedule = this.#schedules.get(commit.id);
      if (!schedule || schedule.rev !== commit.rev || schedule.status !== "active") {
        skipped.push(commit.id);
        continue;
      }
      schedule.nextRunAt = commit.nextRunAt;
      if (commit.nextRunAt === null) schedule.status = "completed";
      schedule.runs += commit.runsAdded;
      if (commit.lastRunAt !== undefined) schedule.lastRunAt = commit.lastRunAt;
      schedule.rev += 1;
      if (commit.dueAt !== undefined && commit.nextRunAt !== null) {
        this.#held.set(commit.id, commit.dueAt);
      } else this.#held.delete(commit.id);
      for (const message of commit.messages) {
        this.#outbox.set(message.id, clone(message));
        this.#totals.dispatched += 1;
        this.#enter(message.id, "queued", message.job.runAt);
        this.#event(now, { type: "job.dispatched", ...jobFields(message.job) });
      }
      applied.push(commit.id);
    }
    return { kind: "ok", applied, skipped };
  }

  async ackOutbox(acks: OutboxAck[], reapAfterMs = DEFAULT_REAP_AFTER_MS): Promise<void> {
    this.#ack(acks, this.#now() + reapAfterMs);
  }

  async endTick(
    token: number,
    ackIds: OutboxAck[],
    report?: { tickMs: number; acquireMs: number },
    reapAfterMs = DEFAULT_REAP_AFTER_MS,
  ): Promise<void> {
    const now = this.#now();
    this.#ack(ackIds, now + reapAfterMs);
    if (live(this.#leases, TICK_LEASE, now)?.value === token) this.#leases.delete(TICK_LEASE);
    if (report) {
      observe(this.#histograms.tickDurationMs, report.tickMs);
      observe(this.#histograms.leaseAcquisitionMs, report.acquireMs);
    }
  }

  // ── jobs ─────────────────────────────────────────────────────────────────

  async submitJob(
    job: NewJob,
    timing: { runAt?: number; delayMs: number; recoverGraceMs: number },
    admission: Admission = {},
  ): Promise<SubmitResult | SubmitDenied> {
    const now = this.#now();
    const idemKey =
      job.idempotencyKey === undefined ? undefined : `${job.tenant}\u0000${job.idempotencyKey}`;
    if (idemKey !== undefined) {
      const firstId = live(this.#idempotency, idemKey, now)?.value;
      const first = firstId === undefined ? undefined : this.#jobs.get(firstId);
      if (first) return { job: clone(first.record), replayed: true };
    }
    let degradation: { level: DegradationLevel; delayedMs: number } | undefined;
    if (admission.degradation) {
      const policy = admission.degradation;
      const level = this.#evaluate(policy, now);
      if (level === "critical" && policy.critical === "reject") {
        return {
          denied: { kind: "overloaded", level: "critical", retryAfterMs: policy.retryAfterMs },
        };
      }
      const delayedMs =
        level === "degraded"
          ? policy.degradedDelayMs
          : level === "critical"
            ? policy.criticalDelayMs
            : 0;
      degradation = { level, delayedMs };
    }
    const quota = this.#quota(admission.quota, now);
    if (quota && !quota.admitted) return { denied: { kind: "quota", quota: quota.state } };

    const spec: JobSpec = {
      ...clone(job),
      createdAt: now,
      runAt: (timing.runAt ?? now + timing.delayMs) + (degradation?.delayedMs ?? 0),
    };
    const record: JobRecord = { ...spec, status: "queued", attempts: 0 };
    const message: OutboxMessage = {
      id: spec.id,
      dedupId: spec.id,
      job: spec,
      notBefore: spec.runAt,
      recoverAt: spec.runAt + timing.recoverGraceMs,
    };
    this.#jobs.set(spec.id, { record: clone(record) });
    this.#indexRun(record);
    this.#outbox.set(spec.id, clone(message));
    if (idemKey !== undefined) {
      const expiresAt = now + this.#retention.idempotencyMs;
      this.#idempotency.set(idemKey, { value: spec.id, expiresAt });
      this.#sweepAt = Math.min(this.#sweepAt, expiresAt);
    }
    this.#totals.submitted += 1;
    this.#enter(spec.id, "queued", spec.runAt);
    this.#event(now, { type: "job.created", ...jobFields(spec) });
    return {
      job: clone(record),
      message: clone(message),
      replayed: false,
      ...(quota ? { quota: quota.state } : {}),
      ...(degradation ? { degradation } : {}),
    };
  }

  async getJob(id: string): Promise<JobRecord | null> {
    this.#now();
    const stored = this.#jobs.get(id);
    return stored ? clone(stored.record) : null;
  }

  async cancelJob(id: string): Promise<CancelResult> {
    const now = this.#now();
    const stored = this.#jobs.get(id);
    if (!stored) return { kind: "missing" };
    if (stored.record.status !== "queued") return { kind: "conflict", job: clone(stored.record) };
    this.#leave(id, "queued");
    stored.record.status = "cancelled";
    stored.record.finishedAt = now;
    this.#retain(stored, now);
    this.#outbox.delete(id);
    this.#totals.cancelled += 1;
    this.#event(now, { type: "job.cancelled", ...jobFields(stored.record) });
    return { kind: "ok", job: clone(stored.record) };
  }

  async listJobs(query: ListJobsQuery): Promise<Page<JobRecord>> {
    this.#now();
    const entries: Scored<JobRecord>[] = [];
    const tenant = query.tenant ?? DEFAULT_TENANT;
    for (const { record } of this.#jobs.values()) {
      if (record.tenant !== tenant) continue;
      if (query.status !== undefined && record.status !== query.status) continue;
      if (query.handler !== undefined && record.handler !== query.handler) continue;
      if (query.scheduleId !== undefined && record.scheduleId !== query.scheduleId) continue;
      entries.push({ score: record.createdAt, id: record.id, item: record });
    }
    return clone(paginate(entries, query.limit, query.cursor));
  }

  async beginRun(
    spec: JobSpec,
    leaseMs: number,
    reapAfterMs = DEFAULT_REAP_AFTER_MS,
    token?: DeliveryToken,
  ): Promise<BeginRunResult> {
    const now = this.#now();
    if (!this.#firstUse(token, now)) return { kind: "replayed" };
    const stored = this.#jobOrCreate(spec, now);
    if (!stored) {
      this.#outbox.delete(spec.id); // finished and expired: a leftover re-dispatch
      return { kind: "missing" };
    }
    const job = stored.record;
    if (FINAL_JOB_STATUSES.includes(job.status)) {
      this.#outbox.delete(job.id);
      // A leftover entry: an occurrence committed again after it finished.
      this.#leave(job.id, "queued");
      return { kind: "final", job: clone(job) };
    }
    if (job.status === "running" && stored.leaseUntil !== undefined && stored.leaseUntil > now) {
      return { kind: "busy", retryAfterMs: stored.leaseUntil - now };
    }
    if (job.overlap === "skip" && job.scheduleId !== undefined) {
      const holder = live(this.#running, job.scheduleId, now);
      if (holder && holder.value !== job.id) {
        // Only an occurrence that never started may be skipped; a retry of a started one waits.
        if (job.attempts > 0) return { kind: "busy", retryAfterMs: holder.expiresAt - now };
        this.#outbox.delete(job.id);
        this.#leave(job.id, job.status);
        job.status = "skipped";
        job.finishedAt = now;
        delete stored.leaseUntil;
        this.#retain(stored, now);
        this.#totals.skipped += 1;
        this.#event(now, { type: "job.skipped", ...jobFields(job) });
        return { kind: "skipped", job: clone(job) };
      }
      this.#running.set(job.scheduleId, { value: job.id, expiresAt: now + leaseMs });
    }
    this.#leave(job.id, job.status);
    job.status = "running";
    job.attempts += 1;
    job.startedAt = now;
    delete job.finishedAt;
    stored.leaseUntil = now + leaseMs;
    this.#outbox.set(job.id, {
      id: job.id,
      dedupId: `${job.id}~a${job.attempts}`,
      job: clone(specOf(job)),
      notBefore: job.runAt,
      recoverAt: stored.leaseUntil + reapAfterMs,
      attempt: job.attempts,
    });
    this.#enter(job.id, "running", now);
    this.#totals.started += 1;
    if (job.attempts === 1) {
      const lag = Math.max(0, now - job.runAt);
      observe(this.#histograms.dispatchLagMs, lag);
      this.#averages.lagMs = movingAverage(this.#averages.lagMs, lag);
    }
    this.#event(now, { type: "job.started", ...jobFields(job), attempt: job.attempts });
    return { kind: "run", attempt: job.attempts, job: clone(job) };
  }

  async finishRun(
    id: string,
    attempt: number,
    outcome: RunOutcome,
    reapAfterMs = DEFAULT_REAP_AFTER_MS,
  ): Promise<FinishRunResult> {
    const now = this.#now();
    const stored = this.#jobs.get(id);
    if (!stored) return { kind: "stale", job: null };
    const job = stored.record;
    if (job.status !== "running" || job.attempts !== attempt) {
      return { kind: "stale", job: clone(job) };
    }
    this.#releaseRun(stored);
    this.#leave(id, "running");
    job.finishedAt = now;
    observe(this.#histograms.handlerDurationMs, now - (job.startedAt ?? now));
    this.#averages.failureRate = movingAverage(this.#averages.failureRate, outcome.ok ? 0 : 1);
    if (outcome.ok) {
      job.status = "succeeded";
      job.result = clone(outcome.result);
      delete job.error;
      this.#retain(stored, now);
      this.#outbox.delete(id);
      this.#totals.succeeded += 1;
      this.#event(now, { type: "job.succeeded", ...jobFields(job) });
    } else if (outcome.final) {
      this.#totals.failed += 1;
      this.#outbox.delete(id);
      this.#kill(stored, outcome.error, now);
    } else {
      job.status = "failed";
      job.error = clone(outcome.error);
      const watch = this.#outbox.get(id);
      if (watch) watch.recoverAt = now + reapAfterMs;
      this.#totals.failed += 1;
      this.#enter(id, "failed", now);
      this.#event(now, {
        type: "job.failed",
        ...jobFields(job),
        attempt,
        error: errorOf(outcome.error),
      });
    }
    return { kind: "ok", job: clone(job) };
  }

  async markDead(
    spec: JobSpec,
    error: JobError,
    expect?: { attempts: number },
    token?: DeliveryToken,
  ): Promise<JobRecord | null> {
    const now = this.#now();
    if (!this.#firstUse(token, now)) {
      const current = this.#jobs.get(spec.id);
      return current ? clone(current.record) : null;
    }
    const stored = this.#jobOrCreate(spec, now);
    if (!stored) {
      this.#outbox.delete(spec.id); // finished and expired: a leftover watch
      return null;
    }
    const job = stored.record;
    // The reaper's watch was for another attempt: the job has moved on.
    if (expect !== undefined && job.attempts !== expect.attempts) return clone(job);
    if (job.status === "dead" || job.status === "succeeded" || job.status === "cancelled") {
      return clone(job);
    }
    // A skipped occurrence was deliberately not run: dead-lettering it would invite running it.
    if (job.status === "skipped") return clone(job);
    // A callback for an earlier dispatch (retryDead set a new runAt since) must not kill this one.
    if (spec.runAt !== job.runAt) return clone(job);
    // A live attempt may still succeed: the late callback must not kill it.
    if (job.status === "running" && stored.leaseUntil !== undefined && stored.leaseUntil > now) {
      return clone(job);
    }
    this.#releaseRun(stored);
    this.#outbox.delete(job.id);
    this.#leave(job.id, job.status);
    job.finishedAt = now;
    this.#kill(stored, clone(error), now);
    return clone(job);
  }

  async listDead(query: DeadQuery): Promise<Page<JobRecord>> {
    this.#now();
    const tenant = query.tenant ?? DEFAULT_TENANT;
    const entries: Scored<JobRecord>[] = [];
    for (const [id, diedAt] of this.#dead) {
      const stored = this.#jobs.get(id);
      if (stored?.record.tenant === tenant)
        entries.push({ score: diedAt, id, item: stored.record });
    }
    return clone(paginate(entries, query.limit, query.cursor));
  }

  async retryDead(
    id: string,
    timing: { recoverGraceMs: number },
  ): Promise<{ job: JobRecord; message: OutboxMessage } | null> {
    const now = this.#now();
    const stored = this.#jobs.get(id);
    if (stored?.record.status !== "dead") return null;
    const job = stored.record;
    this.#dead.delete(id);
    delete stored.expiresAt;
    job.status = "queued";
    job.runAt = now;
    job.attemptBase = job.attempts;
    delete job.finishedAt;
    stored.dispatches = (stored.dispatches ?? 0) + 1;
    const message: OutboxMessage = {
      id,
      dedupId: `${id}~r${stored.dispatches}`,
      job: specOf(job),
      notBefore: now,
      recoverAt: now + timing.recoverGraceMs,
    };
    this.#outbox.set(id, clone(message));
    this.#totals.retried += 1;
    this.#enter(id, "queued", now);
    this.#event(now, { type: "job.retried", ...jobFields(job) });
    return { job: clone(job), message: clone(message) };
  }

  async deleteDead(id: string): Promise<boolean> {
    const now = this.#now();
    const stored = this.#jobs.get(id);
    if (!stored || !this.#dead.has(id)) return false;
    this.#drop(stored.record);
    const expiresAt = now + this.#retention.jobMs;
    this.#gone.set(id, { value: true, expiresAt });
    this.#sweepAt = Math.min(this.#sweepAt, expiresAt);
    return true;
  }

  // ── schedules ────────────────────────────────────────────────────────────

  async putSchedule(
    schedule: ScheduleRecord,
    expectRev?: number,
    admission: Pick<Admission, "quota"> = {},
  ): Promise<PutScheduleResult> {
    const now = this.#now();
    const stored = this.#schedules.get(schedule.id);
    if (expectRev !== undefined && stored?.rev !== expectRev) {
      return { kind: "conflict", schedule: stored ? clone(stored) : null };
    }
    const quota = this.#quota(admission.quota, now);
    if (quota && !quota.admitted) {
      return { kind: "denied", denied: { kind: "quota", quota: quota.state } };
    }
    const record = clone(schedule);
    record.rev = stored ? stored.rev + 1 : ++this.#revSeq;
    if (stored && expectRev === undefined) {
      record.runs = stored.runs;
      record.createdAt = stored.createdAt;
      if (stored.lastRunAt === undefined) delete record.lastRunAt;
      else record.lastRunAt = stored.lastRunAt;
    }
    this.#schedules.set(record.id, record);
    this.#held.delete(record.id);
    return {
      kind: "ok",
      created: !stored,
      schedule: clone(record),
      ...(quota ? { quota: quota.state } : {}),
    };
  }

  async getSchedule(id: string): Promise<ScheduleRecord | null> {
    this.#now();
    const stored = this.#schedules.get(id);
    return stored ? clone(stored) : null;
  }

  async listSchedules(query: ListSchedulesQuery): Promise<Page<ScheduleRecord>> {
    this.#now();
    const entries: Scored<ScheduleRecord>[] = [];
    const tenant = query.tenant ?? DEFAULT_TENANT;
    for (const schedule of this.#schedules.values()) {
      if (schedule.tenant !== tenant) continue;
      if (query.status !== undefined && schedule.status !== query.status) continue;
      if (query.handler !== undefined && schedule.handler !== query.handler) continue;
      entries.push({ score: schedule.createdAt, id: schedule.id, item: schedule });
    }
    return clone(paginate(entries, query.limit, query.cursor));
  }

  async deleteSchedule(id: string): Promise<boolean> {
    this.#now();
    const stored = this.#schedules.get(id);
    // A re-created schedule must start above every rev this id had (no ABA for stale tick plans).
    if (stored) this.#revSeq = Math.max(this.#revSeq, stored.rev);
    this.#held.delete(id);
    this.#runs.delete(id);
    return this.#schedules.delete(id);
  }

  async listRuns(
    scheduleId: string,
    query: { limit: number; cursor?: string | undefined },
  ): Promise<Page<JobRecord>> {
    this.#now();
    const entries: Scored<JobRecord>[] = [];
    for (const id of this.#runs.get(scheduleId) ?? []) {
      const record = this.#jobs.get(id)?.record;
      if (!record) continue;
      entries.push({ score: record.fireAt ?? record.runAt, id: record.id, item: record });
    }
    return clone(paginate(entries, query.limit, query.cursor));
  }

  // ── observability ──────────────────────────────────────────────────────

  async stats(degradation?: DegradationPolicy): Promise<StoreStats> {
    const now = this.#now();
    if (degradation) this.#evaluate(degradation, now);
    const lease = live(this.#leases, TICK_LEASE, now);
    const h = this.#histograms;
    return clone({
      now,
      jobs: { ...this.#gauges },
      totals: { ...this.#totals },
      outbox: this.#outbox.size,
      backlog: this.#backlog(now),
      dispatchLagMs: copyHistogram(h.dispatchLagMs),
      handlerDurationMs: copyHistogram(h.handlerDurationMs),
      tickDurationMs: copyHistogram(h.tickDurationMs),
      leaseAcquisitionMs: copyHistogram(h.leaseAcquisitionMs),
      averages: { ...this.#averages },
      leader: {
        holder: this.#leader.holder,
        active: lease !== undefined,
        leaseRemainingMs: lease ? lease.expiresAt - now : 0,
        changes: this.#leader.changes,
        flaps: this.#leader.flaps,
        acquiredAt: this.#leader.acquiredAt,
      },
      degradation: this.#degradation,
    });
  }

  async events(query: EventsQuery): Promise<EventsPage> {
    this.#now();
    const after = query.after === undefined ? { ms: -1, seq: -1 } : parseEventId(query.after);
    const types = query.types && query.types.length > 0 ? new Set(query.types) : undefined;
    const limit = Math.max(1, Math.min(EVENTS_SCAN, Math.floor(query.limit)));
    // First stored event with an id above `after` (ids increase along the array).
    let lo = this.#eventsStart;
    let hi = this.#events.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const e = this.#events[mid] as StoredEvent;
      if (e.ms < after.ms || (e.ms === after.ms && e.seq <= after.seq)) lo = mid + 1;
      else hi = mid;
    }
    const events: TickEvent[] = [];
    let last: string | undefined;
    const end = Math.min(this.#events.length, lo + EVENTS_SCAN);
    for (let i = lo; i < end && events.length < limit; i++) {
      const { event } = this.#events[i] as StoredEvent;
      last = event.id;
      if (!types || types.has(event.type)) events.push(event);
    }
    return clone(last === undefined ? { events } : { events, last });
  }

  // ── internals ────────────────────────────────────────────────────────────

  /** Reads the clock and drops whatever expired (amortised: only when something may have). */
  #now(): number {
    const now = this.#clock();
    if (now < this.#sweepAt) return now;
    let next = Number.POSITIVE_INFINITY;
    for (const stored of this.#jobs.values()) {
      if (stored.expiresAt === undefined) continue;
      if (stored.expiresAt <= now) {
        this.#drop(stored.record);
      } else next = Math.min(next, stored.expiresAt);
    }
    for (const map of [this.#idempotency, this.#deliveries, this.#gone]) {
      for (const [key, entry] of map) {
        if (entry.expiresAt <= now) map.delete(key);
        else next = Math.min(next, entry.expiresAt);
      }
    }
    for (const [key, entry] of this.#quotas) {
      if (entry.expiresAt <= now) this.#quotas.delete(key);
      else next = Math.min(next, entry.expiresAt);
    }
    this.#sweepAt = next;
    return now;
  }

  /** Checks and (when admitted) counts a quota; `undefined` without one. */
  #quota(check: QuotaCheck | undefined, now: number): QuotaVerdict | undefined {
    if (!check) return undefined;
    const stored = this.#quotas.get(check.key);
    const counters: QuotaCounters = stored?.counters ?? new Map();
    const verdict = checkQuota(counters, check, now);
    if (verdict.admitted) {
      const expiresAt = now + Math.max(...check.windows.map((w) => w.windowMs));
      this.#quotas.set(check.key, {
        counters,
        expiresAt: Math.max(expiresAt, stored?.expiresAt ?? 0),
      });
      this.#sweepAt = Math.min(this.#sweepAt, expiresAt);
    }
    return verdict;
  }

  /** Evaluates the degradation controller at `now`; returns the level after it. */
  #evaluate(policy: DegradationPolicy, now: number): DegradationLevel {
    const { state, changed } = evaluateDegradation(
      this.#degradation,
      policy,
      {
        queueDepth: this.#backlog(now),
        lagMs: this.#averages.lagMs,
        failureRate: this.#averages.failureRate,
      },
      now,
    );
    this.#degradation = state;
    if (changed) this.#event(now, { type: "degradation.changed", ...changed });
    return state.level;
  }

  /** `ZCOUNT pending -inf now`. */
  #backlog(now: number): number {
    return this.#pending.countUpTo(now);
  }

  /** A job enters a gauged status (`queued` and `failed` also enter `{p}:pending`). */
  #enter(id: string, status: GaugeStatus, score: number): void {
    if (status === "running") {
      this.#gauges.running += 1;
      return;
    }
    if (status === "queued" && this.#pending.has(id)) return;
    this.#pending.set(id, score);
    this.#gauges[status] += 1;
  }

  /**
   * A job leaves `status`. Leaving `queued` counts only if the job was in `{p}:pending` (an
   * occurrence never committed was never counted); non-gauged statuses count nothing.
   */
  #leave(id: string, status: JobRecord["status"]): void {
    if (status === "queued" || status === "failed") {
      if (this.#pending.delete(id)) this.#gauges[status] = Math.max(0, this.#gauges[status] - 1);
    } else if (status === "running") {
      this.#gauges.running = Math.max(0, this.#gauges.running - 1);
    }
  }

  /** Appends an event to the capped log (id `<ms>-<seq>`, strictly increasing). */
  #event(now: number, fields: Omit<TickEvent, "id" | "at">): void {
    if (this.#eventsMaxLen === 0) return;
    const last = this.#lastEvent;
    const ms = Math.max(now, last.ms);
    const seq = ms === last.ms ? last.seq + 1 : 0;
    this.#lastEvent = { ms, seq };
    const { type, ...rest } = fields;
    const event: TickEvent = { id: `${ms}-${seq}`, type, at: now, ...rest };
    this.#events.push({ ms, seq, event });
    if (this.#events.length - this.#eventsStart > this.#eventsMaxLen) {
      this.#eventsStart = this.#events.length - this.#eventsMaxLen;
      // Compact now and then, so trimming stays amortised O(1).
      if (this.#eventsStart >= this.#eventsMaxLen) {
        this.#events = this.#events.slice(this.#eventsStart);
        this.#eventsStart = 0;
      }
    }
  }

  /** Compare-and-delete: removes a message only if it still carries the acked dedup id. */
  /** Accepted by the queue: each message still carrying `dedupId` becomes its attempt-0 watch. */
  #ack(acks: OutboxAck[], watchAt: number): void {
    for (const { id, dedupId } of acks) {
      const message = this.#outbox.get(id);
      if (message?.dedupId !== dedupId) continue;
      this.#outbox.set(id, { ...message, dedupId: `${id}~a0`, recoverAt: watchAt, attempt: 0 });
    }
  }

  #takeLease(name: string, ttlMs: number, now: number): number {
    const token = ++this.#leaseSeq;
    this.#leases.set(name, { value: token, expiresAt: now + ttlMs });
    return token;
  }

  /**
   * Active schedules due by `until`, earliest first (ties by id, like a sorted set), judged by
   * the due-index score: `nextRunAt`, or the `dueAt` of a hold.
   */
  #due(until: number): ScheduleRecord[] {
    const scored: [number, ScheduleRecord][] = [];
    for (const s of this.#schedules.values()) {
      if (s.status !== "active" || s.nextRunAt === null) continue;
      const score = this.#held.get(s.id) ?? s.nextRunAt;
      if (score <= until) scored.push([score, s]);
    }
    return scored.sort((a, b) => a[0] - b[0] || compareIds(a[1].id, b[1].id)).map(([, s]) => s);
  }

  /**
   * The stored job, or a new one from `spec` for an occurrence (created by its first delivery).
   * `undefined` for a missing job without `scheduleId`: it existed before it was published, so it
   * expired (cancelled or finished) and must not come back.
   */
  #jobOrCreate(spec: JobSpec, now: number): StoredJob | undefined {
    let stored = this.#jobs.get(spec.id);
    if (!stored) {
      if (spec.scheduleId === undefined || live(this.#gone, spec.id, now)) return undefined;
      stored = { record: { ...clone(spec), status: "queued", attempts: 0 } };
      this.#jobs.set(spec.id, stored);
      this.#indexRun(stored.record);
    }
    return stored;
  }

  /**
   * False when `token` was used before (a replay); else remembers it until it expires (plus a
   * minute for clock skew, as the Redis store does). No token: always a first use.
   */
  #firstUse(token: DeliveryToken | undefined, now: number): boolean {
    if (!token) return true;
    if (live(this.#deliveries, token.id, now)) return false;
    const expiresAt = now + Math.max(1_000, token.expiresAt - now + 60_000);
    this.#deliveries.set(token.id, { value: true, expiresAt });
    this.#sweepAt = Math.min(this.#sweepAt, expiresAt);
    return true;
  }

  /** Lists an occurrence under its schedule's runs, while the schedule exists. */
  #indexRun(job: JobRecord): void {
    if (job.scheduleId === undefined || !this.#schedules.has(job.scheduleId)) return;
    const runs = this.#runs.get(job.scheduleId) ?? new Set<string>();
    this.#runs.set(job.scheduleId, runs.add(job.id));
  }

  /** Forget a job and every index entry of it. */
  #drop(job: JobRecord): void {
    this.#jobs.delete(job.id);
    this.#dead.delete(job.id);
    if (job.scheduleId !== undefined) this.#runs.get(job.scheduleId)?.delete(job.id);
  }

  /** Starts the retention clock of a job that reached a final state. */
  #retain(stored: StoredJob, now: number): void {
    stored.expiresAt = now + this.#retention.jobMs;
    this.#sweepAt = Math.min(this.#sweepAt, stored.expiresAt);
    // The retention caps, as the Redis store applies them: at most two drops of each per call.
    const { maxFinishedJobs, maxRunsPerSchedule } = this.#retention;
    const { id, scheduleId } = stored.record;
    if (maxRunsPerSchedule > 0 && scheduleId !== undefined) {
      const runs = [...(this.#runs.get(scheduleId) ?? [])]
        .map((runId) => this.#jobs.get(runId))
        .filter((run): run is StoredJob => run !== undefined);
      const over = runs.length - maxRunsPerSchedule;
      if (over > 0) {
        runs.sort(
          (a, b) => runScore(a.record) - runScore(b.record) || compareIds(a.record.id, b.record.id),
        );
        // Past unfinished oldest runs (a bounded 20), as the Redis store looks.
        let dropped = 0;
        for (const run of runs.slice(0, 20)) {
          if (dropped >= Math.min(over, 2)) break;
          if (run.record.id !== id && this.#dropFinished(run, now)) dropped++;
        }
      }
    }
    if (maxFinishedJobs > 0) {
      const finished = [...this.#jobs.values()].filter((job) => job.expiresAt !== undefined);
      const over = finished.length - maxFinishedJobs;
      if (over > 0) {
        finished.sort(
          (a, b) => a.expiresAt! - b.expiresAt! || compareIds(a.record.id, b.record.id),
        );
        for (const old of finished.slice(0, Math.min(over, 2))) {
          if (old.record.id !== id) this.#dropFinished(old, now);
        }
      }
    }
  }

  /**
   * A finished job dropped before its time by a retention cap; an occurrence leaves a tombstone
   * for at most an hour, so a late delivery of it does not bring it back to run again.
   */
  #dropFinished(stored: StoredJob, now: number): boolean {
    if (!FINAL_JOB_STATUSES.includes(stored.record.status)) return false;
    this.#drop(stored.record);
    if (stored.record.scheduleId !== undefined && stored.expiresAt !== undefined) {
      const expiresAt = now + Math.min(stored.expiresAt - now, 3_600_000);
      this.#gone.set(stored.record.id, { value: true, expiresAt });
      this.#sweepAt = Math.min(this.#sweepAt, expiresAt);
    }
    return true;
  }

  /** Drops the job's run lease and, if it holds it, its schedule's overlap lease. */
  #releaseRun(stored: StoredJob): void {
    delete stored.leaseUntil;
    const { scheduleId, id } = stored.record;
    if (scheduleId !== undefined && this.#running.get(scheduleId)?.value === id) {
      this.#running.delete(scheduleId);
    }
  }

  /** → `dead` (the caller has left the previous status): dead-letter list, total and event. */
  #kill(stored: StoredJob, error: JobError, now: number): void {
    stored.record.status = "dead";
    stored.record.error = clone(error);
    this.#dead.set(stored.record.id, now);
    this.#retain(stored, now);
    this.#totals.dead += 1;
    this.#event(now, {
      type: "job.dead",
      ...jobFields(stored.record),
      attempt: stored.record.attempts,
      error: errorOf(error),
    });
  }
}

/** The fields every job event carries. */
function jobFields(job: JobSpec): Pick<TickEvent, "jobId" | "handler" | "tenant" | "scheduleId"> {
  return {
    jobId: job.id,
    handler: job.handler,
    tenant: job.tenant,
    ...(job.scheduleId !== undefined ? { scheduleId: job.scheduleId } : {}),
  };
}

function errorOf(error: JobError): { name: string; message: string } {
  return { name: error.name, message: error.message };
}

function copyHistogram(h: Histogram): Histogram {
  return { bounds: h.bounds, counts: [...h.counts], sum: h.sum, count: h.count };
}

/** Parses an event id `<ms>-<seq>`. */
function parseEventId(id: string): { ms: number; seq: number } {
  const match = /^(\d{1,16})-(\d{1,16})$/.exec(id);
  if (!match) {
    throw new ValidationError("invalid event id", [
      { path: "after", message: "not an event id (<ms>-<seq>)" },
    ]);
  }
  return { ms: Number(match[1]), seq: Number(match[2]) };
}

/** The entry under `key` if it has not expired (an expired one is dropped, as Redis would). */
function live<T>(map: Map<string, Expiring<T>>, key: string, now: number): Expiring<T> | undefined {
  const entry = map.get(key);
  if (entry && entry.expiresAt <= now) {
    map.delete(key);
    return undefined;
  }
  return entry;
}

function specOf(job: JobRecord): JobSpec {
  const { status, attempts, attemptBase, startedAt, finishedAt, result, error, ...spec } = job;
  return spec;
}

/** A run's place in its schedule's runs list: its fire time (else when it was due). */
function runScore(job: JobRecord): number {
  return job.fireAt ?? job.runAt;
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

const clone: <T>(value: T) => T = structuredClone;
