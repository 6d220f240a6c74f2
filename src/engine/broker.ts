/**
 * @module
 * The broker: accepts jobs and schedules. Submit is one store operation (one Redis round trip)
 * plus one publish; schedule changes are optimistic read-modify-writes on the schedule's `rev`.
 */
import { type ManifestRules, manifestRules, quotaCheck } from "../config/manifest.ts";
import type { Manifest } from "../config/schema.ts";
import type { Scope } from "../config/scopes.ts";
import { parseDuration } from "../core/duration.ts";
import {
  ConflictError,
  ForbiddenError,
  InputTooLargeError,
  NotFoundError,
  OverloadedError,
  QuotaExceededError,
  UnprocessableError,
} from "../core/errors.ts";
import {
  DEFAULT_TENANT,
  type JobRecord,
  type NewJob,
  type ScheduleDef,
  type ScheduleRecord,
  scheduleStoreId,
  scheduleUserId,
} from "../core/model.ts";
import {
  firstRunAt,
  nextAfter,
  type ParsedSchedule,
  parseSchedule,
  ScheduleError,
} from "../core/schedule/index.ts";
import {
  type CreateScheduleInput,
  createScheduleSchema,
  type PatchScheduleInput,
  parseOrThrow,
  patchScheduleSchema,
  type SubmitJobInput,
  submitJobSchema,
} from "../core/schemas.ts";
import type {
  Admission,
  Denied,
  ListJobsQuery,
  ListSchedulesQuery,
  Page,
  QuotaCheck,
  QuotaState,
  QuotaWindow,
  Store,
} from "../store/port.ts";
import type { Transport } from "../transport/port.ts";
import {
  type HandlerDefinition,
  type HandlerInput,
  type HandlerName,
  type Handlers,
  handlerOf,
  type InputField,
  parseInput,
} from "./handlers.ts";
import { newJobId } from "./ids.ts";
import type { ResolvedOptions } from "./options.ts";
import { PublishCoalescer, publishAll } from "./publish.ts";

/**
 * What an API key may do (docs/architecture.md, "Admission control"). `admin` may do everything;
 * an observer key has `read` only.
 */
export type { Scope };

/**
 * Who is acting: the tenant that owns what it creates, what its key may do, and its manifest.
 *
 * - `tenant` — `"default"` when absent (auth off).
 * - `scopes` — the key's scopes. Absent when auth is off, or a custom `authorize` does not use
 *   scopes: everything is allowed and every tenant's records are visible. Present (a key of a
 *   configured tenant): the actor sees and changes only records of its own `tenant` — another
 *   tenant's job or schedule answers 404, as if it did not exist.
 * - `manifest` — handler patterns, quotas and limits (absent: none apply).
 * - `keyId` — the key's `id` from the configuration, for logs (never the key).
 */
export interface Actor {
  tenant?: string;
  scopes?: readonly Scope[];
  manifest?: Manifest;
  keyId?: string;
}

/**
 * True when `actor` may see a record of `tenant` (see {@link Actor}).
 *
 * @example
 * sees({ tenant: "acme", scopes: ["read"] }, "globex"); // false
 * sees({ tenant: "default" }, "globex");                // true (auth off)
 */
export function sees(actor: Actor, tenant: string): boolean {
  return actor.scopes === undefined || (actor.tenant ?? "default") === tenant;
}

/** Where a tenant's quota stands after an admitted write, with every window of the quota. */
export interface QuotaReport extends QuotaState {
  /** The quota's windows, for the `RateLimit-Policy` header. */
  policy: readonly QuotaWindow[];
}

/**
 * A job for handler `K` of the handler map `H`: the fields of `POST /v1/jobs`, with `handler`
 * limited to the map's names and `input` typed by that handler's schema (required when the schema
 * does not accept `undefined`). With an untyped map, any name and any input.
 */
export type JobRequest<
  H extends Handlers = Handlers,
  K extends HandlerName<H> = HandlerName<H>,
> = Omit<SubmitJobInput, "handler" | "input"> & { handler: K } & InputField<HandlerInput<H, K>>;

