/**
 * @module
 * The broker: accepts jobs and schedules. Submit is one store operation (one Redis round trip)
 * plus one publish; schedule changes are optimistic read-modify-writes on the schedule's `rev`.
 */
import { parseDuration } from "../core/duration.ts";
import { ConflictError, NotFoundError, UnprocessableError } from "../core/errors.ts";
import type { JobRecord, NewJob, ScheduleDef, ScheduleRecord } from "../core/model.ts";
import { firstRunAt, parseSchedule, ScheduleError } from "../core/schedule/index.ts";
import {
  type CreateScheduleInput,
  createScheduleSchema,
  type PatchScheduleInput,
  parseOrThrow,
  patchScheduleSchema,
  type SubmitJobInput,
  submitJobSchema,
} from "../core/schemas.ts";
import type { Store } from "../store/port.ts";
import type { Transport } from "../transport/port.ts";
import type { Handlers } from "./handlers.ts";
import { newJobId } from "./ids.ts";
import type { ResolvedOptions } from "./options.ts";
import { publishAll } from "./publish.ts";

/** What an API key may do (DESIGN §6). `admin` may do everything; an observer key has `read` only. */
export type Scope = "jobs:write" | "schedules:write" | "read" | "admin";

/** Who is acting; `"default"` when auth is off. */
export interface Actor {
  tenant?: string;
  /** The key's scopes; undefined when auth is off (everything allowed). */
  scopes?: readonly Scope[];
}

/** What the broker needs. */
export interface BrokerDeps {
  store: Store;
  transport: Transport;
  handlers: Handlers;
  options: ResolvedOptions;
  /** Hands background work to the platform (`ctx.waitUntil`); by default it is awaited. */
  defer?: (work: Promise<unknown>) => void;
}

/** Attempts at an optimistic schedule update before giving up with 409. */
const CAS_ATTEMPTS = 5;

/**
 * Accepts jobs and schedules.
 *
 * @example
 * const broker = new Broker({ store, transport, handlers, options: resolveOptions() });
 * const { job } = await broker.submit({ handler: "email.send", input: { to: "a@b.c" } });
 */
export class Broker {
  constructor(private readonly deps: BrokerDeps) {}

  /** Submit a one-off job: one atomic store write, then a publish (a failed publish is recovered by the tick). */
  async submit(
    body: SubmitJobInput,
    actor: Actor = {},
  ): Promise<{ job: JobRecord; replayed: boolean }> {
    const req = parseOrThrow(submitJobSchema, body, "job");
    const handler = this.handler(req.handler);
    const input = req.input === undefined ? null : req.input;
    if (handler.input) {
      const parsed = handler.input.safeParse(input);
      if (!parsed.success) {
        throw new UnprocessableError(
          "invalid_input",
          `input does not match handler "${req.handler}"`,
          {
            errors: parsed.error.issues.map((i) => ({
              path: `input.${i.path.join(".")}`,
              message: i.message,
            })),
          },
        );
      }
    }
    const { jobs, tick, logger } = this.deps.options;
    const job: NewJob = {
      id: newJobId(),
      tenant: actor.tenant ?? "default",
      handler: req.handler,
      input,
      priority: req.priority ?? jobs.priority,
      timeoutMs: req.timeout ?? durationOr(handler.timeout, jobs.timeoutMs),
      retries: req.retries ?? handler.retries ?? jobs.retries,
      tags: req.tags ?? [],
      ...(req.idempotencyKey ? { idempotencyKey: req.idempotencyKey } : {}),
    };
    const result = await this.deps.store.submitJob(job, {
      ...(req.runAt != null ? { runAt: req.runAt } : {}),
      delayMs: req.delay ?? 0,
      recoverGraceMs: tick.recoverGraceMs,
    });
    if (result.message) {
      const publish = publishAll(this.deps.transport, [result.message], 1, logger);
      if (this.deps.defer) this.deps.defer(publish);
      else await publish;
    }
    return { job: result.job, replayed: result.replayed };
  }

  /** Cancel a queued job. */
  async cancel(id: string): Promise<JobRecord> {
    const res = await this.deps.store.cancelJob(id);
    if (res.kind === "missing") throw new NotFoundError("job", id);
    if (res.kind === "conflict") {
      throw new ConflictError(
        "job_not_queued",
        `job "${id}" is ${res.job.status}; only queued jobs can be cancelled`,
      );
    }
    return res.job;
  }

