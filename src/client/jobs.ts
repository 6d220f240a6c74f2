/**
 * @module
 * `client.jobs`: submit, read, wait for a result (long-poll), read the log, cancel, list.
 */
import { parseDuration } from "../core/duration.ts";
import type { HandlerName, Handlers } from "../engine/handlers.ts";
import { JobCancelledError, JobFailedError, ResultTimeoutError } from "./errors.ts";
import { PagedList } from "./paginate.ts";
import { type Caller, call, seg } from "./request.ts";
import type {
  CancelResult,
  Duration,
  Job,
  JobLogEntry,
  JobSummary,
  ListJobsQuery,
  Page,
  PageQuery,
  SubmitJobRequest,
} from "./types.ts";

/** Longest single `?wait=` asked for; the server caps waits (30 s by default) anyway. */
const MAX_POLL_MS = 25_000;
/** A poll answered sooner than this without a final state is followed by a short pause. */
const MIN_POLL_GAP_MS = 250;

/** Options of {@link JobHandle.result}. */
export interface ResultOptions {
  /**
   * Give up after this long with a {@link ResultTimeoutError}.
   * @default "30s"
   */
  timeout?: Duration;
  /** Abort the wait (the pending request is aborted too). */
  signal?: AbortSignal;
}

/**
 * A job by id, with the calls that concern it.
 *
 * @example
 * const job = await client.jobs.submit({ handler: "email.send", input: { to: "a@b.c" } });
 * const result = await job.result({ timeout: "1m" });
 */
export class JobHandle {
  /** The job's id. */
  readonly id: string;
  /** What the submit answered (absent on a handle made from an id). */
  readonly submitted: JobSummary | undefined;
  /** True when the submit's idempotency key was already used: this is the first job. */
  readonly replayed: boolean;
  readonly #caller: Caller;

  constructor(caller: Caller, id: string, submitted?: JobSummary, replayed = false) {
    this.#caller = caller;
    this.id = id;
    this.submitted = submitted;
    this.replayed = replayed;
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
  async result<T = unknown>(options: ResultOptions = {}): Promise<T> {
    const timeoutMs = parseDuration(options.timeout ?? "30s");
    if (timeoutMs === undefined) throw new RangeError(`not a duration: ${String(options.timeout)}`);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const left = deadline - Date.now();
      const asked = Math.max(0, Math.min(left, MAX_POLL_MS));
      const started = Date.now();
      const { data: job } = await call<Job>(this.#caller, "GET", `/v1/jobs/${seg(this.id)}`, {
        query: { wait: asked },
        ...(options.signal ? { signal: options.signal } : {}),
      });
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
      if (took < MIN_POLL_GAP_MS)
        await pause(Math.min(MIN_POLL_GAP_MS - took, deadline - Date.now()));
    }
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
    options: { signal?: AbortSignal } = {},
  ): Promise<JobHandle> {
    const { data, response } = await call<JobSummary>(this.#caller, "POST", "/v1/jobs", {
      body,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const replayed = response.headers.get("idempotent-replayed") === "true";
    return new JobHandle(this.#caller, data.id, data, replayed);
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
  handle(id: string): JobHandle {
    return new JobHandle(this.#caller, id);
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

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
