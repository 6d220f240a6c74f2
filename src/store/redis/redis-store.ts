/**
 * @module
 * `RedisStore`: the Store port on Redis. Every method is exactly one Lua script call (one round
 * trip: EVALSHA, or EVALSHA + EVAL the first time a server sees the script), so every state
 * change is atomic and the tick's cost does not grow with the number of schedules stored.
 * Admission control (quota counters, the degradation controller) and observability (counters,
 * gauges, histograms and moving averages in `{p}:metrics`, the due backlog `{p}:pending`, the
 * event stream `{p}:events`) are read and written inside those same scripts: they cost billed
 * commands, never round trips. Works with any client that can EVAL/EVALSHA: `@upstash/redis`
 * over REST, ioredis over TCP.
 */
import {
  DEFAULT_TENANT,
  type DeliveryToken,
  type JobError,
  type JobRecord,
  type JobSpec,
  type NewJob,
  type OutboxMessage,
  type ScheduleRecord,
} from "../../core/model.ts";
import { keys as buildKeys, type Keys } from "../keys.ts";
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
  Denied,
  EventsPage,
  EventsQuery,
  FinishRunResult,
  ListJobsQuery,
  ListSchedulesQuery,
  NextDueOptions,
  NextDueResult,
  OutboxAck,
  Page,
  PutScheduleResult,
  QuotaCheck,
  QuotaState,
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
  cursorArgs,
  degradationOf,
  encodeCursor,
  errorCodeOf,
  eventErrorArg,
  eventIdArg,
  fromJson,
  histogramOf,
  jobData,
  jsonArg,
  optionalArg,
  policyArg,
  type RawPage,
  scheduleDef,
  specArgs,
  toEvents,
  toInt,
  ttlArg,
  typesArg,
  windowsArg,
} from "./codec.ts";
import { ErrorCode, RedisStoreError } from "./errors.ts";
import { type LuaScript, type ScriptClient, safeEval } from "./script.ts";
import { scripts } from "./scripts.generated.ts";

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /** Anything with `eval` / `evalsha`: an `@upstash/redis` client, or `fromIoredis(ioredis)`. */
  client: ScriptClient;
  /**
   * Key prefix; every key lives under the hash tag `{prefix}` (one Redis Cluster slot).
   * @default "tw"
   */
  prefix?: string | undefined;
  /**
   * How long finished jobs and idempotency keys are kept.
   * @default { jobMs: 7 days, idempotencyMs: 24 h }
   */
  retention?: Partial<StoreRetention> | undefined;
  /**
   * How many lifecycle events the stream `{prefix}:events` keeps (exact trim on every write);
   * `0` writes no events at all (each event is one billed command).
   * @default 10_000
   */
  eventsMaxLen?: number | undefined;
}

/** Events examined at most per `events()` call (the port's bound). */
const EVENTS_BUDGET = 1_000;

type Tagged<K extends string, T> = { [P in K]: T };
type RawBeginTick =
  | { kind: "idle" | "busy"; now: number; leaseRemainingMs: number }
  | {
      kind: "leader";
      now: number;
      token: number;
      degradation: DegradationLevel;
      leaderChanged?: { previous: string | null };
      more: boolean;
      due: ScheduleRecord[];
      recover: [OutboxMessage, number][];
    };

/**
 * {@link Store} on Redis (Lua scripts, one per operation; see `lua/`).
 *
 * @example
 * import { Redis } from "@upstash/redis";
 * const store = new RedisStore({ client: Redis.fromEnv() });
 *
 * @example
 * import { Redis } from "ioredis";
 * const store = new RedisStore({ client: fromIoredis(new Redis(url)), prefix: "myapp" });
 */
export class RedisStore implements Store {
  readonly #client: ScriptClient;
  readonly #keys: Keys;
  readonly #retention: StoreRetention;
  readonly #eventsMaxLen: string;

  constructor(options: RedisStoreOptions) {
    this.#client = options.client;
    this.#keys = buildKeys(options.prefix);
    this.#eventsMaxLen = String(Math.max(0, Math.floor(options.eventsMaxLen ?? 10_000)));
    const retention = Object.fromEntries(
      Object.entries(options.retention ?? {}).filter(([, v]) => v !== undefined),
    );
    this.#retention = { ...DEFAULT_RETENTION, ...retention };
  }

