/**
 * @module
 * The broker's schedules: create (or replace), patch, pause, resume, delete and reads. Every change
 * is an optimistic read-modify-write on the schedule's `rev`; the timing maths is
 * `src/core/schedule/timing.ts`. `Broker` (./broker.ts) is the public face.
 */
import { ConflictError, NotFoundError, UnprocessableError } from "../core/errors.ts";
import { type ManifestRules, quotaCheck } from "../core/manifest.ts";
import {
  type JobRecord,
  type ScheduleDef,
  type ScheduleRecord,
  scheduleStoreId,
  scheduleUserId,
} from "../core/model.ts";
import { firstRunAt } from "../core/schedule/occurrences.ts";
import {
  checkMinInterval,
  defOf,
  timingKey,
  validateTiming,
  withTiming,
} from "../core/schedule/timing.ts";
import {
  type CreateScheduleInput,
  createScheduleSchema,
  type PatchScheduleInput,
  parseOrThrow,
  patchScheduleSchema,
} from "../core/schemas.ts";
import type { ListSchedulesQuery, Page } from "../store/port.ts";
import {
  type Actor,
  presentJob,
  presentSchedule,
  scheduleStoreIdOf,
  sees,
  tenantOf,
} from "./actor.ts";
import {
  checkInput,
  checkInputSize,
  checkInputValues,
  checkJobSize,
  deniedError,
  durationOr,
  OCCURRENCE_ALLOWANCE_BYTES,
  permitSchedule,
  type QuotaReport,
  quotaReport,
  requireHandler,
  rulesOf,
  timeoutWithin,
} from "./admission.ts";
import type { HandlerInput, HandlerName, Handlers, InputField } from "./handlers.ts";
import { newJobId } from "./ids.ts";
import type { BrokerDeps } from "./jobs.ts";
import { withPlacement } from "./placement.ts";

/** A schedule for handler `K` of `H`: the fields of `POST /v1/schedules`, typed like `JobRequest`. */
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

/** Result of `Broker.createSchedule`. */
export interface ScheduleWritten {
  schedule: ScheduleRecord;
  created: boolean;
  /** Where the tenant's schedule quota stands (absent without a quota). */
  quota?: QuotaReport;
}

/** A schedule as a change left it, and where the tenant's schedule quota stands. */
export interface ScheduleChanged {
  schedule: ScheduleRecord;
  /** Absent without a quota. */
  quota?: QuotaReport;
}

/** What the schedules need of the broker's dependencies. */
export type SchedulesDeps<H extends Handlers = Handlers> = Pick<
  BrokerDeps<H>,
  "store" | "handlers" | "options"
>;

/** Attempts at an optimistic schedule update before giving up with 409. */
const CAS_ATTEMPTS = 5;

/**
 * Accepts schedules, changes them, and answers for them.
 *
 * @example
 * const schedules = new SchedulesBroker({ store, handlers, options: resolveOptions() });
 * await schedules.createSchedule({ id: "digest", handler: "email.digest", schedule: "0 8 * * *" });
 */
export class SchedulesBroker<H extends Handlers = Handlers> {
  constructor(private readonly deps: SchedulesDeps<H>) {}