/** A schedule for handler `K` of `H`: the fields of `POST /v1/schedules`, typed like {@link JobRequest}. */
export type ScheduleRequest<
  H extends Handlers = Handlers,
  K extends HandlerName<H> = HandlerName<H>,
> = Omit<CreateScheduleInput, "handler" | "input"> & { handler: K } & InputField<
    HandlerInput<H, K>
  >;

/**
 * A change to a schedule (`PATCH /v1/schedules/:id`): `handler` limited to the map's names. Its
 * `input` is checked at run time against the handler the schedule ends up with.
 */
export type SchedulePatch<H extends Handlers = Handlers> = Omit<PatchScheduleInput, "handler"> & {
  handler?: HandlerName<H> | undefined;
};

/** Result of {@link Broker.submit}. */
export interface Submitted {
  job: JobRecord;
  /** True when the idempotency key was seen before: `job` is the first job. */
  replayed: boolean;
  /** Where the tenant's submit quota stands (absent without a quota, and on a replay). */
  quota?: QuotaReport;
}

/** Result of {@link Broker.createSchedule}. */
export interface ScheduleWritten {
  schedule: ScheduleRecord;
  created: boolean;
  /** Where the tenant's schedule quota stands (absent without a quota). */
  quota?: QuotaReport;
}

/** What the broker needs. */
export interface BrokerDeps<H extends Handlers = Handlers> {
  store: Store;
  transport: Transport;
  handlers: H;
  options: ResolvedOptions;
  /** Hands background work to the platform (`ctx.waitUntil`); by default it is awaited. */
  defer?: (work: Promise<unknown>) => void;
  /**
   * Without `defer`: answer a submit once the store wrote it, and publish in the background (see
   * {@link EngineConfig.backgroundPublish}). By default the submit waits for its publish.
   */
  backgroundPublish?: boolean;
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
export class Broker<H extends Handlers = Handlers> {
  readonly #coalescer: PublishCoalescer;

  constructor(private readonly deps: BrokerDeps<H>) {
    this.#coalescer = new PublishCoalescer(
      deps.transport,
      deps.options.tick.publishBatch,
      deps.options.logger,
      // Background publishes keep no caller waiting: they may wait for fuller batches.
      deps.backgroundPublish === true && !deps.defer,
    );
  }

  /**
   * Submit a one-off job: one atomic store write — with the actor's quota and the degradation
   * controller checked inside it — then a publish (a failed publish is recovered by the tick).
   *
   * @throws ValidationError (400) for a malformed job; ForbiddenError (403) for a handler outside
   * the actor's manifest; InputTooLargeError (413); UnprocessableError (422) for an unknown
   * handler, input its schema refuses, or a timeout over the manifest's limit;
   * QuotaExceededError (429); OverloadedError (503) while critical with `critical: "reject"`.
   */
  async submit<K extends HandlerName<H>>(
    body: JobRequest<H, K>,
    actor: Actor = {},
  ): Promise<Submitted> {
    const req = parseOrThrow(submitJobSchema, body, "job");
    const tenant = actor.tenant ?? "default";
    const rules = actor.manifest ? manifestRules(actor.manifest) : undefined;
    if (rules && !rules.submits(req.handler)) {
      throw new ForbiddenError(
        "handler_not_permitted",
        `tenant "${tenant}" may not submit jobs for handler "${req.handler}"`,
      );
    }
    const handler = this.handler(req.handler);
    const input = req.input === undefined ? null : req.input;
    checkInputSize(input, rules, "job", this.deps.options.maxInputBytes);
    checkInput(req.handler, handler, input);
    const { jobs, tick, logger } = this.deps.options;
    const job: NewJob = {
      id: newJobId(),
      tenant,
      handler: req.handler,
      input,
      priority: req.priority ?? jobs.priority,
      timeoutMs: timeoutWithin(
        req.timeout,
        durationOr(handler.timeout, jobs.timeoutMs),
        rules?.maxTimeoutMs,
      ),
      retries: req.retries ?? handler.retries ?? jobs.retries,
      tags: req.tags ?? [],
      ...(req.idempotencyKey ? { idempotencyKey: req.idempotencyKey } : {}),
    };
    const quota = quotaCheck("submit", tenant, rules?.submitWindows ?? []);
    const admission = this.admission(quota);
    const timing = {
      ...(req.runAt != null ? { runAt: req.runAt } : {}),
      delayMs: req.delay ?? 0,
      recoverGraceMs: tick.recoverGraceMs,
    };
    const result = admission
      ? await this.deps.store.submitJob(job, timing, admission)
      : await this.deps.store.submitJob(job, timing);
    if ("denied" in result) throw deniedError(result.denied, "submit", quota);
    if (result.message) {
      // With `defer` (Workers, Vercel) each request hands its own publish to the platform; in a
      // long-lived process concurrent submits share queue requests — and with
      // `backgroundPublish` the answer does not wait for them (a message the queue did not take
      // stays in the outbox for the tick's recover step either way).
      if (this.deps.defer)
        this.deps.defer(publishAll(this.deps.transport, [result.message], 1, logger));
      else if (this.deps.backgroundPublish) this.#coalescer.send(result.message);
      else await this.#coalescer.publish(result.message);
    }
    return {
      job: presentJob(result.job),
      replayed: result.replayed,
      ...(result.quota && quota ? { quota: { ...result.quota, policy: quota.windows } } : {}),
    };
  }

