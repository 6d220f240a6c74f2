/**
 * @module
 * The runner: what the worker route does with a delivery (docs/architecture.md, "The life of a
 * job and of an occurrence").
 * verify signature → `beginRun` (a run that succeeded is never run again; another live attempt
 * → 409; the handler's concurrency limit reached → 409, not an attempt; a run lease that ran out
 * before its answer arrived → 409, not run) → handler with an `AbortSignal` timeout (and a cancel
 * watch, `attempt.ts`) → `finishRun`.
 *
 * The runner answers with a {@link DeliveryOutcome} (done, retry, give up, busy, unauthorized, bad
 * request); each transport turns it into its wire answer — for the HTTP queues (QStash, the local
 * queue) `src/http/delivery.ts` renders it (200, 500 to retry, 489 to give up, 409 busy, …).
 */
import * as z from "zod";
import type { DeliveryOutcome } from "../core/delivery.ts";
import {
  isCancelledError,
  isNonRetryableError,
  isRetryAfterError,
  TimeoutError,
} from "../core/errors.ts";
import {
  type DeliveryToken,
  FINAL_JOB_STATUSES,
  type JobError,
  type JobRecord,
  type JobSpec,
} from "../core/model.ts";
import type { Placement } from "../core/placement.ts";
import { MAX_DELAY_MS, MIN_TIMEOUT_MS } from "../core/schemas.ts";
import { type TraceContext, traceOfUnknown } from "../core/trace.ts";
import type { FinishRunOptions, FinishRunResult, RunOutcome, Store } from "../store/port.ts";
import type { Delivery, Transport } from "../transport/port.ts";
import { attemptControls } from "./attempt.ts";
import { AttemptContext } from "./attempt-context.ts";
import type { Broker } from "./broker.ts";
import { pullRecheckMs, runLimitOf } from "./concurrency.ts";
import { readSpec } from "./delivery-spec.ts";
import { type Handlers, handlerOf, parseInput } from "./handlers.ts";
import { LazyAbort } from "./lazy-abort.ts";
import type { Logger } from "./logger.ts";
import type { ResolvedOptions } from "./options.ts";
import { deliveryMismatch, refuseDelivery } from "./placement.ts";
import { rateLimitOf } from "./rate-limit.ts";
import { watchTimeout } from "./timeout-watch.ts";
import { inSpan, runSpanDone, startRunSpan } from "./tracing.ts";
import { waitUntil } from "./wait-until.ts";

/** What the runner needs. */
export interface RunnerDeps {
  store: Store;
  transport: Transport;
  handlers: Handlers;
  options: ResolvedOptions;
  /** For `ctx.jobs.submit()`. */
  broker: Broker;
}

/** The parts of the queue's failure-callback body we use (QStash's shape). */
const failureCallbackSchema = z.object({
  status: z.number().optional(),
  body: z.string().optional(),
  sourceBody: z.string(),
  retried: z.number().optional(),
});

/**
 * How long after a job became due a delivery of a handler this node does not have is handed back
 * (not an attempt) rather than recorded dead: long enough for a rolling deploy to finish.
 */
export const UNKNOWN_HANDLER_GRACE_MS = 600_000;

/** When a push queue tries such a delivery again (each try spends one of QStash's retries). */
const UNKNOWN_HANDLER_PUSH_RETRY_MS = 10_000;

/**
 * Runs deliveries.
 *
 * @example
 * const outcome = await runner.deliver({ url, headers: req.headers, body: await req.text() });
 * return deliveryResponse(outcome); // src/http/delivery.ts: the queue's HTTP answer
 */
export class Runner {
  constructor(private readonly deps: RunnerDeps) {}

  /**
   * Handle one delivery on the worker route. Log lines (the handler's `ctx.logger` included) go
   * to `logger`, e.g. the delivering request's.
   */
  async deliver(
    delivery: Delivery,
    logger: Logger = this.deps.options.logger,
  ): Promise<DeliveryOutcome> {
    const token = await this.#verify(delivery);
    if (token === false) return { kind: "unauthorized" };
    return this.#begin(delivery.body, token, logger);
  }