  #run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<unknown> {
    return safeEval(this.#client, script, keys, args);
  }

  async now(): Promise<number> {
    return toInt(await this.#run(scripts.now, [], []));
  }

  // ── lease ────────────────────────────────────────────────────────────────

  async acquireLease(
    name: string,
    ttlMs: number,
  ): Promise<{ acquired: true; token: number } | { acquired: false; remainingMs: number }> {
    const k = this.#keys;
    const raw = await this.#run(scripts.acquireLease, [k.lease(name), k.leaseSeq], [ttlArg(ttlMs)]);
    const [acquired, value] = fromJson<[unknown, unknown]>(raw);
    return toInt(acquired) === 1
      ? { acquired: true, token: toInt(value) }
      : { acquired: false, remainingMs: toInt(value) };
  }

  async renewLease(name: string, token: number, ttlMs: number): Promise<boolean> {
    const raw = await this.#run(
      scripts.renewLease,
      [this.#keys.lease(name)],
      [String(token), ttlArg(ttlMs)],
    );
    return toInt(raw) === 1;
  }

  async releaseLease(name: string, token: number): Promise<boolean> {
    const raw = await this.#run(scripts.releaseLease, [this.#keys.lease(name)], [String(token)]);
    return toInt(raw) === 1;
  }

  // ── tick ─────────────────────────────────────────────────────────────────

  async beginTick(opts: BeginTickOptions): Promise<BeginTickResult> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.beginTick,
      [
        k.root,
        k.due,
        k.outbox,
        k.outboxMsg,
        k.lease(TICK_LEASE),
        k.leaseSeq,
        k.pending,
        k.metrics,
        k.events,
        k.degrade,
        k.leader,
      ],
      [
        ttlArg(opts.leaseMs),
        String(opts.horizonMs),
        String(Math.max(0, Math.floor(opts.limit))),
        String(Math.max(0, Math.floor(opts.recoverLimit))),
        String(opts.recoverGraceMs),
        this.#eventsMaxLen,
        opts.holder ?? "",
        String(FLAP_WINDOW_MS),
        policyArg(opts.degradation),
        String(opts.reapAfterMs ?? DEFAULT_REAP_AFTER_MS),
      ],
    );
    const r = fromJson<RawBeginTick>(raw);
    if (r.kind !== "leader") return r;
    return {
      kind: "leader",
      now: r.now,
      token: r.token,
      degradation: r.degradation,
      ...(r.leaderChanged ? { leaderChanged: r.leaderChanged } : {}),
      due: r.due,
      more: r.more,
      // The outbox zset's score is the authoritative recoverAt; the stored JSON keeps the first.
      recover: r.recover.map(([message, recoverAt]) => ({ ...message, recoverAt })),
    };
  }

  async nextDue(token: number, opts: NextDueOptions): Promise<NextDueResult> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.nextDue,
      [k.root, k.due, k.outbox, k.outboxMsg, k.lease(TICK_LEASE)],
      [
        String(token),
        ttlArg(opts.leaseMs),
        String(opts.horizonMs),
        String(Math.max(0, Math.floor(opts.limit))),
        String(opts.reapAfterMs ?? DEFAULT_REAP_AFTER_MS),
        ...ackArgs(opts.ackIds),
      ],
    );
    if (errorCodeOf(raw) === ErrorCode.LeaseLost) return { kind: "fenced" };
    this.#expectNoCode("nextDue", raw);
    const r = fromJson<{ now: number; more: boolean; due: ScheduleRecord[] }>(raw);
    return { kind: "ok", now: r.now, due: r.due, more: r.more };
  }

  async commitTick(token: number, commits: ScheduleCommit[]): Promise<CommitResult> {
    const k = this.#keys;
    const args: string[] = [String(token), this.#eventsMaxLen, String(commits.length)];
    for (const c of commits) {
      const job = c.messages[0]?.job;
      const eventMembers = job
        ? [
            `"scheduleId":${JSON.stringify(c.id)}`,
            `"handler":${JSON.stringify(job.handler)}`,
            `"tenant":${JSON.stringify(job.tenant)}`,
          ].join(",")
        : "";
      args.push(
        c.id,
        String(c.rev),
        optionalArg(c.nextRunAt),
        String(c.runsAdded),
        optionalArg(c.lastRunAt),
        optionalArg(c.dueAt),
        eventMembers,
        String(c.messages.length),
      );
      for (const m of c.messages) {
        args.push(m.id, String(m.recoverAt), String(m.job.runAt), JSON.stringify(m));
      }
    }
    const raw = await this.#run(
      scripts.commitTick,
      [k.root, k.due, k.outbox, k.outboxMsg, k.lease(TICK_LEASE), k.pending, k.metrics, k.events],
      args,
    );
    if (errorCodeOf(raw) === ErrorCode.LeaseLost) return { kind: "fenced" };
    this.#expectNoCode("commitTick", raw);
    const flags = fromJson<unknown[]>(raw);
    const applied: string[] = [];
    const skipped: string[] = [];
    commits.forEach((c, i) => {
      (toInt(flags[i]) === 1 ? applied : skipped).push(c.id);
    });
    return { kind: "ok", applied, skipped };
  }

  async ackOutbox(acks: OutboxAck[], reapAfterMs = DEFAULT_REAP_AFTER_MS): Promise<void> {
    if (acks.length === 0) return;
    await this.#run(
      scripts.ackOutbox,
      [this.#keys.outbox, this.#keys.outboxMsg],
      [String(reapAfterMs), ...ackArgs(acks)],
    );
  }

  async endTick(
    token: number,
    ackIds: OutboxAck[],
    report?: { tickMs: number; acquireMs: number },
    reapAfterMs = DEFAULT_REAP_AFTER_MS,
  ): Promise<void> {
    const k = this.#keys;
    await this.#run(
      scripts.endTick,
      [k.outbox, k.outboxMsg, k.lease(TICK_LEASE), k.metrics],
      [
        String(token),
        report ? String(Math.max(0, report.tickMs)) : "",
        report ? String(Math.max(0, report.acquireMs)) : "",
        String(reapAfterMs),
        ...ackArgs(ackIds),
      ],
    );
  }

  // ── jobs ─────────────────────────────────────────────────────────────────

  async submitJob(
    job: NewJob,
    timing: { runAt?: number; delayMs: number; recoverGraceMs: number },
    admission?: Admission,
  ): Promise<SubmitResult | SubmitDenied> {
    const k = this.#keys;
    const data = jobData(job);
    const degradation = admission?.degradation;
    const raw = await this.#run(
      scripts.submitJob,
      [k.root, k.outbox, k.outboxMsg, k.pending, k.metrics, k.events, k.degrade],
      [
        job.id,
        JSON.stringify(job.id),
        data,
        optionalArg(timing.runAt),
        String(timing.delayMs),
        String(timing.recoverGraceMs),
        job.tenant,
        job.idempotencyKey ?? "",
        ttlArg(this.#retention.idempotencyMs),
        job.handler,
        job.scheduleId ?? "",
        job.overlap ?? "",
        optionalArg(job.fireAt),
        this.#eventsMaxLen,
        policyArg(degradation),
        String(degradation?.degradedDelayMs ?? 0),
        degradation?.critical ?? "reject",
        String(degradation?.criticalDelayMs ?? 0),
        String(degradation?.retryAfterMs ?? 0),
        ...quotaArgs(admission?.quota),
      ],
    );
    const r = fromJson<
      | Tagged<"replayed", JobRecord>
      | Tagged<"denied", Denied>
      | {
          createdAt: number;
          runAt: number;
          quota?: QuotaState;
          degradation?: { level: DegradationLevel; delayedMs: number };
        }
    >(raw);
    if ("replayed" in r) return { job: r.replayed, replayed: true };
    if ("denied" in r) return { denied: r.denied };
    // The stored spec is the JSON text plus the stamps; rebuild it the way a read would.
    const spec = (): JobSpec => ({ ...JSON.parse(data), createdAt: r.createdAt, runAt: r.runAt });
    const message: OutboxMessage = {
      id: job.id,
      dedupId: job.id,
      job: spec(),
      notBefore: r.runAt,
      recoverAt: r.runAt + timing.recoverGraceMs,
    };
    const result: SubmitResult = {
      job: { ...spec(), status: "queued", attempts: 0 },
      message,
      replayed: false,
    };
    if (r.quota) result.quota = r.quota;
    if (r.degradation) result.degradation = r.degradation;
    return result;
  }

  async getJob(id: string): Promise<JobRecord | null> {
    const raw = await this.#run(scripts.getJob, [this.#keys.root], [id]);
    return raw === null || raw === undefined ? null : fromJson<JobRecord>(raw);
  }

  async cancelJob(id: string): Promise<CancelResult> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.cancelJob,
      [k.root, k.outbox, k.outboxMsg, k.expiring, k.pending, k.metrics, k.events],
      [id, retentionArg(this.#retention), this.#eventsMaxLen],
    );
    if (errorCodeOf(raw) === ErrorCode.JobNotFound) return { kind: "missing" };
    this.#expectNoCode("cancelJob", raw);
    const r = fromJson<Tagged<"ok", JobRecord> | Tagged<"conflict", JobRecord>>(raw);
    return "ok" in r ? { kind: "ok", job: r.ok } : { kind: "conflict", job: r.conflict };
  }

  async listJobs(query: ListJobsQuery): Promise<Page<JobRecord>> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.listJobs,
      [k.root, k.jobs(query.tenant ?? DEFAULT_TENANT)],
      [
        limitArg(query.limit),
        ...cursorArgs(query.cursor),
        query.status ?? "",
        query.handler ?? "",
        query.scheduleId ?? "",
      ],
    );
    return toPage(fromJson<RawPage<JobRecord>>(raw));
  }

  async beginRun(
    spec: JobSpec,
    leaseMs: number,
    reapAfterMs = DEFAULT_REAP_AFTER_MS,
    token?: DeliveryToken,
  ): Promise<BeginRunResult> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.beginRun,
      [k.root, k.outbox, k.outboxMsg, k.expiring, k.pending, k.metrics, k.events],
      [
        ...specArgs(spec),
        ttlArg(leaseMs),
        retentionArg(this.#retention),
        this.#eventsMaxLen,
        String(reapAfterMs),
        ...tokenArgs(token),
      ],
    );
    return fromJson<BeginRunResult>(raw);
  }

  async finishRun(
    id: string,
    attempt: number,
    outcome: RunOutcome,
    reapAfterMs = DEFAULT_REAP_AFTER_MS,
  ): Promise<FinishRunResult> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.finishRun,
      [k.root, k.expiring, k.pending, k.metrics, k.events, k.outbox, k.outboxMsg],
      [
        id,
        String(attempt),
        outcome.ok ? "1" : "0",
        outcome.ok ? jsonArg(outcome.result) : "",
        outcome.ok ? "" : JSON.stringify(outcome.error),
        !outcome.ok && outcome.final ? "1" : "0",
        retentionArg(this.#retention),
        this.#eventsMaxLen,
        outcome.ok ? "" : eventErrorArg(outcome.error),
        String(reapAfterMs),
      ],
    );
    if (errorCodeOf(raw) === ErrorCode.JobNotFound) return { kind: "stale", job: null };
    this.#expectNoCode("finishRun", raw);
    const r = fromJson<Tagged<"ok", JobRecord> | Tagged<"stale", JobRecord>>(raw);
    return "ok" in r ? { kind: "ok", job: r.ok } : { kind: "stale", job: r.stale };
  }

  async markDead(
    spec: JobSpec,
    error: JobError,
    expect?: { attempts: number },
    token?: DeliveryToken,
  ): Promise<JobRecord | null> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.markDead,
      [k.root, k.outbox, k.outboxMsg, k.expiring, k.pending, k.metrics, k.events],
      [
        ...specArgs(spec),
        JSON.stringify(error),
        retentionArg(this.#retention),
        this.#eventsMaxLen,
        eventErrorArg(error),
        expect === undefined ? "" : String(expect.attempts),
        ...tokenArgs(token),
      ],
    );
    return fromJson<JobRecord | null>(raw) ?? null;
  }

  async listDead(query: DeadQuery): Promise<Page<JobRecord>> {
    const raw = await this.#run(
      scripts.listDead,
      [this.#keys.root, this.#keys.dlq(query.tenant ?? DEFAULT_TENANT)],
      [limitArg(query.limit), ...cursorArgs(query.cursor)],
    );
    return toPage(fromJson<RawPage<JobRecord>>(raw));
  }

  async retryDead(
    id: string,
    timing: { recoverGraceMs: number },
  ): Promise<{ job: JobRecord; message: OutboxMessage } | null> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.retryDead,
      [k.root, k.outbox, k.outboxMsg, k.expiring, k.pending, k.metrics, k.events],
      [id, JSON.stringify(id), String(timing.recoverGraceMs), this.#eventsMaxLen],
    );
    if (errorCodeOf(raw) === ErrorCode.JobNotDead) return null;
    this.#expectNoCode("retryDead", raw);
    return fromJson<{ job: JobRecord; message: OutboxMessage }>(raw);
  }

  async deleteDead(id: string): Promise<boolean> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.deleteDead,
      [k.root, k.expiring],
      [id, ttlArg(this.#retention.jobMs)],
    );
    return toInt(raw) === 1;
  }

  // ── schedules ────────────────────────────────────────────────────────────

  async putSchedule(
    schedule: ScheduleRecord,
    expectRev?: number,
    admission?: Pick<Admission, "quota">,
  ): Promise<PutScheduleResult> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.putSchedule,
      [k.root, k.due, k.schedules(schedule.tenant), k.revSeq],
      [
        schedule.id,
        scheduleDef(schedule),
        schedule.status,
        optionalArg(schedule.nextRunAt),
        optionalArg(schedule.lastRunAt),
        String(schedule.runs),
        String(schedule.createdAt),
        String(schedule.updatedAt),
        schedule.handler,
        optionalArg(expectRev),
        ...quotaArgs(admission?.quota),
      ],
    );
    const r = fromJson<
      | { created: boolean; schedule: ScheduleRecord; quota?: QuotaState }
      | Tagged<"conflict", ScheduleRecord | null>
      | Tagged<"denied", Denied>
    >(raw);
    if ("conflict" in r) return { kind: "conflict", schedule: r.conflict };
    if ("denied" in r) return { kind: "denied", denied: r.denied };
    return {
      kind: "ok",
      created: r.created,
      schedule: r.schedule,
      ...(r.quota ? { quota: r.quota } : {}),
    };
  }

  async getSchedule(id: string): Promise<ScheduleRecord | null> {
    const raw = await this.#run(scripts.getSchedule, [this.#keys.root], [id]);
    return raw === null || raw === undefined ? null : fromJson<ScheduleRecord>(raw);
  }

  async listSchedules(query: ListSchedulesQuery): Promise<Page<ScheduleRecord>> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.listSchedules,
      [k.root, k.schedules(query.tenant ?? DEFAULT_TENANT)],
      [limitArg(query.limit), ...cursorArgs(query.cursor), query.status ?? "", query.handler ?? ""],
    );
    return toPage(fromJson<RawPage<ScheduleRecord>>(raw));
  }

  async deleteSchedule(id: string): Promise<boolean> {
    const k = this.#keys;
    const raw = await this.#run(scripts.deleteSchedule, [k.root, k.due, k.revSeq], [id]);
    return toInt(raw) === 1;
  }

  async listRuns(
    scheduleId: string,
    query: { limit: number; cursor?: string },
  ): Promise<Page<JobRecord>> {
    const raw = await this.#run(
      scripts.listRuns,
      [this.#keys.root],
      [scheduleId, limitArg(query.limit), ...cursorArgs(query.cursor)],
    );
    return toPage(fromJson<RawPage<JobRecord>>(raw));
  }

  // ── observability ──────────────────────────────────────────────────────

  async stats(degradation?: DegradationPolicy): Promise<StoreStats> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.stats,
      [k.metrics, k.outbox, k.pending, k.lease(TICK_LEASE), k.leader, k.degrade, k.events],
      [policyArg(degradation), this.#eventsMaxLen],
    );
    const r = fromJson<RawStats>(raw);
    const m = r.metrics;
    const n = (field: string) => Number(m[field] ?? 0);
    const l = r.leader;
    return {
      now: r.now,
      jobs: { queued: n("g:queued"), running: n("g:running"), failed: n("g:failed") },
      totals: {
        submitted: n("t:submitted"),
        dispatched: n("t:dispatched"),
        recovered: n("t:recovered"),
        started: n("t:started"),
        succeeded: n("t:succeeded"),
        failed: n("t:failed"),
        dead: n("t:dead"),
        cancelled: n("t:cancelled"),
        skipped: n("t:skipped"),
        retried: n("t:retried"),
        ticks: n("t:ticks"),
      },
      outbox: r.outbox,
      backlog: r.backlog,
      dispatchLagMs: histogramOf(m, "lag"),
      handlerDurationMs: histogramOf(m, "dur"),
      tickDurationMs: histogramOf(m, "tick"),
      leaseAcquisitionMs: histogramOf(m, "acq"),
      averages: { lagMs: n("avg:lag"), failureRate: n("avg:fail") },
      leader: {
        holder: l.holder ?? null,
        active: r.leaseRemainingMs !== -2,
        leaseRemainingMs: Math.max(0, r.leaseRemainingMs),
        changes: Number(l.changes ?? 0),
        flaps: Number(l.flaps ?? 0),
        acquiredAt: Number(l.acquiredAt ?? 0),
      },
      degradation: degradationOf(r.degradation),
    };
  }

  async events(query: EventsQuery): Promise<EventsPage> {
    const raw = await this.#run(
      scripts.events,
      [this.#keys.events],
      [
        eventIdArg(query.after),
        String(Math.max(0, Math.floor(query.limit))),
        typesArg(query.types),
        String(EVENTS_BUDGET),
      ],
    );
    const r = fromJson<{ events: [string, Omit<TickEvent, "id">][]; last?: string }>(raw);
    const page: EventsPage = { events: toEvents(r.events) };
    if (r.last) page.last = r.last;
    return page;
  }

  /** Throws for an error code the operation does not map to a result. */
  #expectNoCode(operation: string, raw: unknown): void {
    const code = errorCodeOf(raw);
    if (code !== undefined) {
      throw new RedisStoreError(operation, `unexpected error code ${code}`, { code });
    }
  }
}