  /**
   * Resolves once the publishes of every submit answered so far have settled (accepted, or left
   * in the outbox for the tick); never rejects. With `backgroundPublish`, await it before the
   * process exits. Publishes handed to `defer` are the platform's to wait for.
   */
  settled(): Promise<void> {
    return this.#coalescer.settled();
  }

  /** Cancel a queued job (404 when it is another tenant's, see {@link Actor}). */
  async cancel(id: string, actor: Actor = {}): Promise<JobRecord> {
    if (actor.scopes !== undefined) await this.ownJob(id, actor, "job");
    const res = await this.deps.store.cancelJob(id);
    if (res.kind === "missing") throw new NotFoundError("job", id);
    if (res.kind === "conflict") {
      throw new ConflictError(
        "job_not_queued",
        `job "${id}" is ${res.job.status}; only queued jobs can be cancelled`,
      );
    }
    return presentJob(res.job);
  }

  /** Re-run a dead job (404 when it is another tenant's). */
  async retryDead(id: string, actor: Actor = {}): Promise<JobRecord> {
    if (actor.scopes !== undefined) await this.ownJob(id, actor, "dead job");
    const res = await this.deps.store.retryDead(id, {
      recoverGraceMs: this.deps.options.tick.recoverGraceMs,
    });
    if (!res) throw new NotFoundError("dead job", id);
    await publishAll(this.deps.transport, [res.message], 1, this.deps.options.logger);
    return presentJob(res.job);
  }

  /** Delete a dead job (404 when it is not dead, or another tenant's). */
  async deleteDead(id: string, actor: Actor = {}): Promise<void> {
    if (actor.scopes !== undefined) await this.ownJob(id, actor, "dead job");
    if (!(await this.deps.store.deleteDead(id))) throw new NotFoundError("dead job", id);
  }