  /**
   * Handle one delivery a worker of this process pulled from a queue it reads itself (Redis
   * Streams: `PullWorker`). Nothing to verify — it never crossed the network as a request — and
   * no token: a second copy of it is told apart by the job's own state, as every redelivery is.
   * `handlerDone` is called once the handler has returned (or thrown, or timed out), before its
   * outcome is recorded; not at all when no handler ran.
   */
  runPulled(
    body: string,
    logger: Logger = this.deps.options.logger,
    handlerDone?: () => void,
  ): Promise<DeliveryOutcome> {
    return this.#begin(body, undefined, logger, true, handlerDone);
  }

  async #begin(
    body: string,
    token: DeliveryToken | undefined,
    logger: Logger,
    pulled = false,
    handlerDone?: () => void,
  ): Promise<DeliveryOutcome> {
    const spec = parseSpec(body);
    if (!spec) return { kind: "bad-request", expected: "job" };

    const { store, options } = this.deps;
    // Placement: a node that may not run the job hands it back before anything begins.
    const mismatch = deliveryMismatch(spec.placement, options.node);
    if (mismatch !== undefined)
      return refuseDelivery(store, options, spec, mismatch, logger, pulled);
    const definition = handlerOf(this.deps.handlers, spec.handler);
    // A handler this node does not have, while a rolling deploy runs two versions (or a worker
    // pool serves fewer handlers than the API): handed back, not an attempt, so a node that has
    // it runs the job. Not for ever: past the grace, the attempt records it dead, as before.
    if (
      definition === undefined &&
      Date.now() - Math.max(spec.createdAt, spec.runAt) < UNKNOWN_HANDLER_GRACE_MS
    ) {
      // A leftover delivery of a job that is finished (or gone) is acknowledged instead, as a
      // placement refusal's is, so it does not circle for the whole grace. (A schedule's
      // occurrence has no record until it first begins: missing, it is still to run.)
      const stored = await store.getJob(spec.id, spec.tenant);
      if (stored === null && spec.scheduleId === undefined) {
        return { kind: "done", id: spec.id, status: "gone" };
      }
      if (stored && FINAL_JOB_STATUSES.includes(stored.status)) {
        return { kind: "done", id: spec.id, status: stored.status };
      }
      logger.warn("no handler of this name on this node; handed back", {
        jobId: spec.id,
        handler: spec.handler,
      });
      // A pull queue's redelivery costs no retry: looked at again soon, as a placement refusal.
      const retryAfterMs = pulled ? pullRecheckMs() : UNKNOWN_HANDLER_PUSH_RETRY_MS;
      return { kind: "busy", reason: "unknown-handler", retryAfterMs };
    }
    // A queue whose not-before times are whole seconds (QStash) delivers a job due at a
    // sub-second time up to a second early: wait out the rest, so the handler starts on time.
    const early = spec.runAt - Date.now();
    if (early > 0 && early <= EARLY_WAIT_MS) await waitUntil(spec.runAt);
    const leaseMs = spec.timeoutMs + options.leaseGraceMs;
    // A handler with `concurrency`: the store admits the run only while a slot of its key is free.
    // Awaited only when the handler has such a limit: most have none.
    const limit =
      definition?.concurrency === undefined
        ? undefined
        : await runLimitOf(spec.handler, definition, spec.tenant, spec.input);
    const rate =
      definition?.rateLimit === undefined
        ? undefined
        : await rateLimitOf(spec.handler, definition, spec.tenant, spec.input);
    // The run lease starts no earlier than the request does: time it from here.
    const asked = performance.now();
    const begun = await store.beginRun(
      spec,
      leaseMs,
      options.reapAfterMs,
      token,
      limit,
      rate,
      options.instanceId,
    );
    switch (begun.kind) {
      case "replayed":
        // A captured delivery sent again: acknowledged, nothing run, nothing changed.
        logger.warn("delivery replayed; ignored", { jobId: spec.id });
        return { kind: "done", id: spec.id, status: "replayed" };
      case "final":
      case "skipped":
        return { kind: "done", id: spec.id, status: begun.job.status };
      case "busy":
        return { kind: "busy", reason: "attempt-running", retryAfterMs: begun.retryAfterMs };
      case "limited":
        // Not an attempt. A push queue waits until a slot is free at the latest (each 409 spends
        // one of its retries); a pull queue's redelivery costs no retry, so it looks again sooner
        // (a slot may free before the lease that holds it ends). A rate limit alone waits for
        // its window, which nothing shortens: that wait is the least (`minWaitMs`).
        return {
          kind: "busy",
          reason: "limited",
          retryAfterMs: pulled ? Math.min(begun.retryAfterMs, pullRecheckMs()) : begun.retryAfterMs,
          ...(rate !== undefined && limit === undefined ? { minWaitMs: begun.retryAfterMs } : {}),
        };
      case "missing":
        // Expired after it was cancelled or finished: nothing to run, and the queue must stop.
        return { kind: "done", id: spec.id, status: "gone" };
      case "run": {
        // The answer came back after the lease may have run out (this process or the store
        // stalled): another delivery may already run a newer attempt, so running this one could
        // run the handler twice. Let it lapse; the queue's retry runs the job again.
        const waitedMs = performance.now() - asked;
        if (waitedMs >= spec.timeoutMs) {
          logger.warn("run lease ran out before the handler could start", {
            jobId: spec.id,
            attempt: begun.attempt,
            waitedMs: Math.round(waitedMs),
          });
          return { kind: "busy", reason: "lease-lapsed", retryAfterMs: 1_000 };
        }
        // A pull queue redelivers an attempt whose worker stopped mid-handler for as long as it
        // takes (a push queue gives up after its retries and calls back): past the last attempt,
        // the job is dead without running again — a handler that kills its worker every time
        // does not loop forever.
        if (pulled && begun.attempt - (begun.job.attemptBase ?? 0) > begun.job.retries + 1) {
          const error: JobError = {
            name: "DeliveryFailed",
            message: `attempt ${begun.attempt} began after the job's ${begun.job.retries} retries were spent: earlier attempts never finished (their worker stopped mid-handler)`,
          };
          const final = { ok: false as const, final: true, error };
          await store.finishRun(spec.id, begun.attempt, final, options.reapAfterMs);
          logger.warn("attempts spent without an answer; job is dead", { jobId: spec.id });
          return { kind: "give-up", id: spec.id, error };
        }
        // The handler's time counts from the lease's start, not from its own: started late, it
        // gets what is left, so its abort still comes a full grace before the lease lapses.
        return this.run(begun.job, begun.attempt, logger, {
          leaseEndsAt: asked + leaseMs,
          abortAt: asked + spec.timeoutMs,
          trace: spec.trace,
          handlerDone,
        });
      }
    }
  }

  /** Handle the queue's failure callback: the job is dead and listed in the dead-letter list. */
  async dead(delivery: Delivery): Promise<DeliveryOutcome> {
    const token = await this.#verify(delivery);
    if (token === false) return { kind: "unauthorized" };
    const callback = failureCallbackSchema.safeParse(safeJson(delivery.body));
    const spec = callback.success ? parseSpec(decodeBase64(callback.data.sourceBody)) : null;
    if (!callback.success || !spec) return { kind: "bad-request", expected: "failure-callback" };
    const last = callback.data.body ? decodeBase64(callback.data.body) : "";
    const job = await this.deps.store.markDead(
      spec,
      {
        name: "DeliveryFailed",
        message: `delivery failed after ${(callback.data.retried ?? 0) + 1} attempts (last status ${callback.data.status ?? "unknown"})${last ? `: ${last.slice(0, 500)}` : ""}`,
      },
      undefined,
      token,
    );
    // The dispatch the callback reports is still running under an unexpired lease (its worker may
    // have died mid-handler on the last retry): answering 200 would leave it `running` with nobody
    // to deliver it again. Ask the queue to retry the callback once the lease has run out; then
    // markDead either finds the attempt's own outcome or marks the job dead.
    if (job && job.status === "running" && job.runAt === spec.runAt) {
      const waitMs = Math.max(1_000, leaseLeftMs(job, this.deps.options.leaseGraceMs) + 1_000);
      return { kind: "busy", reason: "still-running", retryAfterMs: waitMs };
    }
    // null: the job expired after it was cancelled or finished (it is not re-created).
    return { kind: "done", id: spec.id, status: job ? job.status : "gone" };
  }

  /**
   * The delivery's token when it verifies (`undefined` from a transport that has none), or
   * `false`. A transport that issues tokens must give one: a signature without a usable id, or one
   * that claims a longer life than the queue issues, is refused.
   */
  async #verify(delivery: Delivery): Promise<DeliveryToken | undefined | false> {
    const { transport } = this.deps;
    if (!(await transport.verify(delivery))) return false;
    if (!transport.deliveryToken) return undefined;
    return transport.deliveryToken(delivery) ?? false;
  }

  private async run(
    job: JobRecord,
    attempt: number,
    parent: Logger,
    {
      leaseEndsAt,
      abortAt,
      trace,
      handlerDone,
    }: {
      leaseEndsAt: number;
      abortAt: number;
      trace: TraceContext | undefined;
      handlerDone?: (() => void) | undefined;
    },
  ): Promise<DeliveryOutcome> {
    const { store, handlers, broker } = this.deps;
    const logger = parent.child({ jobId: job.id, handler: job.handler, attempt });
    // Counted from the job's own record, never from the delivery's headers (`Upstash-Retried` is
    // not signed): the last attempt is the one past `retries`, counted from the last re-dispatch
    // out of the dead-letter list (which gets a fresh budget from the queue).
    const lastAttempt = attempt - (job.attemptBase ?? 0) > job.retries;
    // The run span (src/engine/tracing.ts): a child of the trace its delivery carries; the
    // handler runs inside it, so its own spans and the jobs it submits join that trace.
    const span = startRunSpan(job, attempt, trace);
    let outcome: Awaited<ReturnType<Runner["execute"]>>;
    try {
      outcome = await inSpan(
        span,
        this.execute,
        this,
        job,
        attempt,
        lastAttempt,
        handlers,
        logger,
        broker,
        abortAt,
      );
      runSpanDone(span, outcome);
    } finally {
      span.end();
      handlerDone?.();
    }
    const finished = await finishWhileLeased(
      () =>
        store.finishRun(
          job.id,
          attempt,
          outcome,
          this.deps.options.reapAfterMs + (outcome.retryAfterMs ?? 0),
          // The job is read below only after a failure: a success is not sent back.
          RECORD_ONLY[outcome.ok ? 1 : 0],
        ),
      {
        until: leaseEndsAt,
        logger,
      },
    );
    if (finished.kind === "stale") logger.warn("attempt finished after losing its run lease");
    if (outcome.ok) return { kind: "done", id: job.id, status: "succeeded" };
    // Cancelled while it ran: final, never retried (whatever the handler threw).
    if (finished.kind === "ok" && finished.job.status === "cancelled") {
      logger.info("job cancelled while it ran");
      return { kind: "done", id: job.id, status: "cancelled" };
    }
    logger.warn("job attempt failed", { error: outcome.error, final: outcome.final });
    if (outcome.final) return { kind: "give-up", id: job.id, error: outcome.error };
    return {
      kind: "retry",
      id: job.id,
      error: outcome.error,
      ...(outcome.retryAfterMs !== undefined ? { retryAfterMs: outcome.retryAfterMs } : {}),
    };
  }

  private async execute(
    job: JobRecord,
    attempt: number,
    exhausted: boolean,
    handlers: Handlers,
    logger: Logger,
    broker: Broker,
    abortAt: number,
  ): Promise<RunOutcome & { retryAfterMs?: number }> {
    const handler = handlerOf(handlers, job.handler);
    if (!handler) {
      return {
        ok: false,
        final: true,
        error: { name: "UnknownHandler", message: `no handler named "${job.handler}"` },
      };
    }
    let input: unknown = job.input;
    if (handler.input) {
      const parsed = parseInput(handler.input, job.input);
      if (!parsed.success) {
        return {
          ok: false,
          final: true,
          error: { name: "InvalidInput", message: parsed.error.message },
        };
      }
      input = parsed.data;
    }
    // The handler's signal, made only if it reads `ctx.signal` (most never do; an AbortSignal
    // costs a few µs to make on Node 20).
    const abort = new LazyAbort();
    const timeoutMs = Math.max(
      1,
      Math.min(runnableTimeoutMs(job.timeoutMs), Math.floor(abortAt - performance.now())),
    );
    // The attempt ends with whichever comes first: the handler settles, its timeout fires, or a
    // cancel is seen. One promise, settled by each of them (the first call counts).
    let succeed!: (result: unknown) => void;
    let fail!: (error: unknown) => void;
    const ended = new Promise<unknown>((resolve, reject) => {
      succeed = resolve;
      fail = reject;
    });
    const due = performance.now() + timeoutMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let fired = false;
    const timeout = () => {
      if (fired) return;
      fired = true;
      clearTimeout(timer);
      const error = new TimeoutError(`handler timed out after ${timeoutMs} ms`);
      abort.abort(error);
      // Fired late: this process was frozen past the timeout (SIGSTOP, a VM or GC pause). The
      // freeze check (src/engine/timeout-watch.ts) fires it before a handler's own timers that
      // were due more than FREEZE_CHECK_MS after the freeze began; an earlier one may have run
      // first, so the handler may be completing its work right now (its signal was not aborted
      // when it last looked). Let it settle and keep what it did.
      if (performance.now() - due > LATE_TIMEOUT_MS) {
        timer = setTimeout(() => fail(error), LATE_SETTLE_MS);
      } else fail(error);
    };
    timer = setTimeout(timeout, timeoutMs);
    const unwatch = watchTimeout(due, timeout);
    const controls = attemptControls(
      this.deps.store,
      job.id,
      attempt,
      (error) => {
        abort.abort(error);
        fail(error);
      },
      logger,
      this.deps.options.cancelCheckMs,
    );
    // `signal` and `jobs` are made when first read (src/engine/attempt-context.ts). Reading
    // `signal` past `due` fires the timeout first: after a freeze, a handler timer that ran before
    // the freeze check does not find the signal still live.
    const ctx = new AttemptContext(job, attempt, logger, controls, abort, broker, due, timeout);
    try {
      Promise.resolve()
        .then(() => handler.run(input, ctx))
        .then(succeed, fail);
      const result = await ended;
      return writtenResult(result);
    } catch (error) {
      const err = toJobError(error);
      if (isNonRetryableError(error) || isCancelledError(error)) {
        return { ok: false, final: true, error: err };
      }
      if (isRetryAfterError(error)) {
        // A wait that is no number of milliseconds (NaN, negative) is none: the queue's backoff.
        // One past the longest delay (Infinity) is that delay: the job's watch, written at
        // reapAfterMs + retryAfterMs, must stay a time the reaper reaches.
        const ms = error.retryAfterMs;
        if (!(typeof ms === "number" && ms >= 0))
          return { ok: false, final: exhausted, error: err };
        return {
          ok: false,
          final: exhausted,
          error: err,
          retryAfterMs: Math.min(ms, MAX_DELAY_MS),
        };
      }
      return { ok: false, final: exhausted, error: err };
    } finally {
      // Ended: a late read of `ctx.signal` fires nothing.
      fired = true;
      clearTimeout(timer);
      unwatch();
      controls.stop();
    }
  }
}

