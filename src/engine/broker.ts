/**
 * @module
 * The broker: accepts jobs and schedules. Submit is one store operation (one Redis round trip)
 * plus one publish; schedule changes are optimistic read-modify-writes on the schedule's `rev`.
 *
 * {@link Broker} is the public face, typed by the handler map; the work is done by
 * `JobsBroker` (./jobs.ts: submit, cancel, reads, dead letters) and `SchedulesBroker`
 * (./schedules.ts), with the admission checks in ./admission.ts and the actor in ./actor.ts.
 */
import type { JobLogEntry, JobRecord, ScheduleRecord } from "../core/model.ts";
import type { ListJobsQuery, ListSchedulesQuery, Page } from "../store/port.ts";
import type { Actor } from "./actor.ts";
import { type BatchJobRequest, type BatchSubmitted, submitMany } from "./batch.ts";
import { type FlowSubmitted, submitFlow } from "./flows.ts";
import type { HandlerName, Handlers } from "./handlers.ts";
import {
  type BrokerDeps,
  type FlowRequest,
  type JobRequest,
  JobsBroker,
  type Submitted,
  type SubmitVia,
} from "./jobs.ts";
import {
  type ScheduleChanged,
  type SchedulePatch,
  type ScheduleRequest,
  SchedulesBroker,
  type ScheduleWritten,
} from "./schedules.ts";

export { defOf } from "../core/schedule/timing.ts";
export { type Actor, presentJob, type Scope, sees } from "./actor.ts";
export type { QuotaReport } from "./admission.ts";
export type { BatchJobRequest, BatchOutcome, BatchSubmitted } from "./batch.ts";
export { BatchTooLargeError } from "./batch.ts";
export type { FlowSubmitted } from "./flows.ts";
export type { BrokerDeps, JobRequest, Submitted, SubmitVia } from "./jobs.ts";
export type {
  ScheduleChanged,
  SchedulePatch,
  ScheduleRequest,
  ScheduleWritten,
} from "./schedules.ts";

/** A page's bounds, for the lists of runs and dead letters. */
type PageQuery = { limit: number; cursor?: string | undefined };

/**
 * Accepts jobs and schedules.
 *
 * @example
 * const broker = new Broker({ store, transport, handlers, options: resolveOptions() });
 * const { job } = await broker.submit({ handler: "email.send", input: { to: "a@b.c" } });
 */
export class Broker<H extends Handlers = Handlers> {
  readonly #jobs: JobsBroker<H>;
  readonly #schedules: SchedulesBroker<H>;
  readonly #deps: BrokerDeps<H>;

  constructor(deps: BrokerDeps<H>) {
    this.#deps = deps;
    this.#jobs = new JobsBroker(deps);
    this.#schedules = new SchedulesBroker(deps);
  }

  // ── jobs ─────────────────────────────────────────────────────────────────

  /**
   * Submit a one-off job: one atomic store write — with the actor's quota and the degradation
   * controller checked inside it — then a publish (a failed publish is recovered by the tick).
   *
   * @throws ValidationError (400) for a malformed job; ForbiddenError (403) for a handler outside
   * the actor's manifest; InputTooLargeError (413); UnprocessableError (422) for an unknown
   * handler, input its schema refuses, or a timeout over the manifest's limit;
   * QuotaExceededError (429); OverloadedError (503) while critical with `critical: "reject"`.
   * `via`: an inbound webhook's longer idempotency key and delivery record (docs/webhooks.md).
   */
  submit<K extends HandlerName<H>>(
    body: JobRequest<H, K>,
    actor: Actor = {},
    via?: SubmitVia,
  ): Promise<Submitted> {
    return this.#jobs.submit(body, actor, via);
  }