  /**
   * Create a schedule, or replace the one with the same `id`. A replacement keeps `runs`,
   * `lastRunAt` and a `paused` status; when the timing is unchanged it keeps `nextRunAt` too.
   *
   * @throws as {@link Broker.submit} (input the handler's schema refuses: 422 `invalid_input`),
   * and 409 `id_taken` when the id is another tenant's;
   * 422 `interval_too_short` when occurrences can come closer than the manifest's `minIntervalMs`.
   */
  async createSchedule<K extends HandlerName<H>>(
    body: ScheduleRequest<H, K>,
    actor: Actor = {},
  ): Promise<ScheduleWritten> {
    const req = parseOrThrow(createScheduleSchema, body, "schedule");
    const rules = this.permitSchedule(req.handler, actor);
    const handler = this.handler(req.handler);
    const tenant = actor.tenant ?? DEFAULT_TENANT;
    const id = scheduleStoreId(tenant, req.id ?? newJobId().replace(/^j_/, "s_"));
    const { jobs } = this.deps.options;
    const def: ScheduleDef = {
      id,
      tenant,
      handler: req.handler,
      schedule: req.schedule.trim(),
      tz: req.tz ?? "UTC",
      input: req.input === undefined ? null : req.input,
      priority: req.priority ?? jobs.priority,
      timeoutMs: timeoutWithin(
        req.timeout,
        durationOr(handler.timeout, jobs.timeoutMs),
        rules?.maxTimeoutMs,
      ),
      retries: req.retries ?? handler.retries ?? jobs.retries,
      ...(req.maxRuns != null ? { maxRuns: req.maxRuns } : {}),
      ...(req.startAt != null ? { startAt: req.startAt } : {}),
      ...(req.endAt != null ? { endAt: req.endAt } : {}),
      misfire: req.misfire ?? "once",
      overlap: req.overlap ?? "allow",
      jitterMs: req.jitter ?? 0,
      tags: req.tags ?? [],
    };
    checkInputSize(def.input, rules, "schedule", this.deps.options.maxInputBytes);
    // Checked here as at submit: every occurrence runs with this input, so one the handler's
    // schema refuses would only ever produce dead jobs.
    checkInput(def.handler, handler, def.input);
    return this.writeSchedule(id, () => def, true, actor, rules);
  }