  /** Re-run a dead job. */
  async retryDead(id: string): Promise<JobRecord> {
    const res = await this.deps.store.retryDead(id, {
      recoverGraceMs: this.deps.options.tick.recoverGraceMs,
    });
    if (!res) throw new NotFoundError("dead job", id);
    await publishAll(this.deps.transport, [res.message], 1, this.deps.options.logger);
    return res.job;
  }

  /**
   * Create a schedule, or replace the one with the same `id`. A replacement keeps `runs`,
   * `lastRunAt` and a `paused` status; when the timing is unchanged it keeps `nextRunAt` too.
   */
  async createSchedule(
    body: CreateScheduleInput,
    actor: Actor = {},
  ): Promise<{ schedule: ScheduleRecord; created: boolean }> {
    const req = parseOrThrow(createScheduleSchema, body, "schedule");
    this.handler(req.handler);
    const id = req.id ?? newJobId().replace(/^j_/, "s_");
    const { jobs } = this.deps.options;
    const handler = this.deps.handlers[req.handler];
    const def: ScheduleDef = {
      id,
      tenant: actor.tenant ?? "default",
      handler: req.handler,
      schedule: req.schedule.trim(),
      tz: req.tz ?? "UTC",
      input: req.input === undefined ? null : req.input,
      priority: req.priority ?? jobs.priority,
      timeoutMs: req.timeout ?? durationOr(handler?.timeout, jobs.timeoutMs),
      retries: req.retries ?? handler?.retries ?? jobs.retries,
      ...(req.maxRuns != null ? { maxRuns: req.maxRuns } : {}),
      ...(req.startAt != null ? { startAt: req.startAt } : {}),
      ...(req.endAt != null ? { endAt: req.endAt } : {}),
      misfire: req.misfire ?? "once",
      overlap: req.overlap ?? "allow",
      jitterMs: req.jitter ?? 0,
      tags: req.tags ?? [],
    };
    return this.writeSchedule(id, () => def, true);
  }

  /** Change fields of a schedule; `nextRunAt` is recomputed when its timing changed. */
  async updateSchedule(id: string, body: PatchScheduleInput): Promise<ScheduleRecord> {
    const patch = parseOrThrow(patchScheduleSchema, body, "schedule patch");
    if (patch.handler) this.handler(patch.handler);
    const { schedule } = await this.writeSchedule(
      id,
      (existing) => {
        if (!existing) throw new NotFoundError("schedule", id);
        const next: ScheduleDef = { ...defOf(existing) };
        if (patch.handler !== undefined) next.handler = patch.handler;
        if (patch.schedule !== undefined) next.schedule = patch.schedule.trim();
        if (patch.tz !== undefined) next.tz = patch.tz;
        if (patch.input !== undefined) next.input = patch.input;
        if (patch.priority !== undefined) next.priority = patch.priority;
        if (patch.timeout !== undefined) next.timeoutMs = patch.timeout;
        if (patch.retries !== undefined) next.retries = patch.retries;
        if (patch.misfire !== undefined) next.misfire = patch.misfire;
        if (patch.overlap !== undefined) next.overlap = patch.overlap;
        if (patch.jitter !== undefined) next.jitterMs = patch.jitter;
        if (patch.tags !== undefined) next.tags = patch.tags;
        setOptional(next, "maxRuns", patch.maxRuns);
        setOptional(next, "startAt", patch.startAt);
        setOptional(next, "endAt", patch.endAt);
        if (next.startAt !== undefined && next.endAt !== undefined && next.startAt >= next.endAt) {
          throw new UnprocessableError("invalid_window", "startAt must be before endAt");
        }
        return next;
      },
      false,
    );
    return schedule;
  }

  /** Stop dispatching a schedule's occurrences until it is resumed. */
  async pauseSchedule(id: string): Promise<ScheduleRecord> {
    return this.setStatus(id, "paused");
  }

  /** Dispatch again, from now on: occurrences that fell in the pause are not replayed. */
  async resumeSchedule(id: string): Promise<ScheduleRecord> {
    return this.setStatus(id, "active");
  }

  /** Delete a schedule; its jobs already dispatched still run. */
  async deleteSchedule(id: string): Promise<void> {
    if (!(await this.deps.store.deleteSchedule(id))) throw new NotFoundError("schedule", id);
  }

