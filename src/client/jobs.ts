/**
 * @module
 * `client.jobs`: submit, read, wait for a result (long-poll), read the log, cancel, list.
 */
import type { BatchResource } from "../core/batch.ts";
import { parseDuration } from "../core/duration.ts";
import type { HandlerName, Handlers } from "../engine/handlers.ts";
import {
  JobCancelledError,
  JobFailedError,
  RequestTimeoutError,
  ResultTimeoutError,
  rateLimitOf,
} from "./errors.ts";
import { PagedList } from "./paginate.ts";
import { abortAfter, type Caller, call, seg } from "./request.ts";
import type {
  CancelResult,
  Duration,
  HandlerResult,
  Job,
  JobLogEntry,
  JobSummary,
  ListJobsQuery,
  Page,
  PageQuery,
  Problem,
  RateLimitState,
  SubmitJobRequest,
  SubmitManyItem,
} from "./types.ts";
import { type JobUpdate, pause, streamUpdates, type UpdatesOptions } from "./updates.ts";

/** One job's outcome of {@link JobsApi.submitMany}, at the job's index. */
export type SubmitManyOutcome =
  /** Stored now (`job.submitted` is what `POST /v1/jobs` would have answered). */
  | { outcome: "accepted"; status: 202; job: JobHandle }
  /** Its idempotency key was used before (or by an earlier job of the batch): the first job. */
  | { outcome: "replayed"; status: 200; job: JobHandle }
  /** Not stored: the problem `POST /v1/jobs` would have answered (422, 429, 503, …). */
  | { outcome: "failed"; status: number; problem: Problem };

/** What {@link JobsApi.submitMany} answers: one outcome per job, in order, and their counts. */
export interface SubmittedMany {
  items: SubmitManyOutcome[];
  accepted: number;
  replayed: number;
  failed: number;
  /**
   * Where the tenant's submit quota stands after the batch (`undefined` without a quota): after
   * items refused with 429, `resetSeconds` says when to send them again.
   */
  rateLimit: RateLimitState | undefined;
}

/** Longest single `?wait=` asked for; the server caps waits (30 s by default) anyway. */
const MAX_POLL_MS = 25_000;
/** A poll answered sooner than this without a final state is followed by a short pause. */
const MIN_POLL_GAP_MS = 250;
/**
 * How long past its `timeout` a `result()` still waits for the answer of a poll under way (the
 * server answers a long-poll at the deadline; this is the answer's way back). Past it the poll is
 * aborted: a server that does not answer does not hold the wait.
 */
const ANSWER_GRACE_MS = 1_000;

/** Options of {@link JobHandle.result}. */
export interface ResultOptions {
  /**
   * Give up after this long with a {@link ResultTimeoutError}; with a `RequestTimeoutError` when
   * no poll was answered in that time and a second more (the server does not answer).
   * @default "30s"
   */
  timeout?: Duration | undefined;
  /** Abort the wait (the pending request is aborted too). */
  signal?: AbortSignal | undefined;
}

/**
 * A job by id, with the calls that concern it.
 *
 * @example
 * const job = await client.jobs.submit({ handler: "email.send", input: { to: "a@b.c" } });
 * const result = await job.result({ timeout: "1m" });
 */
export class JobHandle<R = unknown> {
  /** The job's id. */
  readonly id: string;
  /** What the submit answered (absent on a handle made from an id). */
  readonly submitted: JobSummary | undefined;
  /** True when the submit's idempotency key was already used: this is the first job. */
  readonly replayed: boolean;
  /**
   * Where the tenant's submit quota stood after the submit that made this handle (`undefined`
   * without a quota, or on a handle not made by a submit).
   */
  readonly rateLimit: RateLimitState | undefined;
  readonly #caller: Caller;

  constructor(
    caller: Caller,
    id: string,
    submitted?: JobSummary,
    replayed = false,
    rateLimit?: RateLimitState,
  ) {
    this.#caller = caller;
    this.id = id;
    this.submitted = submitted;
    this.replayed = replayed;
    this.rateLimit = rateLimit;
  }