  /**
   * Change fields of a schedule; `nextRunAt` is recomputed when its timing changed. The result is
   * checked against the actor's manifest like a new schedule and, when the patch changes `handler`
   * or `input`, the resulting pair against the handler's input schema (422 `invalid_input`).
   */
  async updateSchedule(
    userId: string,
    body: SchedulePatch<H>,
    actor: Actor = {},
  ): Promise<ScheduleRecord> {
    const id = storeIdOf(userId, actor);
    const patch = parseOrThrow(patchScheduleSchema, body, "schedule patch");
    const rules = patch.handler ? this.permitSchedule(patch.handler, actor) : this.rules(actor);
    if (patch.handler) this.handler(patch.handler);
    if (patch.timeout !== undefined) timeoutWithin(patch.timeout, 0, rules?.maxTimeoutMs);
    if (patch.input !== undefined) {
      checkInputSize(patch.input, rules, "schedule", this.deps.options.maxInputBytes);
    }
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
        // A new handler must accept the stored input, and new input the stored handler: check
        // the pair the schedule will run with. A patch that touches neither is not judged on an
        // input that an earlier deploy's schema accepted.
        if (patch.handler !== undefined || patch.input !== undefined) {
          checkInput(next.handler, this.handler(next.handler), next.input);
        }
        return next;
      },
      false,
      actor,
      rules,
    );
    return presentSchedule(schedule);
  }

  /** Stop dispatching a schedule's occurrences until it is resumed. */
  async pauseSchedule(id: string, actor: Actor = {}): Promise<ScheduleRecord> {
    return presentSchedule(await this.setStatus(storeIdOf(id, actor), "paused", actor));
  }

  /** Dispatch again, from now on: occurrences that fell in the pause are not replayed. */
  async resumeSchedule(id: string, actor: Actor = {}): Promise<ScheduleRecord> {
    return presentSchedule(await this.setStatus(storeIdOf(id, actor), "active", actor));
  }

  /**
   * Delete a schedule, and with it the list of its runs (a schedule created again under the id
   * starts with none); jobs it already dispatched still run.
   */
  async deleteSchedule(userId: string, actor: Actor = {}): Promise<void> {
    const id = storeIdOf(userId, actor);
    if (!(await this.deps.store.deleteSchedule(id))) throw new NotFoundError("schedule", userId);
  }

  // ── reads, each of the actor's own tenant ──────────────────────────────

  /** A job by id (404 when it is another tenant's, see {@link Actor}). */
  async getJob(id: string, actor: Actor = {}): Promise<JobRecord> {
    const job = await this.deps.store.getJob(id);
    if (!job || !sees(actor, job.tenant)) throw new NotFoundError("job", id);
    return presentJob(job);
  }

  /**
   * The actor's tenant's jobs, newest first. Read from that tenant's own index: a page holds only
   * its records, and a cursor names only them.
   */
  async listJobs(
    query: Omit<ListJobsQuery, "tenant">,
    actor: Actor = {},
  ): Promise<Page<JobRecord>> {
    const tenant = actor.tenant ?? DEFAULT_TENANT;
    const page = await this.deps.store.listJobs({
      ...query,
      tenant,
      ...(query.scheduleId !== undefined
        ? { scheduleId: scheduleStoreId(tenant, query.scheduleId) }
        : {}),
    });
    return { ...page, items: page.items.map(presentJob) };
  }

  /** A schedule by the tenant's own id (404 when the actor's tenant has none of that id). */
  async getSchedule(userId: string, actor: Actor = {}): Promise<ScheduleRecord> {
    const schedule = await this.deps.store.getSchedule(storeIdOf(userId, actor));
    if (!schedule || !sees(actor, schedule.tenant)) throw new NotFoundError("schedule", userId);
    return presentSchedule(schedule);
  }

  /** The actor's tenant's schedules, newest first (its own index, as {@link listJobs}). */
  async listSchedules(
    query: Omit<ListSchedulesQuery, "tenant">,
    actor: Actor = {},
  ): Promise<Page<ScheduleRecord>> {
    const page = await this.deps.store.listSchedules({
      ...query,
      tenant: actor.tenant ?? DEFAULT_TENANT,
    });
    return { ...page, items: page.items.map(presentSchedule) };
  }

  /** The jobs a schedule of the actor's tenant fired, newest fire time first. */
  async listRuns(
    userId: string,
    query: { limit: number; cursor?: string | undefined },
    actor: Actor = {},
  ): Promise<Page<JobRecord>> {
    await this.getSchedule(userId, actor);
    const page = await this.deps.store.listRuns(storeIdOf(userId, actor), query);
    return { ...page, items: page.items.map(presentJob) };
  }

  /** The actor's tenant's dead letters, newest death first. */
  async listDead(
    query: { limit: number; cursor?: string | undefined },
    actor: Actor = {},
  ): Promise<Page<JobRecord>> {
    const page = await this.deps.store.listDead({
      ...query,
      tenant: actor.tenant ?? DEFAULT_TENANT,
    });
    return { ...page, items: page.items.map(presentJob) };
  }

  private async setStatus(
    id: string,
    status: "paused" | "active",
    actor: Actor,
  ): Promise<ScheduleRecord> {
    for (let i = 0; i < CAS_ATTEMPTS; i++) {
      const existing = await this.deps.store.getSchedule(id);
      if (!existing || !sees(actor, existing.tenant)) {
        throw new NotFoundError("schedule", scheduleUserId(actor.tenant ?? DEFAULT_TENANT, id));
      }
      if (existing.status === status || existing.status === "completed") return existing;
      const now = await this.deps.store.now();
      let record: ScheduleRecord = { ...existing, status, updatedAt: now };
      if (status === "active") record = withTiming(record, now, true);
      const res = await this.deps.store.putSchedule(record, existing.rev);
      if (res.kind === "ok") return res.schedule;
    }
    throw new ConflictError("schedule_busy", `schedule "${id}" kept changing; try again`);
  }

  /**
   * Optimistic read-modify-write of one schedule, counted against the actor's schedule quota
   * (a write that loses the race counts nothing and is tried again).
   */
  private async writeSchedule(
    id: string,
    build: (existing: ScheduleRecord | null) => ScheduleDef,
    upsert: boolean,
    actor: Actor,
    rules: ManifestRules | undefined,
  ): Promise<ScheduleWritten> {
    const tenant = actor.tenant ?? "default";
    const quota = quotaCheck("schedule", tenant, rules?.scheduleWindows ?? []);
    for (let i = 0; i < CAS_ATTEMPTS; i++) {
      const userId = scheduleUserId(tenant, id);
      const found = await this.deps.store.getSchedule(id);
      // Stored under the tenant's own namespace (see `scheduleStoreId`): another tenant's schedule
      // can never be found here; this only guards a record written by other means.
      if (found && found.tenant !== tenant) throw new NotFoundError("schedule", userId);
      const existing = found;
      const def = build(existing);
      if (rules && !rules.schedules(def.handler)) this.permitSchedule(def.handler, actor);
      const parsed = validateTiming(def);
      const now = await this.deps.store.now();
      if (rules?.minIntervalMs !== undefined) {
        checkMinInterval(def, parsed, rules.minIntervalMs, now);
      }
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
      if (!existing && !upsert) throw new NotFoundError("schedule", userId);
      const admission = quota ? { quota } : undefined;
      const res = admission
        ? await this.deps.store.putSchedule(record, existing?.rev, admission)
        : existing
          ? await this.deps.store.putSchedule(record, existing.rev)
          : await this.deps.store.putSchedule(record);
      if (res.kind === "denied") throw deniedError(res.denied, "schedule", quota);
      if (res.kind === "ok") {
        return {
          schedule: presentSchedule(res.schedule),
          created: res.created,
          ...(res.quota && quota ? { quota: { ...res.quota, policy: quota.windows } } : {}),
        };
      }
    }
    throw new ConflictError("schedule_busy", `schedule "${id}" kept changing; try again`);
  }

  /** What a submit passes to the store: the quota, and the degradation controller when on. */
  private admission(quota: QuotaCheck | undefined): Admission | undefined {
    const { degradation, localSignals } = this.deps.options;
    if (!quota && !degradation) return undefined;
    const local = degradation ? localSignals?.() : undefined;
    return {
      ...(quota ? { quota } : {}),
      ...(degradation
        ? { degradation: local ? { ...degradation, local: { ...local } } : degradation }
        : {}),
    };
  }

  private rules(actor: Actor): ManifestRules | undefined {
    return actor.manifest ? manifestRules(actor.manifest) : undefined;
  }

  /** The actor's rules, after checking it may schedule `handler` (403 otherwise). */
  private permitSchedule(handler: string, actor: Actor): ManifestRules | undefined {
    const rules = this.rules(actor);
    if (rules && !rules.schedules(handler)) {
      throw new ForbiddenError(
        "handler_not_permitted",
        `tenant "${actor.tenant ?? "default"}" may not schedule handler "${handler}"`,
      );
    }
    return rules;
  }

  /** 404 unless the job exists and the actor sees it. */
  private async ownJob(id: string, actor: Actor, what: string): Promise<void> {
    const job = await this.deps.store.getJob(id);
    if (!job || !sees(actor, job.tenant)) throw new NotFoundError(what, id);
  }

  private handler(name: string) {
    const handler = handlerOf(this.deps.handlers, name);
    if (!handler) {
      throw new UnprocessableError("unknown_handler", `no handler named "${name}" is registered`);
    }
    return handler;
  }
}

