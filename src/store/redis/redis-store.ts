/**
 * @module
 * `RedisStore`: the Store port on Redis. Every method is exactly one Lua script call (one round
 * trip: EVALSHA, or EVALSHA + EVAL the first time a server sees the script), so every state
 * change is atomic and the tick's cost does not grow with the number of schedules stored.
 * Works with any client that can EVAL/EVALSHA: `@upstash/redis` over REST, ioredis over TCP.
 */
import type {
  JobError,
  JobRecord,
  JobSpec,
  NewJob,
  OutboxMessage,
  ScheduleRecord,
} from "../../core/model.ts";
import { keys as buildKeys, type Keys } from "../keys.ts";
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
import {
  cursorArgs,
  encodeCursor,
  errorCodeOf,
  fromJson,
  jobData,
  jsonArg,
  optionalArg,
  type RawPage,
  scheduleDef,
  specArgs,
  toInt,
  ttlArg,
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
  prefix?: string;
  /**
   * How long finished jobs and idempotency keys are kept.
   * @default { jobMs: 7 days, idempotencyMs: 24 h }
   */
  retention?: Partial<StoreRetention>;
}

type Tagged<K extends string, T> = { [P in K]: T };
type RawBeginTick =
  | { kind: "idle" | "busy"; now: number; leaseRemainingMs: number }
  | {
      kind: "leader";
      now: number;
      token: number;
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

  constructor(options: RedisStoreOptions) {
    this.#client = options.client;
    this.#keys = buildKeys(options.prefix);
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
      [k.root, k.due, k.outbox, k.outboxMsg, k.lease(TICK_LEASE), k.leaseSeq],
      [
        ttlArg(opts.leaseMs),
        String(opts.horizonMs),
        String(Math.max(0, Math.floor(opts.limit))),
        String(Math.max(0, Math.floor(opts.recoverLimit))),
        String(opts.recoverGraceMs),
      ],
    );
    const r = fromJson<RawBeginTick>(raw);
    if (r.kind !== "leader") return r;
    return {
      kind: "leader",
      now: r.now,
      token: r.token,
      due: r.due,
      more: r.more,
      // The outbox zset's score is the authoritative recoverAt; the stored JSON keeps the first.
      recover: r.recover.map(([message, recoverAt]) => ({ ...message, recoverAt })),
    };
  }

  async nextDue(
    token: number,
    opts: { leaseMs: number; horizonMs: number; limit: number; ackIds: OutboxAck[] },
  ): Promise<NextDueResult> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.nextDue,
      [k.root, k.due, k.outbox, k.outboxMsg, k.lease(TICK_LEASE)],
      [
        String(token),
        ttlArg(opts.leaseMs),
        String(opts.horizonMs),
        String(Math.max(0, Math.floor(opts.limit))),
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
    const args: string[] = [String(token), String(commits.length)];
    for (const c of commits) {
      args.push(
        c.id,
        String(c.rev),
        optionalArg(c.nextRunAt),
        String(c.runsAdded),
        optionalArg(c.lastRunAt),
        String(c.messages.length),
      );
      for (const m of c.messages) args.push(m.id, String(m.recoverAt), JSON.stringify(m));
    }
    const raw = await this.#run(
      scripts.commitTick,
      [k.root, k.due, k.outbox, k.outboxMsg, k.lease(TICK_LEASE)],
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

  async ackOutbox(acks: OutboxAck[]): Promise<void> {
    if (acks.length === 0) return;
    await this.#run(scripts.ackOutbox, [this.#keys.outbox, this.#keys.outboxMsg], ackArgs(acks));
  }

  async endTick(token: number, ackIds: OutboxAck[]): Promise<void> {
    const k = this.#keys;
    await this.#run(
      scripts.endTick,
      [k.outbox, k.outboxMsg, k.lease(TICK_LEASE)],
      [String(token), ...ackArgs(ackIds)],
    );
  }

  // ── jobs ─────────────────────────────────────────────────────────────────

  async submitJob(
    job: NewJob,
    timing: { runAt?: number; delayMs: number; recoverGraceMs: number },
  ): Promise<SubmitResult> {
    const k = this.#keys;
    const data = jobData(job);
    const raw = await this.#run(
      scripts.submitJob,
      [k.root, k.jobs, k.outbox, k.outboxMsg],
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
      ],
    );
    const r = fromJson<Tagged<"replayed", JobRecord> | { createdAt: number; runAt: number }>(raw);
    if ("replayed" in r) return { job: r.replayed, replayed: true };
    // The stored spec is the JSON text plus the stamps; rebuild it the way a read would.
    const spec = (): JobSpec => ({ ...JSON.parse(data), createdAt: r.createdAt, runAt: r.runAt });
    const message: OutboxMessage = {
      id: job.id,
      dedupId: job.id,
      job: spec(),
      notBefore: r.runAt,
      recoverAt: r.runAt + timing.recoverGraceMs,
    };
    return { job: { ...spec(), status: "queued", attempts: 0 }, message, replayed: false };
  }

  async getJob(id: string): Promise<JobRecord | null> {
    const raw = await this.#run(scripts.getJob, [this.#keys.root], [id]);
    return raw === null || raw === undefined ? null : fromJson<JobRecord>(raw);
  }

  async cancelJob(id: string): Promise<CancelResult> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.cancelJob,
      [k.root, k.outbox, k.outboxMsg, k.expiring],
      [id, ttlArg(this.#retention.jobMs)],
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
      [k.root, k.jobs],
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

  async beginRun(spec: JobSpec, leaseMs: number): Promise<BeginRunResult> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.beginRun,
      [k.root, k.jobs, k.outbox, k.outboxMsg, k.expiring],
      [...specArgs(spec), ttlArg(leaseMs), ttlArg(this.#retention.jobMs)],
    );
    return fromJson<BeginRunResult>(raw);
  }

  async finishRun(id: string, attempt: number, outcome: RunOutcome): Promise<FinishRunResult> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.finishRun,
      [k.root, k.jobs, k.dlq, k.expiring],
      [
        id,
        String(attempt),
        outcome.ok ? "1" : "0",
        outcome.ok ? jsonArg(outcome.result) : "",
        outcome.ok ? "" : JSON.stringify(outcome.error),
        !outcome.ok && outcome.final ? "1" : "0",
        ttlArg(this.#retention.jobMs),
      ],
    );
    if (errorCodeOf(raw) === ErrorCode.JobNotFound) return { kind: "stale", job: null };
    this.#expectNoCode("finishRun", raw);
    const r = fromJson<Tagged<"ok", JobRecord> | Tagged<"stale", JobRecord>>(raw);
    return "ok" in r ? { kind: "ok", job: r.ok } : { kind: "stale", job: r.stale };
  }

  async markDead(spec: JobSpec, error: JobError): Promise<JobRecord | null> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.markDead,
      [k.root, k.jobs, k.dlq, k.outbox, k.outboxMsg, k.expiring],
      [...specArgs(spec), JSON.stringify(error), ttlArg(this.#retention.jobMs)],
    );
    return fromJson<JobRecord | null>(raw) ?? null;
  }

  async listDead(query: { limit: number; cursor?: string }): Promise<Page<JobRecord>> {
    const raw = await this.#run(
      scripts.listDead,
      [this.#keys.root, this.#keys.dlq],
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
      [k.root, k.dlq, k.outbox, k.outboxMsg, k.expiring],
      [id, JSON.stringify(id), String(timing.recoverGraceMs)],
    );
    if (errorCodeOf(raw) === ErrorCode.JobNotDead) return null;
    this.#expectNoCode("retryDead", raw);
    return fromJson<{ job: JobRecord; message: OutboxMessage }>(raw);
  }

  async deleteDead(id: string): Promise<boolean> {
    const k = this.#keys;
    const raw = await this.#run(scripts.deleteDead, [k.root, k.dlq, k.jobs, k.expiring], [id]);
    return toInt(raw) === 1;
  }

  // ── schedules ────────────────────────────────────────────────────────────

  async putSchedule(schedule: ScheduleRecord, expectRev?: number): Promise<PutScheduleResult> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.putSchedule,
      [k.root, k.due, k.schedules, k.revSeq],
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
      ],
    );
    const r = fromJson<
      { created: boolean; schedule: ScheduleRecord } | Tagged<"conflict", ScheduleRecord | null>
    >(raw);
    return "conflict" in r
      ? { kind: "conflict", schedule: r.conflict }
      : { kind: "ok", created: r.created, schedule: r.schedule };
  }

  async getSchedule(id: string): Promise<ScheduleRecord | null> {
    const raw = await this.#run(scripts.getSchedule, [this.#keys.root], [id]);
    return raw === null || raw === undefined ? null : fromJson<ScheduleRecord>(raw);
  }

  async listSchedules(query: ListSchedulesQuery): Promise<Page<ScheduleRecord>> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.listSchedules,
      [k.root, k.schedules],
      [limitArg(query.limit), ...cursorArgs(query.cursor), query.status ?? "", query.handler ?? ""],
    );
    return toPage(fromJson<RawPage<ScheduleRecord>>(raw));
  }

  async deleteSchedule(id: string): Promise<boolean> {
    const k = this.#keys;
    const raw = await this.#run(
      scripts.deleteSchedule,
      [k.root, k.due, k.schedules, k.revSeq],
      [id],
    );
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

  /** Throws for an error code the operation does not map to a result. */
  #expectNoCode(operation: string, raw: unknown): void {
    const code = errorCodeOf(raw);
    if (code !== undefined) {
      throw new RedisStoreError(operation, `unexpected error code ${code}`, { code });
    }
  }
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
