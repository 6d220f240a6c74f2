/**
 * @module
 * `client.schedules`: create or replace, read, list, change, pause, resume, delete, and the jobs
 * a schedule fired.
 */
import type { HandlerName, Handlers } from "../engine/handlers.ts";
import { PagedList } from "./paginate.ts";
import { type Caller, call, seg } from "./request.ts";
import type {
  CreateScheduleRequest,
  Job,
  ListSchedulesQuery,
  Page,
  PageQuery,
  Schedule,
  UpdateScheduleRequest,
} from "./types.ts";
import { type JobUpdate, streamUpdates, type UpdatesOptions } from "./updates.ts";

/**
 * A schedule by id, with the calls that concern it.
 *
 * @example
 * const s = await client.schedules.create({ id: "report", handler: "reports.daily", schedule: "0 9 * * *" });
 * await s.pause();
 * for await (const run of s.runs()) console.log(run.fireAt, run.status);
 */
export class ScheduleHandle<H extends Handlers = Handlers> {
  readonly id: string;
  /** What the create answered (absent on a handle made from an id). */
  readonly schedule: Schedule | undefined;
  /** True when the create made a new schedule, false when it replaced one. */
  readonly created: boolean | undefined;
  readonly #caller: Caller;

  constructor(caller: Caller, id: string, schedule?: Schedule, created?: boolean) {
    this.#caller = caller;
    this.id = id;
    this.schedule = schedule;
    this.created = created;
  }

  /** The schedule now, with `nextRunAt`, `lastRunAt` and `runs`. @example const { runs } = await s.get(); */
  async get(): Promise<Schedule> {
    return (await call<Schedule>(this.#caller, "GET", this.#path())).data;
  }

  /**
   * Stop firing until resumed; an occurrence already dispatched that has not begun ends `skipped`.
   * @example await s.pause();
   */
  async pause(): Promise<Schedule> {
    return (await call<Schedule>(this.#caller, "POST", `${this.#path()}/pause`)).data;
  }

  /**
   * Fire again, from now on (occurrences that fell in the pause are not replayed); one with nothing
   * left to fire (`nextRunAt: null`: `maxRuns` reached, `endAt` passed) is `completed` instead.
   * @example await s.resume();
   */
  async resume(): Promise<Schedule> {
    return (await call<Schedule>(this.#caller, "POST", `${this.#path()}/resume`)).data;
  }

  /**
   * Change fields; `nextRunAt` is recomputed when the timing changed.
   *
   * @example
   * await s.update({ schedule: "30 9 * * 1-5", maxRuns: null });
   */
  async update(patch: UpdateScheduleRequest<H>): Promise<Schedule> {
    return (await call<Schedule>(this.#caller, "PATCH", this.#path(), { body: patch })).data;
  }

  /**
   * Delete it; an occurrence already dispatched that has not begun ends `skipped` (one already
   * running finishes, with its retries). @example await s.delete();
   */
  async delete(): Promise<{ id: string; status: "deleted" }> {
    return (await call<{ id: string; status: "deleted" }>(this.#caller, "DELETE", this.#path()))
      .data;
  }

  /**
   * The jobs it fired, newest first.
   *
   * @example
   * const last = (await s.runs({ limit: 1 }).first()).items[0];
   */
  runs(query: PageQuery = {}): PagedList<Job> {
    const { cursor, limit } = query;
    return new PagedList(
      async (next) =>
        (
          await call<Page<Job>>(this.#caller, "GET", `${this.#path()}/runs`, {
            query: { limit, cursor: next },
          })
        ).data,
      cursor,
    );
  }

  /**
   * Its runs' updates as they happen, over Server-Sent Events (`GET /v1/schedules/:id/stream`):
   * each run's status changes (`jobId` names the run) and a `done` with each run's final job.
   * Starts now (or after `lastEventId`); never ends by itself: reconnects with `Last-Event-ID`
   * when the server ends a stream, until `signal` aborts or the loop breaks.
   *
   * @example
   * for await (const update of schedule.updates({ signal })) {
   *   if (update.type === "done") console.log(update.job.id, update.job.status);
   * }
   */
  updates(options: UpdatesOptions = {}): AsyncGenerator<JobUpdate, void, undefined> {
    return streamUpdates(this.#caller, `${this.#path()}/stream`, options, false);
  }

  #path(): string {
    return `/v1/schedules/${seg(this.id)}`;
  }
}

/** `client.schedules`. */
export class SchedulesApi<H extends Handlers = Handlers> {
  readonly #caller: Caller;

  constructor(caller: Caller) {
    this.#caller = caller;
  }

  /**
   * Create a schedule, or replace the one with the same `id`.
   *
   * @example
   * const s = await client.schedules.create({ handler: "cleanup", schedule: "5m", maxRuns: 10 });
   * console.log(s.id, s.schedule?.nextRunAt);
   */
  async create<K extends HandlerName<H>>(
    body: CreateScheduleRequest<H, K>,
  ): Promise<ScheduleHandle<H>> {
    const { data, response } = await call<Schedule>(this.#caller, "POST", "/v1/schedules", {
      body,
    });
    return new ScheduleHandle<H>(this.#caller, data.id, data, response.status === 201);
  }

  /** A schedule by id (`NotFoundError` if unknown). @example const s = await client.schedules.get("report"); */
  async get(id: string): Promise<Schedule> {
    return this.handle(id).get();
  }

  /** A handle for a schedule id; makes no request. @example await client.schedules.handle("report").pause(); */
  handle(id: string): ScheduleHandle<H> {
    return new ScheduleHandle<H>(this.#caller, id);
  }

  /**
   * Schedules, across as many pages as you iterate.
   *
   * @example
   * for await (const s of client.schedules.list({ status: "paused" })) console.log(s.id);
   */
  list(query: ListSchedulesQuery = {}): PagedList<Schedule> {
    const { cursor, ...filters } = query;
    return new PagedList(
      async (next) =>
        (
          await call<Page<Schedule>>(this.#caller, "GET", "/v1/schedules", {
            query: { ...filters, cursor: next },
          })
        ).data,
      cursor,
    );
  }
}