/** The error a refused admission is answered with. */
function deniedError(
  denied: Denied,
  what: "submit" | "schedule",
  quota: QuotaCheck | undefined,
): Error {
  if (denied.kind === "overloaded") return new OverloadedError(denied.retryAfterMs);
  return new QuotaExceededError(what, denied.quota, quota?.windows ?? []);
}

/**
 * 413 when `input` is larger (as UTF-8 JSON) than the manifest allows, or than the engine's
 * `maxInputBytes` (whichever is lower).
 */
function checkInputSize(
  input: unknown,
  rules: ManifestRules | undefined,
  what: "job" | "schedule",
  engineMax: number,
): void {
  const tenantMax = rules?.maxInputBytes ?? Number.POSITIVE_INFINITY;
  const max = Math.min(tenantMax, engineMax);
  if (max === Number.POSITIVE_INFINITY) return;
  const text = JSON.stringify(input ?? null);
  // A UTF-16 unit is 1–3 UTF-8 bytes: most inputs are decided without encoding them.
  if (text.length * 3 <= max) return;
  const bytes = new TextEncoder().encode(text).byteLength;
  if (bytes > max) {
    throw new InputTooLargeError(
      tenantMax <= engineMax
        ? `${what} input is ${bytes} bytes; this tenant may send at most ${max}`
        : `${what} input is ${bytes} bytes; at most ${max} are accepted`,
    );
  }
}