  /**
   * Create a schedule, or replace the one with the same `id`. A replacement keeps `runs`,
   * `lastRunAt` and a `paused` status; when the timing is unchanged it keeps `nextRunAt` too.
   *
   * @throws as `Broker.submit` (input the handler's schema refuses: 422 `invalid_input`),
   * and 422 `interval_too_short` when occurrences can come closer than the manifest's `minIntervalMs`.
   */
  async createSchedule<K extends HandlerName<H>>(
    body: ScheduleRequest<H, K>,
    actor: Actor = {},
  ): Promise<ScheduleWritten> {
    const req = parseOrThrow(createScheduleSchema, body, "schedule");
    const rules = permitSchedule(req.handler, actor);
    const handler = requireHandler(this.deps.handlers, req.handler);
    const tenant = tenantOf(actor);
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
      ...withPlacement(req.placement),
    };
    checkInputValues(def.input);
    checkInputSize(def.input, rules, "schedule", this.deps.options.maxInputBytes);
    // Checked here as at submit: every occurrence runs with this input, so one the handler's
    // schema refuses would only ever produce dead jobs.
    checkInput(def.handler, handler, def.input);
    checkJobSize(def, "schedule", this.deps.options.maxJobBytes, OCCURRENCE_ALLOWANCE_BYTES);
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
    return (await this.patchSchedule(userId, body, actor)).schedule;
  }

  /**
   * {@link updateSchedule}, answering also where the tenant's schedule quota stands after it (a
   * change counts against the quota as a create does), for the `RateLimit-*` headers.
   */
  async patchSchedule(
    userId: string,
    body: SchedulePatch<H>,
    actor: Actor = {},
  ): Promise<ScheduleChanged> {
    const id = scheduleStoreIdOf(userId, actor);
    const patch = parseOrThrow(patchScheduleSchema, body, "schedule patch");
    const rules = patch.handler ? permitSchedule(patch.handler, actor) : rulesOf(actor);
    if (patch.handler) requireHandler(this.deps.handlers, patch.handler);
    if (patch.timeout !== undefined) timeoutWithin(patch.timeout, 0, rules?.maxTimeoutMs);
    if (patch.input !== undefined) {
      checkInputValues(patch.input);
      checkInputSize(patch.input, rules, "schedule", this.deps.options.maxInputBytes);
    }
    const { schedule, quota } = await this.writeSchedule(
      id,
      (existing) => {
        if (!existing) throw new NotFoundError("schedule", userId);
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
        if (patch.placement !== undefined) {
          // `placement: {}` removes it.
          delete next.placement;
          Object.assign(next, withPlacement(patch.placement));
        }
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
          checkInput(next.handler, requireHandler(this.deps.handlers, next.handler), next.input);
        }
        if (
          patch.input !== undefined ||
          patch.tags !== undefined ||
          patch.placement !== undefined
        ) {
          checkJobSize(next, "schedule", this.deps.options.maxJobBytes, OCCURRENCE_ALLOWANCE_BYTES);
        }
        return next;
      },
      false,
      actor,
      rules,
    );
    const changed: ScheduleChanged = { schedule: presentSchedule(schedule) };
    if (quota) changed.quota = quota;
    return changed;
  }

  /** Stop dispatching a schedule's occurrences until it is resumed. */
  async pauseSchedule(id: string, actor: Actor = {}): Promise<ScheduleRecord> {
    return presentSchedule(await this.setStatus(scheduleStoreIdOf(id, actor), "paused", actor));
  }

  /** Dispatch again, from now on: occurrences that fell in the pause are not replayed. */
  async resumeSchedule(id: string, actor: Actor = {}): Promise<ScheduleRecord> {
    return presentSchedule(await this.setStatus(scheduleStoreIdOf(id, actor), "active", actor));
  }

  /**
   * Delete a schedule, and with it the list of its runs (a schedule created again under the id
   * starts with none). An occurrence it dispatched that has not begun is skipped, not run; an
   * attempt already begun keeps its retries.
   */
  async deleteSchedule(userId: string, actor: Actor = {}): Promise<void> {
    const id = scheduleStoreIdOf(userId, actor);
    if (!(await this.deps.store.deleteSchedule(id))) throw new NotFoundError("schedule", userId);
  }

  /** A schedule by the tenant's own id (404 when the actor's tenant has none of that id). */
  async getSchedule(userId: string, actor: Actor = {}): Promise<ScheduleRecord> {
    const schedule = await this.deps.store.getSchedule(scheduleStoreIdOf(userId, actor));
    if (!schedule || !sees(actor, schedule.tenant)) throw new NotFoundError("schedule", userId);
    return presentSchedule(schedule);
  }

  /** The actor's tenant's schedules, newest first (its own index, as `listJobs`). */
  async listSchedules(
    query: Omit<ListSchedulesQuery, "tenant">,
    actor: Actor = {},
  ): Promise<Page<ScheduleRecord>> {
    const page = await this.deps.store.listSchedules({ ...query, tenant: tenantOf(actor) });
    return { ...page, items: page.items.map(presentSchedule) };
  }

  /** The jobs a schedule of the actor's tenant fired, newest fire time first. */
  async listRuns(
    userId: string,
    query: { limit: number; cursor?: string | undefined },
    actor: Actor = {},
  ): Promise<Page<JobRecord>> {
    await this.getSchedule(userId, actor);
    const page = await this.deps.store.listRuns(scheduleStoreIdOf(userId, actor), query);
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
        throw new NotFoundError("schedule", scheduleUserId(tenantOf(actor), id));
      }
      // A completed schedule may still have occurrences dispatched that have not begun: pausing
      // it keeps them from starting, as for any schedule (resumed, it completes again, and what
      // has not begun then runs). Resuming one is nothing to do.
      if (existing.status === status || (existing.status === "completed" && status === "active")) {
        return existing;
      }
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
    const tenant = tenantOf(actor);
    const quota = quotaCheck("schedule", tenant, rules?.scheduleWindows ?? []);
    for (let i = 0; i < CAS_ATTEMPTS; i++) {
      const userId = scheduleUserId(tenant, id);
      const found = await this.deps.store.getSchedule(id);
      // Stored under the tenant's own namespace (see `scheduleStoreId`): another tenant's schedule
      // can never be found here; this only guards a record written by other means.
      if (found && found.tenant !== tenant) throw new NotFoundError("schedule", userId);
      const existing = found;
      const def = build(existing);
      if (rules && !rules.schedules(def.handler)) permitSchedule(def.handler, actor);
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
      for (const key of ["maxRuns", "startAt", "endAt", "placement"] as const) {
        if (def[key] === undefined) delete base[key];
      }
      const record = withTiming(base, now, timingChanged);
      // Nothing to fire with no end set, and no occurrence at all (not one past year 9999, which
      // leaves the schedule completed): a cron expression whose every match falls in the zone's
      // yearly daylight-saving gap (a cadence skips gap times), which the wall-clock check of the
      // expression cannot see. Refused as an expression that matches no date is.
      if (
        timingChanged &&
        record.nextRunAt === null &&
        record.endAt === undefined &&
        (record.maxRuns === undefined || record.runs < record.maxRuns) &&
        firstRunAt(parsed, Math.max(now, (record.lastRunAt ?? -1) + 1), record.startAt) === null
      ) {
        throw new UnprocessableError(
          "never_fires",
          `"${def.schedule}" never fires in ${def.tz}: every time it matches is skipped by a daylight-saving change`,
        );
      }
      if (!existing && !upsert) throw new NotFoundError("schedule", userId);
      const admission = quota ? { quota } : undefined;
      // A create writes only while the id is still free (`0`): one that lost a race with another
      // create is a conflict, and is made again as a replace of what that one stored, its pause,
      // runs and fire times included.
      const res = await this.deps.store.putSchedule(record, existing?.rev ?? 0, admission);
      if (res.kind === "denied") throw deniedError(res.denied, "schedule", quota);
      if (res.kind === "ok") {
        return {
          schedule: presentSchedule(res.schedule),
          created: res.created,
          ...quotaReport(res.quota, quota),
        };
      }
    }
    throw new ConflictError("schedule_busy", `schedule "${id}" kept changing; try again`);
  }
}

/** Set (a number), clear (`null`) or keep (`undefined`) one of a schedule's optional bounds. */
function setOptional<K extends "maxRuns" | "startAt" | "endAt">(
  def: ScheduleDef,
  key: K,
  value: number | null | undefined,
): void {
  if (value === null) delete def[key];
  else if (value !== undefined) def[key] = value;
}
