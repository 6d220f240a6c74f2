/**
 * @module
 * The broker's jobs: submit (one store operation — one Redis round trip — plus one publish),
 * cancel, reads, and the dead-letter list. `Broker` (./broker.ts) is the public face.
 */
import { ConflictError, NotFoundError } from "../core/errors.ts";
import { quotaCheck } from "../core/manifest.ts";
import type { JobLogEntry, JobRecord, NewJob, OutboxMessage } from "../core/model.ts";
import { parseSubmitJob, type SubmitJobInput } from "../core/schemas.ts";
import type { ListJobsQuery, Page, Store, SubmitTiming, WebhookSubmit } from "../store/port.ts";
import type { Transport } from "../transport/port.ts";
import {
  type Actor,
  presentJob,
  scheduleStoreIdOf,
  scopedTenant,
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
  JOB_TIMES_ALLOWANCE_BYTES,
  permitSubmit,
  type QuotaReport,
  quotaReport,
  requireHandler,
  submitAdmission,
  TRACE_ALLOWANCE_BYTES,
  timeoutWithin,
} from "./admission.ts";
import type { HandlerInput, HandlerName, Handlers, InputField } from "./handlers.ts";
import { newJobId } from "./ids.ts";
import type { ResolvedOptions } from "./options.ts";
import { withPlacement } from "./placement.ts";
import { PublishCoalescer, publishAll } from "./publish.ts";
import {
  type IncomingTrace,
  incomingTrace,
  inSpan,
  spanFailed,
  startSubmitSpan,
  storedTrace,
  submitSpanDone,
} from "./tracing.ts";

/**
 * A job for handler `K` of the handler map `H`: the fields of `POST /v1/jobs`, with `handler`
 * limited to the map's names and `input` typed by that handler's schema (required when the schema
 * does not accept `undefined`). With an untyped map, any name and any input.
 */
export type JobRequest<
  H extends Handlers = Handlers,
  K extends HandlerName<H> = HandlerName<H>,
> = Omit<SubmitJobInput, "handler" | "input"> & { handler: K } & InputField<HandlerInput<H, K>>;

/**
 * A flow for `Broker.submitFlow`: `children` submitted first, then `parent`, which waits for them
 * all (its `after` gains their ids). `idempotencyKey` (at most 240 characters) makes submitting it
 * again safe: child `i`'s key is `flow:<key>:child:<i>`, the parent's `flow:<key>:parent`, unless
 * a job has its own.
 */
export interface FlowRequest<H extends Handlers = Handlers> {
  children: JobRequest<H>[];
  parent: JobRequest<H>;
  idempotencyKey?: string;
}

/** Result of `Broker.submit`. */
export interface Submitted {
  job: JobRecord;
  /** True when the idempotency key was seen before: `job` is the first job. */
  replayed: boolean;
  /** Where the tenant's submit quota stands (absent without a quota, and on a replay). */
  quota?: QuotaReport;
}

/**
 * Where a submit comes from, when not from `POST /v1/jobs`: an inbound webhook
 * (docs/webhooks.md) keeps its idempotency key as long as its sender retries, and the store
 * records the delivery in the same write (see `SubmitTiming`).
 */
export interface SubmitVia {
  /**
   * The job's idempotency key, set by the server rather than the body: an inbound webhook's
   * `hook:<endpoint>:…`, a prefix no body may use (`RESERVED_KEY_PREFIX`, src/core/schemas.ts).
   */
  idempotencyKey?: string;
  /** How long the job's idempotency key lives (the store's default applies when longer). */
  idempotencyMs?: number;
  webhook?: WebhookSubmit;
  /**
   * The W3C trace context of the request that submits it (`traceparent`, `tracestate` headers, as
   * received: a malformed one is ignored). Without it, the active OpenTelemetry context's.
   */
  trace?: IncomingTrace;
}

/** A job checked and built by `JobsBroker.prepare`, not yet stored. */
export interface PreparedSubmit {
  job: NewJob;
  quota: ReturnType<typeof quotaCheck>;
  runAt: number | undefined;
  delayMs: number;
}