  /**
   * The job now.
   *
   * @example
   * const { status, attempts } = await job.status();
   */
  async status(): Promise<Job> {
    return (await call<Job>(this.#caller, "GET", `/v1/jobs/${seg(this.id)}`)).data;
  }

  /**
   * Wait for the job's result: long-polls `GET /v1/jobs/:id?wait=` until the job is final or
   * `timeout` passes. Throws {@link JobFailedError} when it ends `dead` or `skipped`,
   * {@link JobCancelledError} when cancelled, {@link ResultTimeoutError} on timeout.
   *
   * @example
   * const { hello } = await job.result<{ hello: string }>({ timeout: "10s" });
   */
  async result<T = R>(options: ResultOptions = {}): Promise<T> {
    const timeoutMs = parseDuration(options.timeout ?? "30s");
    if (timeoutMs === undefined) throw new RangeError(`not a duration: ${String(options.timeout)}`);
    const deadline = Date.now() + timeoutMs;
    const path = `/v1/jobs/${seg(this.id)}`;
    // The caller's signal, and the deadline: a poll still unanswered a grace after it is aborted.
    const limitMs = timeoutMs + ANSWER_GRACE_MS;
    const wait = abortAfter(
      options.signal,
      limitMs,
      () => new RequestTimeoutError(`GET ${path}`, limitMs, "result"),
    );
    let last: Job | undefined;
    try {
      for (;;) {
        const left = deadline - Date.now();
        const asked = Math.max(0, Math.min(left, MAX_POLL_MS));
        const started = Date.now();
        const { data: job } = await call<Job>(this.#caller, "GET", path, {
          query: { wait: asked },
          waitMs: asked,
          signal: wait.signal,
        });
        last = job;
        switch (job.status) {
          case "succeeded":
            return job.result as T;
          case "dead":
          case "skipped":
            throw new JobFailedError(job);
          case "cancelled":
            throw new JobCancelledError(job);
        }
        if (Date.now() >= deadline) throw new ResultTimeoutError(job, timeoutMs);
        const took = Date.now() - started;
        // Ended early by an abort: the next request then rejects with the signal's reason.
        if (took < MIN_POLL_GAP_MS) {
          await pause(Math.min(MIN_POLL_GAP_MS - took, deadline - Date.now()), wait.signal);
        }
      }
    } catch (error) {
      // The deadline cut a poll: the job as last seen, else the server never answered.
      const lapsed = wait.timedOut();
      if (lapsed && !options.signal?.aborted) {
        throw last ? new ResultTimeoutError(last, timeoutMs) : lapsed;
      }
      throw error;
    } finally {
      wait.done();
    }
  }

  /**
   * The job's updates as they happen, over Server-Sent Events (`GET /v1/jobs/:id/stream`): every
   * status change from its creation (`queued`, `running`, `failed` before a retry, …), its
   * progress values, and last `done` with the final job (its `result`, typed by the handler map
   * when the handle is, or its `error`). Reconnects with `Last-Event-ID` when the connection drops
   * or the server ends the stream (it does after a few minutes), missing nothing; ends after
   * `done`, or when `signal` aborts or the loop breaks.
   *
   * @example
   * for await (const update of job.updates()) {
   *   if (update.type === "progress") bar.set(update.value);
   *   if (update.type === "done") console.log(update.job.status, update.job.result);
   * }
   */
  updates(options: UpdatesOptions = {}): AsyncGenerator<JobUpdate<R>, void, undefined> {
    return streamUpdates<R>(this.#caller, `/v1/jobs/${seg(this.id)}/stream`, options);
  }

  /**
   * Cancel the job. A `queued` one answers `{ id, status: "cancelled" }`; a `running` one answers
   * the job, still `running` with `cancelRequested: true`: its handler's signal is aborted and it
   * ends `cancelled` within about a second (see docs/api.md). A finished one answers with a
   * `ConflictError`.
   *
   * @example
   * const answer = await job.cancel();
   * if (answer.status === "running") await job.result().catch(() => {}); // ends cancelled
   */
  async cancel(): Promise<CancelResult> {
    return (await call<CancelResult>(this.#caller, "DELETE", `/v1/jobs/${seg(this.id)}`)).data;
  }

  /**
   * The job's log (`ctx.log()` of its handler), oldest kept entry first, across as many pages as
   * you iterate. The last 100 entries are kept.
   *
   * @example
   * for await (const entry of job.logs()) console.log(entry.at, entry.message);
   */
  logs(query: PageQuery = {}): PagedList<JobLogEntry> {
    const { cursor, ...rest } = query;
    const path = `/v1/jobs/${seg(this.id)}/logs`;
    return new PagedList(
      async (next) =>
        (
          await call<Page<JobLogEntry>>(this.#caller, "GET", path, {
            query: { ...rest, cursor: next },
          })
        ).data,
      cursor,
    );
  }
}

/** `client.jobs`. */
export class JobsApi<H extends Handlers = Handlers> {
  readonly #caller: Caller;

  constructor(caller: Caller) {
    this.#caller = caller;
  }

  /**
   * Submit a job. With an `idempotencyKey` already used, the answer is the first job
   * (`handle.replayed === true`) and nothing new runs.
   *
   * @example
   * const job = await client.jobs.submit({ handler: "echo", input: { hi: 1 }, delay: "5s" });
   * console.log(job.id, job.submitted?.runAt);
   */
  async submit<K extends HandlerName<H>>(
    body: SubmitJobRequest<H, K>,
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<JobHandle<HandlerResult<H, K>>> {
    const { data, response } = await call<JobSummary>(this.#caller, "POST", "/v1/jobs", {
      body,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const replayed = response.headers.get("idempotent-replayed") === "true";
    return new JobHandle<HandlerResult<H, K>>(
      this.#caller,
      data.id,
      data,
      replayed,
      rateLimitOf(response.headers),
    );
  }

  /**
   * Submit up to 1,000 jobs in one request (`POST /v1/jobs/batch`). Each is checked and admitted
   * on its own: the answer lists one outcome per job, in order — `accepted`, `replayed` (its
   * idempotency key was used before, or by an earlier job of this batch) or `failed` with its
   * problem (e.g. 422 for bad input, 429 past the quota: a quota admits jobs up to its limit).
   * Only a request that is wrong as a whole throws (`ValidationError`, 413 over 1,000 jobs, …).
   *
   * @example
   * const { items, failed } = await client.jobs.submitMany(
   *   users.map((u) => ({ handler: "email.send", input: { to: u.email }, idempotencyKey: `welcome-${u.id}` })),
   * );
   * for (const item of items) if (item.outcome === "failed") console.warn(item.problem.detail);
   */
  async submitMany(
    jobs: readonly SubmitManyItem<H>[],
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<SubmittedMany> {
    const { data, response } = await call<BatchResource>(this.#caller, "POST", "/v1/jobs/batch", {
      body: { jobs },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const items = data.items.map((item): SubmitManyOutcome => {
      if (item.outcome === "failed") return item;
      const handle = new JobHandle(
        this.#caller,
        item.job.id,
        item.job,
        item.outcome === "replayed",
      );
      return item.outcome === "accepted"
        ? { outcome: "accepted", status: 202, job: handle }
        : { outcome: "replayed", status: 200, job: handle };
    });
    return {
      items,
      accepted: data.accepted,
      replayed: data.replayed,
      failed: data.failed,
      rateLimit: rateLimitOf(response.headers),
    };
  }

  /**
   * A job by id (`NotFoundError` if unknown).
   *
   * @example
   * const job = await client.jobs.get("j_0mwwp6pqtd4j3d52g7p1y");
   */
  async get(id: string): Promise<Job> {
    return (await call<Job>(this.#caller, "GET", `/v1/jobs/${seg(id)}`)).data;
  }

  /**
   * A handle for a job id you already have; makes no request.
   *
   * @example
   * const result = await client.jobs.handle(id).result();
   */
  handle<R = unknown>(id: string): JobHandle<R> {
    return new JobHandle<R>(this.#caller, id);
  }

  /**
   * Cancel a job: a queued one at once; a running one is asked to stop (see
   * {@link JobHandle.cancel}).
   *
   * @example
   * await client.jobs.cancel(id);
   */
  cancel(id: string): Promise<CancelResult> {
    return this.handle(id).cancel();
  }

  /**
   * A job's log, oldest kept entry first (`NotFoundError` if the job is unknown).
   *
   * @example
   * for await (const entry of client.jobs.logs(id)) console.log(entry.level, entry.message);
   */
  logs(id: string, query: PageQuery = {}): PagedList<JobLogEntry> {
    return this.handle(id).logs(query);
  }

  /**
   * Recent jobs, newest first, across as many pages as you iterate.
   *
   * @example
   * for await (const job of client.jobs.list({ status: "succeeded", limit: 50 })) console.log(job.id);
   */
  list(query: ListJobsQuery = {}): PagedList<Job> {
    const { cursor, ...filters } = query;
    return new PagedList(
      async (next) =>
        (
          await call<Page<Job>>(this.#caller, "GET", "/v1/jobs", {
            query: { ...filters, cursor: next },
          })
        ).data,
      cursor,
    );
  }
}