/**
 * Longest wait for a delivery that came before its job's `runAt`: a queue with whole-second
 * not-before times (QStash, rounded down) is up to a second early; the rest is clock skew between
 * Redis and this process. Anything earlier runs at once, as it always did.
 */
const EARLY_WAIT_MS = 1_100;

/** A timeout timer this late means the process was frozen meanwhile (see `execute`). */
const LATE_TIMEOUT_MS = 1_000;
/** How long a handler may then take to settle before its timeout is recorded. */
const LATE_SETTLE_MS = 1_000;

/** Longest timer Node (and browsers) can set: a longer delay fires after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The timeout a job runs with. Requests only store 1 s – 15 min, but a job stored before that
 * bound may hold anything: zero, a negative or non-finite one runs with 1 s; one beyond Node's
 * timer limit (2^31−1 ms, about 24.8 days — `setTimeout` would fire at once) with that limit.
 * Used for the handler's timer and for the run lease alike.
 *
 * @example
 * runnableTimeoutMs(0);    // 1000
 * runnableTimeoutMs(1e300); // 2147483647
 */
export function runnableTimeoutMs(stored: number): number {
  if (!(stored > 0)) return MIN_TIMEOUT_MS;
  return Math.min(Math.ceil(stored), MAX_TIMER_MS);
}