  private async setStatus(id: string, status: "paused" | "active"): Promise<ScheduleRecord> {
    for (let i = 0; i < CAS_ATTEMPTS; i++) {
      const existing = await this.deps.store.getSchedule(id);
      if (!existing) throw new NotFoundError("schedule", id);
      if (existing.status === status || existing.status === "completed") return existing;
      const now = await this.deps.store.now();
      let record: ScheduleRecord = { ...existing, status, updatedAt: now };
      if (status === "active") record = withTiming(record, now, true);
      const res = await this.deps.store.putSchedule(record, existing.rev);
      if (res.kind === "ok") return res.schedule;
    }
    throw new ConflictError("schedule_busy", `schedule "${id}" kept changing; try again`);
  }

  /** Optimistic read-modify-write of one schedule. */
  private async writeSchedule(
    id: string,
    build: (existing: ScheduleRecord | null) => ScheduleDef,
    upsert: boolean,
  ): Promise<{ schedule: ScheduleRecord; created: boolean }> {
    for (let i = 0; i < CAS_ATTEMPTS; i++) {
      const existing = await this.deps.store.getSchedule(id);
      const def = build(existing);
      validateTiming(def);
      const now = await this.deps.store.now();
      const timingChanged = !existing || timingKey(defOf(existing)) !== timingKey(def);
      const base: ScheduleRecord = existing
        ? {
            ...existing,
            ...def,
            status: existing.status === "paused" ? "paused" : "active",
            updatedAt: now,
          }
        : {
            ...def,
            status: "active",
            nextRunAt: null,
            runs: 0,
            rev: 0,
            createdAt: now,
            updatedAt: now,
          };
      for (const key of ["maxRuns", "startAt", "endAt"] as const) {
        if (def[key] === undefined) delete base[key];
      }
      const record = withTiming(base, now, timingChanged);
      const res = existing
        ? await this.deps.store.putSchedule(record, existing.rev)
        : upsert
          ? await this.deps.store.putSchedule(record)
          : null;
      if (!res) throw new NotFoundError("schedule", id);
      if (res.kind === "ok") return { schedule: res.schedule, created: res.created };
    }
    throw new ConflictError("schedule_busy", `schedule "${id}" kept changing; try again`);
  }

  private handler(name: string) {
    const handler = this.deps.handlers[name];
    if (!handler) {
      throw new UnprocessableError("unknown_handler", `no handler named "${name}" is registered`);
    }
    return handler;
  }
}

/** The definition part of a schedule record. */
export function defOf(s: ScheduleRecord): ScheduleDef {
  const {
    status: _s,
    nextRunAt: _n,
    lastRunAt: _l,
    runs: _r,
    rev: _v,
    createdAt: _c,
    updatedAt: _u,
    ...def
  } = s;
  return def;
}

/** The fields that decide when a schedule fires. */
function timingKey(d: ScheduleDef): string {
  return JSON.stringify([d.schedule, d.tz, d.startAt ?? null, d.endAt ?? null, d.maxRuns ?? null]);
}

function validateTiming(def: ScheduleDef): void {
  try {
    parseSchedule(def.schedule, def.tz, def.startAt);
  } catch (error) {
    if (error instanceof ScheduleError)
      throw new UnprocessableError(error.code, error.message, { cause: error });
    throw error;
  }
}

/**
 * Recompute status and `nextRunAt`: from `now` when the timing changed (or on resume), else keep
 * the pending `nextRunAt`. Completed when `maxRuns` is reached or nothing is left before `endAt`.
 */
function withTiming(record: ScheduleRecord, now: number, recompute: boolean): ScheduleRecord {
  const exhausted = record.maxRuns !== undefined && record.runs >= record.maxRuns;
  let next = record.nextRunAt;
  if (recompute || next === null) {
    next = exhausted
      ? null
      : // Never before the last dispatched occurrence: the tick may have dispatched up to
        // now + horizon already, and those must not be sent (and counted) twice.
        firstRunAt(
          parseSchedule(record.schedule, record.tz, record.startAt),
          Math.max(now, (record.lastRunAt ?? Number.NEGATIVE_INFINITY) + 1),
          record.startAt,
        );
  }
  if (next !== null && record.endAt !== undefined && next > record.endAt) next = null;
  if (next === null) return { ...record, nextRunAt: null, status: "completed" };
  return {
    ...record,
    nextRunAt: next,
    status: record.status === "completed" ? "active" : record.status,
  };
}

function setOptional<K extends "maxRuns" | "startAt" | "endAt">(
  def: ScheduleDef,
  key: K,
  value: number | null | undefined,
): void {
  if (value === null) delete def[key];
  else if (value !== undefined) def[key] = value;
}

function durationOr(value: string | number | undefined, fallback: number): number {
  return value === undefined ? fallback : (parseDuration(value) ?? fallback);
}