/**
 * 422 `invalid_input` when the handler declares an `input` schema that `input` does not satisfy,
 * with one `{ path, message }` per issue (`path` from the body's root, e.g. `input.n`). The same
 * check for a job and for a schedule, whose occurrences run with its input.
 */
function checkInput(name: string, handler: HandlerDefinition, input: unknown): void {
  if (!handler.input) return;
  const parsed = parseInput(handler.input, input);
  if (parsed.success) return;
  throw new UnprocessableError("invalid_input", `input does not match handler "${name}"`, {
    errors: parsed.error.issues.map((i) => ({
      path: `input.${i.path.join(".")}`,
      message: i.message,
    })),
  });
}

/**
 * The timeout to use: an explicit one must be within `max` (422 otherwise); a default above
 * `max` is lowered to it.
 */
function timeoutWithin(explicit: number | undefined, fallback: number, max?: number): number {
  if (max === undefined) return explicit ?? fallback;
  if (explicit !== undefined) {
    if (explicit > max) {
      throw new UnprocessableError(
        "timeout_not_permitted",
        `timeout ${explicit} ms is over this tenant's limit of ${max} ms`,
      );
    }
    return explicit;
  }
  return Math.min(fallback, max);
}

/** Occurrences examined (at most) when looking for the smallest gap of a cron schedule. */
const GAP_SAMPLE = 1_000;
/** …over at most this long: a year and a bit, so every month and both DST changes are seen. */
const GAP_SPAN_MS = 400 * 24 * 60 * 60 * 1000;

/**
 * 422 when two occurrences of the schedule can be closer than `minMs`: an interval's period, or
 * the smallest gap between consecutive cron occurrences over the coming year (and a bit).
 */
function checkMinInterval(
  def: ScheduleDef,
  parsed: ParsedSchedule,
  minMs: number,
  now: number,
): void {
  let gap: number | undefined;
  if (parsed.kind === "interval") {
    gap = parsed.everyMs;
  } else {
    const from = Math.max(now, def.startAt ?? 0);
    let previous = nextAfter(parsed, from - 1);
    const end = previous === null ? 0 : previous + GAP_SPAN_MS;
    for (let i = 0; i < GAP_SAMPLE && previous !== null && previous <= end; i++) {
      const next = nextAfter(parsed, previous);
      if (next === null) break;
      const d = next - previous;
      if (gap === undefined || d < gap) gap = d;
      if (gap < minMs) break;
      previous = next;
    }
  }
  if (gap !== undefined && gap < minMs) {
    throw new UnprocessableError(
      "interval_too_short",
      `schedule "${def.schedule}" can run ${gap} ms apart; this tenant's minimum is ${minMs} ms`,
    );
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

function validateTiming(def: ScheduleDef): ParsedSchedule {
  try {
    return parseSchedule(def.schedule, def.tz, def.startAt);
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

/** The store id of the actor's schedule `userId` (see `scheduleStoreId`). */
function storeIdOf(userId: string, actor: Actor): string {
  return scheduleStoreId(actor.tenant ?? DEFAULT_TENANT, userId);
}

/** A schedule as its tenant knows it: its own id. */
function presentSchedule(schedule: ScheduleRecord): ScheduleRecord {
  const id = scheduleUserId(schedule.tenant, schedule.id);
  return id === schedule.id ? schedule : { ...schedule, id };
}

/** A job as its tenant knows it: an occurrence names its schedule by the tenant's own id. */
export function presentJob(job: JobRecord): JobRecord {
  if (job.scheduleId === undefined) return job;
  const scheduleId = scheduleUserId(job.tenant, job.scheduleId);
  return scheduleId === job.scheduleId ? job : { ...job, scheduleId };
}