/**
 * How long a background publish waits for others to share its queue request: a submit server
 * under load then sends fewer, fuller batches (about a tenth less CPU per submit at 2,500
 * submits/s, docs/adr/0025-node-http-for-qstash-batches.md); a message reaches the queue at most
 * this much later. Nobody waits for a background publish, so no answer is delayed.
 */
export const BACKGROUND_LINGER_MS = 10;

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
   * `EngineConfig.backgroundPublish`). By default the submit waits for its publish.
   */
  backgroundPublish?: boolean;
}

/**
 * Accepts jobs, and answers for them: cancel, reads, dead letters.
 *
 * @example
 * const jobs = new JobsBroker({ store, transport, handlers, options: resolveOptions() });
 * const { job } = await jobs.submit({ handler: "email.send", input: { to: "a@b.c" } });
 */
export class JobsBroker<H extends Handlers = Handlers> {
  readonly #coalescer: PublishCoalescer;

  constructor(private readonly deps: BrokerDeps<H>) {
    const background = deps.backgroundPublish === true && !deps.defer;
    this.#coalescer = new PublishCoalescer(
      deps.transport,
      deps.options.tick.publishBatch,
      deps.options.logger,
      // Background publishes keep no caller waiting: they may wait for fuller batches.
      background,
      deps.store,
      background ? BACKGROUND_LINGER_MS : 0,
    );
  }

  /**
   * Submit a one-off job: one atomic store write — with the actor's quota and the degradation
   * controller checked inside it — then a publish (a failed publish is recovered by the tick).
   *
   * @throws ValidationError (400) for a malformed job; ForbiddenError (403) for a handler outside
   * the actor's manifest; InputTooLargeError (413); UnprocessableError (422) for an unknown
   * handler, input its schema refuses, or a timeout over the manifest's limit;
   * QuotaExceededError (429); OverloadedError (503) while critical with `critical: "reject"`;
   * UnprocessableError (422 `unknown_dependencies`) when `after` names jobs the tenant does not
   * have. With `after`, a job waits (`waiting`, not published) until its dependencies finish.
   */
  submit<K extends HandlerName<H>>(
    body: JobRequest<H, K>,
    actor: Actor = {},
    via: SubmitVia = {},
  ): Promise<Submitted> {
    // Not an `async` function (one promise less per submit); a refusal still rejects, never throws.
    let prepared: PreparedSubmit;
    try {
      prepared = this.prepare(body, actor);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.store(prepared, via);
  }

  /**
   * Which of `ids` name jobs of `tenant`, each distinct id asked once: by the store's
   * `jobsExist` (status and tenant only, one round trip), else by reading each job. For a write
   * of several jobs that must not stop half-way over an unknown dependency (a flow), read before
   * anything is written; the store still checks at the write (a dependency that expires in
   * between is refused then).
   */
  async knownJobs(ids: readonly string[], tenant: string): Promise<Set<string>> {
    const distinct = [...new Set(ids)];
    const { store } = this.deps;
    const found = store.jobsExist
      ? await store.jobsExist(distinct, tenant)
      : (await Promise.all(distinct.map((id) => store.getJob(id, tenant)))).map(
          (record) => record?.tenant === tenant,
        );
    return new Set(distinct.filter((_, i) => found[i]));
  }

  /**
   * Everything {@link submit} checks before it writes — the body, the manifest, the handler and
   * its input — and the job it would store; throws as `submit` does. Nothing is written.
   */
  prepare(body: unknown, actor: Actor = {}): PreparedSubmit {
    const req = parseSubmitJob(body);
    const tenant = tenantOf(actor);
    const rules = permitSubmit(req.handler, actor);
    const handler = requireHandler(this.deps.handlers, req.handler);
    const input = req.input === undefined ? null : req.input;
    checkInputValues(input);
    checkInputSize(input, rules, "job", this.deps.options.maxInputBytes);
    checkInput(req.handler, handler, input);
    const { jobs } = this.deps.options;
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
    };
    // Assigned rather than spread in (cheaper), in the same key order.
    if (req.idempotencyKey) job.idempotencyKey = req.idempotencyKey;
    if (req.after?.length) {
      job.after = req.after;
      if (req.onFailure) job.onFailure = req.onFailure;
    }
    if (req.placement) Object.assign(job, withPlacement(req.placement));
    const quota = quotaCheck("submit", tenant, rules?.submitWindows ?? []);
    return { job, quota, runAt: req.runAt ?? undefined, delayMs: req.delay ?? 0 };
  }

  /**
   * 413 when `job` (a {@link prepare}d one), as {@link store} would write it with `via` (its idempotency key, and a
   * trace of at most {@link TRACE_ALLOWANCE_BYTES}), is over the engine's `maxJobBytes`: for a
   * write of several jobs that must not stop half-way over one (a flow). Nothing is written.
   */
  checkStoredSize(job: NewJob, via: SubmitVia = {}): void {
    const max = this.deps.options.maxJobBytes;
    if (max === Number.POSITIVE_INFINITY) return;
    const keyed =
      via.idempotencyKey === undefined
        ? job
        : Object.assign({}, job, { idempotencyKey: via.idempotencyKey });
    const allowance = JOB_TIMES_ALLOWANCE_BYTES + (via.trace ? TRACE_ALLOWANCE_BYTES : 0);
    checkJobSize(keyed, "job", max, allowance);
  }

  /**
   * Store (and publish) a {@link prepare}d job: the write half of {@link submit}, in a submit span
   * (src/engine/tracing.ts; the API's no-op without an OpenTelemetry SDK).
   */
  store(prepared: PreparedSubmit, via: SubmitVia = {}): Promise<Submitted> {
    let incoming: ReturnType<typeof incomingTrace>;
    let span: ReturnType<typeof startSubmitSpan>;
    try {
      incoming = via.trace && incomingTrace(via.trace);
      span = startSubmitSpan(incoming);
      if (!span.isRecording()) {
        // Nothing to record (no SDK, or sampled out): the span's calls below would all do
        // nothing, and ending it now is the same as ending it later. No async layer around the
        // store then.
        const trace = storedTrace(span, incoming);
        span.end();
        return this.#store(prepared, via, trace);
      }
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#storeInSpan(prepared, via, incoming, span);
  }

  async #storeInSpan(
    prepared: PreparedSubmit,
    via: SubmitVia,
    incoming: ReturnType<typeof incomingTrace>,
    span: ReturnType<typeof startSubmitSpan>,
  ): Promise<Submitted> {
    try {
      const trace = storedTrace(span, incoming);
      const submitted = await inSpan(span, this.#store, this, prepared, via, trace);
      submitSpanDone(span, submitted.job, submitted.replayed);
      return submitted;
    } catch (error) {
      spanFailed(span, error);
      throw error;
    } finally {
      span.end();
    }
  }

  async #store(
    prepared: PreparedSubmit,
    via: SubmitVia,
    trace: ReturnType<typeof storedTrace>,
  ): Promise<Submitted> {
    const { quota } = prepared;
    // Copied with Object.assign, not `{ ...job, more }` (docs/adr/0027-objects-on-hot-paths.md).
    const keyed =
      via.idempotencyKey === undefined
        ? prepared.job
        : Object.assign({}, prepared.job, { idempotencyKey: via.idempotencyKey });
    const job = trace === undefined ? keyed : Object.assign({}, keyed, { trace });
    const { tick, logger, maxJobBytes } = this.deps.options;
    // Measured as the store will write it, a webhook's idempotency key and the trace included.
    checkJobSize(job, "job", maxJobBytes, JOB_TIMES_ALLOWANCE_BYTES);
    const admission = submitAdmission(this.deps.options, quota);
    // Assigned rather than spread in (cheaper), in the same key order.
    const timing: SubmitTiming =
      prepared.runAt !== undefined
        ? { runAt: prepared.runAt, delayMs: prepared.delayMs, recoverGraceMs: tick.recoverGraceMs }
        : { delayMs: prepared.delayMs, recoverGraceMs: tick.recoverGraceMs };
    if (via.idempotencyMs !== undefined) timing.idempotencyMs = via.idempotencyMs;
    if (via.webhook) timing.webhook = via.webhook;
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
        this.deps.defer(
          publishAll(this.deps.transport, [result.message], 1, logger, this.deps.store),
        );
      else if (this.deps.backgroundPublish) this.#coalescer.send(result.message);
      else await this.#coalescer.publish(result.message);
    }
    return {
      job: presentJob(result.job),
      replayed: result.replayed,
      ...quotaReport(result.quota, quota),
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

  /**
   * Publish the messages a batch stored (src/engine/batch.ts), in the queue's batches, the way
   * {@link store} publishes one: handed to `defer`, sent in the background, or awaited. Never
   * rejects (what the queue did not take stays in the outbox for the tick).
   */
  async publishMany(messages: OutboxMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const { transport, store, options } = this.deps;
    if (this.deps.defer) {
      this.deps.defer(
        publishAll(transport, messages, options.tick.publishBatch, options.logger, store),
      );
    } else if (this.deps.backgroundPublish) {
      for (const message of messages) this.#coalescer.send(message);
    } else await Promise.all(messages.map((message) => this.#coalescer.publish(message)));
  }

  /**
   * Cancel a job (404 when it is another tenant's, see {@link Actor}): a queued one at once (the
   * answer is `cancelled`); a running one is asked to stop (the answer is still `running`, with
   * `cancelRequested`; it ends `cancelled` once its runner sees the request, within the engine's
   * `cancelCheckMs`, see `JobStore.cancelJob`).
   */
  async cancel(id: string, actor: Actor = {}): Promise<JobRecord> {
    if (actor.scopes !== undefined) await this.ownJob(id, actor, "job");
    const res = await this.deps.store.cancelJob(id);
    if (res.kind === "missing") throw new NotFoundError("job", id);
    if (res.kind === "conflict") {
      throw new ConflictError(
        "job_not_queued",
        `job "${id}" is ${res.job.status}; only queued, waiting and running jobs can be cancelled`,
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
    await publishAll(
      this.deps.transport,
      [res.message],
      1,
      this.deps.options.logger,
      this.deps.store,
    );
    return presentJob(res.job);
  }

  /** Delete a dead job (404 when it is not dead, or another tenant's). */
  async deleteDead(id: string, actor: Actor = {}): Promise<void> {
    if (actor.scopes !== undefined) await this.ownJob(id, actor, "dead job");
    if (!(await this.deps.store.deleteDead(id))) throw new NotFoundError("dead job", id);
  }

  /**
   * A job's log, oldest kept entry first (404 when it is missing or another tenant's).
   */
  async readLogs(
    id: string,
    query: { limit: number; cursor?: string | undefined },
    actor: Actor = {},
  ): Promise<Page<JobLogEntry>> {
    await this.getJob(id, actor);
    const page = await this.deps.store.readLogs(id, query);
    if (!page) throw new NotFoundError("job", id);
    return page;
  }

  /** A job by id (404 when it is another tenant's, see {@link Actor}). */
  async getJob(id: string, actor: Actor = {}): Promise<JobRecord> {
    const job = await this.deps.store.getJob(id, scopedTenant(actor));
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
    const page = await this.deps.store.listJobs(
      Object.assign(
        {},
        query,
        { tenant: tenantOf(actor) },
        query.scheduleId !== undefined
          ? { scheduleId: scheduleStoreIdOf(query.scheduleId, actor) }
          : {},
      ),
    );
    return Object.assign({}, page, { items: page.items.map(presentJob) });
  }

  /** The actor's tenant's dead letters, newest death first. */
  async listDead(
    query: { limit: number; cursor?: string | undefined },
    actor: Actor = {},
  ): Promise<Page<JobRecord>> {
    const page = await this.deps.store.listDead(
      Object.assign({}, query, { tenant: tenantOf(actor) }),
    );
    return Object.assign({}, page, { items: page.items.map(presentJob) });
  }

  /** 404 unless the job exists and the actor sees it. */
  private async ownJob(id: string, actor: Actor, what: string): Promise<void> {
    const job = await this.deps.store.getJob(id, scopedTenant(actor));
    if (!job || !sees(actor, job.tenant)) throw new NotFoundError(what, id);
  }
}