function parseSpec(body: string): JobSpec | null {
  const data = readSpec(safeJson(body));
  if (data === undefined) return null;
  const { scheduleId, fireAt, overlap, idempotencyKey, timeoutMs, placement, trace, ...rest } =
    data;
  const carried = trace === undefined ? undefined : traceOfUnknown(trace);
  // Assigned in this order, not as `{ ...rest, more }`: once per delivery, and a literal that
  // starts with a spread is slow to extend on Node 20 (docs/adr/0027-objects-on-hot-paths.md).
  const spec = Object.assign({}, rest) as JobSpec;
  if (carried !== undefined) spec.trace = carried;
  if (placement !== undefined) spec.placement = placement as Placement;
  spec.timeoutMs = runnableTimeoutMs(timeoutMs);
  if (scheduleId !== undefined) spec.scheduleId = scheduleId;
  if (fireAt !== undefined) spec.fireAt = fireAt;
  if (overlap !== undefined) spec.overlap = overlap;
  if (idempotencyKey !== undefined) spec.idempotencyKey = idempotencyKey;
  return spec;
}

/**
 * A handler's result as the job records it: its JSON (what every store keeps, and what a reader
 * gets), `null` for none. One JSON cannot write (a BigInt, a cycle, a `toJSON` that throws) is a
 * final failure: the handler ran, and running it again would do its work again for the same
 * result.
 */