  /**
   * Submit up to 1,000 jobs (`MAX_BATCH_JOBS`) at once, each checked and admitted on its own as
   * {@link Broker.submit} would, stored in chunks of one store operation (one Redis round trip)
   * each and published in the queue's batches (src/engine/batch.ts). Answers one outcome per job,
   * in order: `accepted`, `replayed` (its idempotency key was used, by an earlier job of the batch
   * too) or `failed` with the error `submit` would have thrown. The quota admits jobs up to its
   * limit; the rest fail with 429. With `trace` (the request's W3C trace context) every job
   * stores it as {@link Broker.submit}'s does, under one submit span for the batch.
   *
   * @throws ValidationError (400) when `jobs` is not a non-empty array; BatchTooLargeError (413)
   * over 1,000 jobs. Nothing is written then.
   */
  submitMany(
    jobs: readonly BatchJobRequest<H>[],
    actor: Actor = {},
    trace?: SubmitVia["trace"],
  ): Promise<BatchSubmitted> {
    const broker = this.#jobs as JobsBroker<Handlers>;
    return submitMany(broker, this.#deps as BrokerDeps, jobs, actor, trace);
  }

  /**
   * Submit a flow: `children`, then `parent` waiting for them all (`after`). Every job is checked
   * before any is written; with `idempotencyKey` the flow may be submitted again (src/engine/flows.ts).
   * @throws as {@link Broker.submit}.
   */
  submitFlow(
    body: FlowRequest<H>,
    actor: Actor = {},
    trace?: SubmitVia["trace"],
  ): Promise<FlowSubmitted> {
    return submitFlow(this.#jobs as JobsBroker<Handlers>, body, actor, trace);
  }

  /**
   * Resolves once the publishes of every submit answered so far have settled (accepted, or left
   * in the outbox for the tick); never rejects. With `backgroundPublish`, await it before the
   * process exits. Publishes handed to `defer` are the platform's to wait for.
   */
  settled(): Promise<void> {
    return this.#jobs.settled();
  }

  /**
   * Cancel a job (404 when it is another tenant's, see {@link Actor}): a queued one ends
   * `cancelled` at once; a running one is answered `running` with `cancelRequested` and ends
   * `cancelled` once its runner sees the request (see `JobsBroker.cancel`).
   */
  cancel(id: string, actor: Actor = {}): Promise<JobRecord> {
    return this.#jobs.cancel(id, actor);
  }

  /** A job's log, oldest kept entry first (404 when it is missing or another tenant's). */
  readLogs(
    id: string,
    query: { limit: number; cursor?: string | undefined },
    actor: Actor = {},
  ): Promise<Page<JobLogEntry>> {
    return this.#jobs.readLogs(id, query, actor);
  }

  /** Re-run a dead job (404 when it is another tenant's). */
  retryDead(id: string, actor: Actor = {}): Promise<JobRecord> {
    return this.#jobs.retryDead(id, actor);
  }

  /** Delete a dead job (404 when it is not dead, or another tenant's). */
  deleteDead(id: string, actor: Actor = {}): Promise<void> {
    return this.#jobs.deleteDead(id, actor);
  }

  // ── schedules ────────────────────────────────────────────────────────────

  /**
   * Create a schedule, or replace the one with the same `id`. A replacement keeps `runs`,
   * `lastRunAt` and a `paused` status; when the timing is unchanged it keeps `nextRunAt` too.
   *
   * @throws as {@link Broker.submit} (input the handler's schema refuses: 422 `invalid_input`),
   * and 422 `interval_too_short` when occurrences can come closer than the manifest's `minIntervalMs`.
   */
  createSchedule<K extends HandlerName<H>>(
    body: ScheduleRequest<H, K>,
    actor: Actor = {},
  ): Promise<ScheduleWritten> {
    return this.#schedules.createSchedule(body, actor);
  }

  /**
   * Change fields of a schedule; `nextRunAt` is recomputed when its timing changed. The result is
   * checked against the actor's manifest like a new schedule and, when the patch changes `handler`
   * or `input`, the resulting pair against the handler's input schema (422 `invalid_input`).
   */
  updateSchedule(
    userId: string,
    body: SchedulePatch<H>,
    actor: Actor = {},
  ): Promise<ScheduleRecord> {
    return this.#schedules.updateSchedule(userId, body, actor);
  }

  /**
   * {@link updateSchedule}, answering also where the tenant's schedule quota stands after the
   * change (it counts as a create does): what `PATCH /v1/schedules/:id` sends as `RateLimit-*`.
   */
  patchSchedule(
    userId: string,
    body: SchedulePatch<H>,
    actor: Actor = {},
  ): Promise<ScheduleChanged> {
    return this.#schedules.patchSchedule(userId, body, actor);
  }

  /** Stop dispatching a schedule's occurrences until it is resumed. */
  pauseSchedule(id: string, actor: Actor = {}): Promise<ScheduleRecord> {
    return this.#schedules.pauseSchedule(id, actor);
  }

  /** Dispatch again, from now on: occurrences that fell in the pause are not replayed. */
  resumeSchedule(id: string, actor: Actor = {}): Promise<ScheduleRecord> {
    return this.#schedules.resumeSchedule(id, actor);
  }

  /**
   * Delete a schedule, and with it the list of its runs (a schedule created again under the id
   * starts with none). An occurrence it dispatched that has not begun is skipped, not run; an
   * attempt already begun keeps its retries.
   */
  deleteSchedule(userId: string, actor: Actor = {}): Promise<void> {
    return this.#schedules.deleteSchedule(userId, actor);
  }

  // ── reads, each of the actor's own tenant ──────────────────────────────

  /** A job by id (404 when it is another tenant's, see {@link Actor}). */
  getJob(id: string, actor: Actor = {}): Promise<JobRecord> {
    return this.#jobs.getJob(id, actor);
  }

  /**
   * The actor's tenant's jobs, newest first. Read from that tenant's own index: a page holds only
   * its records, and a cursor names only them.
   */
  listJobs(query: Omit<ListJobsQuery, "tenant">, actor: Actor = {}): Promise<Page<JobRecord>> {
    return this.#jobs.listJobs(query, actor);
  }

  /** A schedule by the tenant's own id (404 when the actor's tenant has none of that id). */
  getSchedule(userId: string, actor: Actor = {}): Promise<ScheduleRecord> {
    return this.#schedules.getSchedule(userId, actor);
  }

  /** The actor's tenant's schedules, newest first (its own index, as {@link listJobs}). */
  listSchedules(
    query: Omit<ListSchedulesQuery, "tenant">,
    actor: Actor = {},
  ): Promise<Page<ScheduleRecord>> {
    return this.#schedules.listSchedules(query, actor);
  }

  /** The jobs a schedule of the actor's tenant fired, newest fire time first. */
  listRuns(userId: string, query: PageQuery, actor: Actor = {}): Promise<Page<JobRecord>> {
    return this.#schedules.listRuns(userId, query, actor);
  }

  /** The actor's tenant's dead letters, newest death first. */
  listDead(query: PageQuery, actor: Actor = {}): Promise<Page<JobRecord>> {
    return this.#jobs.listDead(query, actor);
  }
}