/** What the `stats` script answers: hashes as field → text. */
interface RawStats {
  now: number;
  metrics: Record<string, string>;
  outbox: number;
  backlog: number;
  leaseRemainingMs: number;
  leader: Record<string, string>;
  degradation: Record<string, string>;
}

/** A quota check as the two script arguments: key (`''` = none) and windows. */
function quotaArgs(quota: QuotaCheck | undefined): [string, string] {
  return quota ? [quota.key, windowsArg(quota.windows)] : ["", ""];
}

/** Outbox acks as script arguments: id, dedupId pairs. */
function ackArgs(acks: OutboxAck[]): string[] {
  return acks.flatMap((a) => [a.id, a.dedupId]);
}

function limitArg(limit: number): string {
  return String(Math.max(0, Math.floor(limit)));
}

function toPage<T>(raw: RawPage<T>): Page<T> {
  const page: Page<T> = { items: raw.items };
  if (raw.cursor) page.cursor = encodeCursor(raw.cursor);
  return page;
}

/** A delivery token as the `beginRun` and `markDead` scripts take it: id and expiry, or none. */
function tokenArgs(token: DeliveryToken | undefined): [string, string] {
  return token ? [token.id, String(Math.floor(token.expiresAt))] : ["", "0"];
}

/** Retention as the scripts take it: `jobMs maxJobs maxRuns`, 0 for no cap. */
function retentionArg(retention: StoreRetention): string {
  const cap = (n: number | undefined) =>
    n !== undefined && Number.isFinite(n) ? Math.max(0, Math.floor(n)) : 0;
  return `${ttlArg(retention.jobMs)} ${cap(retention.maxFinishedJobs)} ${cap(retention.maxRunsPerSchedule)}`;
}