function writtenResult(result: unknown): RunOutcome {
  if (result === undefined || result === null) return { ok: true, result: null };
  const type = typeof result;
  if (type === "string" || type === "boolean") return { ok: true, result };
  try {
    const json = JSON.stringify(result);
    return { ok: true, result: json === undefined ? null : JSON.parse(json) };
  } catch (error) {
    return {
      ok: false,
      final: true,
      error: {
        name: "InvalidResult",
        message: `the handler's result cannot be written as JSON: ${toJobError(error).message}`,
      },
    };
  }
}

/**
 * What a job records of a thrown value, whatever it is (its `message` may not even be text): its
 * name up to 200 characters, its message up to 2,000.
 */
function toJobError(error: unknown): JobError {
  try {
    if (error instanceof Error) {
      const name = typeof error.name === "string" ? error.name.slice(0, 200) : "Error";
      const message = typeof error.message === "string" ? error.message : String(error.message);
      return { name, message: message.slice(0, 2000) };
    }
    return { name: "Error", message: String(error).slice(0, 2000) };
  } catch {
    return { name: "Error", message: "(a thrown value that cannot be written as text)" };
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function decodeBase64(b64: string): string {
  try {
    const bin = atob(b64);
    return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
  } catch {
    return "";
  }
}

/** Ms left of a running job's run lease (`startedAt + timeoutMs + leaseGraceMs`), by this clock. */
function leaseLeftMs(job: JobRecord, leaseGraceMs: number): number {
  return (
    (job.startedAt ?? Date.now()) + runnableTimeoutMs(job.timeoutMs) + leaseGraceMs - Date.now()
  );
}

/** finishRun's options by outcome (built once: a finish is made per attempt). */
const RECORD_ONLY: readonly [FinishRunOptions, FinishRunOptions] = [{}, { recordOnly: true }];

/**
 * Record an attempt's outcome, retrying a store that fails (unreachable, reply lost) with backoff
 * while the run lease still holds: once the handler has run, failing to record it would make the
 * queue run it again. A retry whose first try did land answers `stale`, which is harmless. After
 * the lease, the last error propagates (the queue retries; another attempt may already run).
 */
async function finishWhileLeased(
  finish: () => Promise<FinishRunResult>,
  { until, logger }: { until: number; logger: Logger },
): Promise<FinishRunResult> {
  for (let delay = 50; ; delay = Math.min(delay * 2, 2_000)) {
    try {
      return await finish();
    } catch (error) {
      if (performance.now() + delay >= until) throw error;
      logger.warn("could not record the attempt's outcome; retrying", { error: String(error) });
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
