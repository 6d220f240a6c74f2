/**
 * @module
 * `MemoryStore`: the embedded Store, for local development, tests and single-process use.
 * Same semantics as the Redis store (both pass `test/contract/store.contract.ts`).
 *
 * Atomicity: every operation's body is synchronous (no `await` inside), so it runs as one step
 * of the event loop, as a Lua script runs as one step of Redis. Records are deep-copied in and
 * out, so a caller can never reach the stored state. Time-to-live values (leases, idempotency
 * keys, finished-job retention, run leases) are judged lazily against the injected clock.
 */
import type {
  JobError,
  JobRecord,
  JobSpec,
  NewJob,
  OutboxMessage,
  ScheduleRecord,
} from "../../core/model.ts";
import { FINAL_JOB_STATUSES } from "../../core/model.ts";
import type {
  BeginRunResult,
  BeginTickOptions,
  BeginTickResult,
  CancelResult,
  CommitResult,
  FinishRunResult,
  ListJobsQuery,
  ListSchedulesQuery,
  NextDueResult,
  OutboxAck,
  Page,
  PutScheduleResult,
  RunOutcome,
  ScheduleCommit,
  Store,
  StoreRetention,
  SubmitResult,
} from "../port.ts";
import { DEFAULT_RETENTION, TICK_LEASE } from "../port.ts";
import { paginate, type Scored } from "./cursor.ts";

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * The store's clock (epoch ms): the clock of record for due-ness, leases and expiry.
   * @default Date.now
   */
  clock?: () => number;
  /**
   * How long finished jobs and idempotency keys are kept.
   * @default { jobMs: 7 days, idempotencyMs: 24 h }
   */
  retention?: Partial<StoreRetention>;
}

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
  /** Named leases → fencing token. */
  readonly #leases = new Map<string, Expiring<number>>();
  /** Overlap-`skip` schedules → id of the occurrence that holds the schedule's run lease. */
  readonly #running = new Map<string, Expiring<string>>();
  /** `tenant` NUL `key` → job id. */
  readonly #idempotency = new Map<string, Expiring<string>>();
  #leaseSeq = 0;
  /** Schedule rev sequence: a created schedule's rev is above every rev a deleted one had. */
  #revSeq = 0;
  /** Earliest time any retained job or idempotency key may have expired. */
  #sweepAt = Number.POSITIVE_INFINITY;

  constructor(options: MemoryStoreOptions = {}) {
    this.#clock = options.clock ?? Date.now;
    this.#retention = { ...DEFAULT_RETENTION, ...definedOnly(options.retention ?? {}) };
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
    for (const message of recover) message.recoverAt = now + opts.recoverGraceMs;
    return {
      kind: "leader",
      now,
      token,
      due: clone(due.slice(0, opts.limit)),
      more: due.length > opts.limit,
      recover: clone(recover),
    };
  }

  async nextDue(
    token: number,
    opts: { leaseMs: number; horizonMs: number; limit: number; ackIds: OutboxAck[] },
  ): Promise<NextDueResult> {
    const now = this.#now();
    const held = live(this.#leases, TICK_LEASE, now);
    if (held?.value !== token) return { kind: "fenced" };
    this.#ack(opts.ackIds);
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
      for (const message of commit.messages) this.#outbox.set(message.id, clone(message));
      applied.push(commit.id);
    }
    return { kind: "ok", applied, skipped };
  }

  async ackOutbox(acks: OutboxAck[]): Promise<void> {
    this.#now();
    this.#ack(acks);
  }

  async endTick(token: number, ackIds: OutboxAck[]): Promise<void> {
    const now = this.#now();
    this.#ack(ackIds);
    if (live(this.#leases, TICK_LEASE, now)?.value === token) this.#leases.delete(TICK_LEASE);
  }

  // ── jobs ─────────────────────────────────────────────────────────────────

  async submitJob(
    job: NewJob,
    timing: { runAt?: number; delayMs: number; recoverGraceMs: number },
  ): Promise<SubmitResult> {
    const now = this.#now();
    const idemKey =
      job.idempotencyKey === undefined ? undefined : `${job.tenant}\u0000${job.idempotencyKey}`;
    if (idemKey !== undefined) {
      const firstId = live(this.#idempotency, idemKey, now)?.value;
      const first = firstId === undefined ? undefined : this.#jobs.get(firstId);
      if (first) return { job: clone(first.record), replayed: true };
    }
    const spec: JobSpec = {
      ...clone(job),
      createdAt: now,
      runAt: timing.runAt ?? now + timing.delayMs,
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
    this.#outbox.set(spec.id, clone(message));
    if (idemKey !== undefined) {
      const expiresAt = now + this.#retention.idempotencyMs;
      this.#idempotency.set(idemKey, { value: spec.id, expiresAt });
      this.#sweepAt = Math.min(this.#sweepAt, expiresAt);
    }
    return { job: clone(record), message: clone(message), replayed: false };
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
    stored.record.status = "cancelled";
    stored.record.finishedAt = now;
    this.#retain(stored, now);
    this.#outbox.delete(id);
    return { kind: "ok", job: clone(stored.record) };
  }

  async listJobs(query: ListJobsQuery): Promise<Page<JobRecord>> {
    this.#now();
    const entries: Scored<JobRecord>[] = [];
    for (const { record } of this.#jobs.values()) {
      if (query.status !== undefined && record.status !== query.status) continue;
      if (query.handler !== undefined && record.handler !== query.handler) continue;
      if (query.scheduleId !== undefined && record.scheduleId !== query.scheduleId) continue;
      entries.push({ score: record.createdAt, id: record.id, item: record });
    }
    return clone(paginate(entries, query.limit, query.cursor));
  }

  async beginRun(spec: JobSpec, leaseMs: number): Promise<BeginRunResult> {
    const now = this.#now();
    const stored = this.#jobOrCreate(spec);
    if (!stored) return { kind: "missing" };
    this.#outbox.delete(spec.id);
    const job = stored.record;
    if (FINAL_JOB_STATUSES.includes(job.status)) return { kind: "final", job: clone(job) };
    if (job.status === "running" && stored.leaseUntil !== undefined && stored.leaseUntil > now) {
      return { kind: "busy", retryAfterMs: stored.leaseUntil - now };
    }
    if (job.overlap === "skip" && job.scheduleId !== undefined) {
      const holder = live(this.#running, job.scheduleId, now);
      if (holder && holder.value !== job.id) {
        // Only an occurrence that never started may be skipped; a retry of a started one waits.
        if (job.attempts > 0) return { kind: "busy", retryAfterMs: holder.expiresAt - now };
        job.status = "skipped";
        job.finishedAt = now;
        delete stored.leaseUntil;
        this.#retain(stored, now);
        return { kind: "skipped", job: clone(job) };
      }
      this.#running.set(job.scheduleId, { value: job.id, expiresAt: now + leaseMs });
    }
    job.status = "running";
    job.attempts += 1;
    job.startedAt = now;
    delete job.finishedAt;
    stored.leaseUntil = now + leaseMs;
    return { kind: "run", attempt: job.attempts, job: clone(job) };
  }

  async finishRun(id: string, attempt: number, outcome: RunOutcome): Promise<FinishRunResult> {
    const now = this.#now();
    const stored = this.#jobs.get(id);
    if (!stored) return { kind: "stale", job: null };
    const job = stored.record;
    if (job.status !== "running" || job.attempts !== attempt) {
      return { kind: "stale", job: clone(job) };
    }
    this.#releaseRun(stored);
    job.finishedAt = now;
    if (outcome.ok) {
      job.status = "succeeded";
      job.result = clone(outcome.result);
      delete job.error;
      this.#retain(stored, now);
    } else if (outcome.final) {
      this.#kill(stored, outcome.error, now);
    } else {
      job.status = "failed";
      job.error = clone(outcome.error);
    }
    return { kind: "ok", job: clone(job) };
  }

  async markDead(spec: JobSpec, error: JobError): Promise<JobRecord | null> {
    const now = this.#now();
    const stored = this.#jobOrCreate(spec);
    if (!stored) return null;
    const job = stored.record;
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
    job.finishedAt = now;
    this.#kill(stored, clone(error), now);
    return clone(job);
  }

  async listDead(query: { limit: number; cursor?: string }): Promise<Page<JobRecord>> {
    this.#now();
    const entries: Scored<JobRecord>[] = [];
    for (const [id, diedAt] of this.#dead) {
      const stored = this.#jobs.get(id);
      if (stored) entries.push({ score: diedAt, id, item: stored.record });
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
    return { job: clone(job), message: clone(message) };
  }

  async deleteDead(id: string): Promise<boolean> {
    this.#now();
    if (!this.#dead.has(id)) return false;
    this.#dead.delete(id);
    this.#jobs.delete(id);
    return true;
  }

  // ── schedules ────────────────────────────────────────────────────────────

  async putSchedule(schedule: ScheduleRecord, expectRev?: number): Promise<PutScheduleResult> {
    this.#now();
    const stored = this.#schedules.get(schedule.id);
    if (expectRev !== undefined && stored?.rev !== expectRev) {
      return { kind: "conflict", schedule: stored ? clone(stored) : null };
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
    return { kind: "ok", created: !stored, schedule: clone(record) };
  }

  async getSchedule(id: string): Promise<ScheduleRecord | null> {
    this.#now();
    const stored = this.#schedules.get(id);
    return stored ? clone(stored) : null;
  }

  async listSchedules(query: ListSchedulesQuery): Promise<Page<ScheduleRecord>> {
    this.#now();
    const entries: Scored<ScheduleRecord>[] = [];
    for (const schedule of this.#schedules.values()) {
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
    return this.#schedules.delete(id);
  }

  async listRuns(
    scheduleId: string,
    query: { limit: number; cursor?: string },
  ): Promise<Page<JobRecord>> {
    this.#now();
    const entries: Scored<JobRecord>[] = [];
    for (const { record } of this.#jobs.values()) {
      if (record.scheduleId !== scheduleId) continue;
      entries.push({ score: record.fireAt ?? record.runAt, id: record.id, item: record });
    }
    return clone(paginate(entries, query.limit, query.cursor));
  }

  // ── internals ────────────────────────────────────────────────────────────

  /** Reads the clock and drops whatever expired (amortised: only when something may have). */
  #now(): number {
    const now = this.#clock();
    if (now < this.#sweepAt) return now;
    let next = Number.POSITIVE_INFINITY;
    for (const [id, stored] of this.#jobs) {
      if (stored.expiresAt === undefined) continue;
      if (stored.expiresAt <= now) {
        this.#jobs.delete(id);
        this.#dead.delete(id);
      } else next = Math.min(next, stored.expiresAt);
    }
    for (const [key, entry] of this.#idempotency) {
      if (entry.expiresAt <= now) this.#idempotency.delete(key);
      else next = Math.min(next, entry.expiresAt);
    }
    this.#sweepAt = next;
    return now;
  }

  /** Compare-and-delete: removes a message only if it still carries the acked dedup id. */
  #ack(acks: OutboxAck[]): void {
    for (const { id, dedupId } of acks) {
      if (this.#outbox.get(id)?.dedupId === dedupId) this.#outbox.delete(id);
    }
  }

  #takeLease(name: string, ttlMs: number, now: number): number {
    const token = ++this.#leaseSeq;
    this.#leases.set(name, { value: token, expiresAt: now + ttlMs });
    return token;
  }

  /** Active schedules due by `until`, earliest first (ties by id, like a sorted set). */
  #due(until: number): ScheduleRecord[] {
    return [...this.#schedules.values()]
      .filter((s) => s.status === "active" && s.nextRunAt !== null && s.nextRunAt <= until)
      .sort((a, b) => (a.nextRunAt ?? 0) - (b.nextRunAt ?? 0) || compareIds(a.id, b.id));
  }

  /**
   * The stored job, or a new one from `spec` for an occurrence (created by its first delivery).
   * `undefined` for a missing job without `scheduleId`: it existed before it was published, so it
   * expired (cancelled or finished) and must not come back.
   */
  #jobOrCreate(spec: JobSpec): StoredJob | undefined {
    let stored = this.#jobs.get(spec.id);
    if (!stored) {
      if (spec.scheduleId === undefined) return undefined;
      stored = { record: { ...clone(spec), status: "queued", attempts: 0 } };
      this.#jobs.set(spec.id, stored);
    }
    return stored;
  }

  /** Starts the retention clock of a job that reached a final state. */
  #retain(stored: StoredJob, now: number): void {
    stored.expiresAt = now + this.#retention.jobMs;
    this.#sweepAt = Math.min(this.#sweepAt, stored.expiresAt);
  }

  /** Drops the job's run lease and, if it holds it, its schedule's overlap lease. */
  #releaseRun(stored: StoredJob): void {
    delete stored.leaseUntil;
    const { scheduleId, id } = stored.record;
    if (scheduleId !== undefined && this.#running.get(scheduleId)?.value === id) {
      this.#running.delete(scheduleId);
    }
  }

  #kill(stored: StoredJob, error: JobError, now: number): void {
    stored.record.status = "dead";
    stored.record.error = clone(error);
    this.#dead.set(stored.record.id, now);
    this.#retain(stored, now);
  }
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
  const { status, attempts, startedAt, finishedAt, result, error, ...spec } = job;
  return spec;
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

const clone: <T>(value: T) => T = structuredClone;
