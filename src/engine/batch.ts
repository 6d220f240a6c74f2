/**
 * @module
 * Batch submit (docs/adr/0020-batch-submit.md): up to {@link MAX_BATCH_JOBS} jobs in one call,
 * each checked on its own exactly as `JobsBroker.submit` checks a job (its body, the actor's
 * manifest, the handler and its input), then stored in chunks — one store operation, one Redis
 * round trip, per chunk of up to `MAX_SUBMIT_CHUNK` jobs (`BatchSubmit`, src/store/port/batch.ts)
 * — and published in the queue's batches. The answer is one outcome per job, in order.
 *
 * The quota counts every job, in order, inside the store's atomic step: a batch that would cross
 * it is admitted up to the limit and the rest answered 429, each. A store that fails half-way
 * keeps what it acknowledged (those jobs are answered accepted and published); the jobs of the
 * failed chunk and after it are answered with the failure (503 when the store is unreachable) —
 * submit those again with their idempotency keys: a chunk the store applied before the failure
 * reached the caller is then answered `replayed`.
 */
import type { Span } from "@opentelemetry/api";
import { MAX_BATCH_JOBS } from "../core/batch.ts";
import { InvalidRequestError, TickworkError } from "../core/errors.ts";
import type { JobRecord, OutboxMessage } from "../core/model.ts";
import type { TraceContext } from "../core/trace.ts";
import { unknownDependencies } from "../store/port/deps.ts";
import {
  type Admission,
  batchSubmitOf,
  type Store,
  type SubmitItem,
  type SubmitItemResult,
  type SubmitTiming,
  submitChunks,
} from "../store/port.ts";
import { type Actor, presentJob, tenantOf } from "./actor.ts";
import {
  checkJobSize,
  deniedError,
  JOB_TIMES_ALLOWANCE_BYTES,
  type QuotaReport,
  quotaReport,
  submitAdmission,
} from "./admission.ts";
import type { HandlerName, Handlers } from "./handlers.ts";
import type { BrokerDeps, JobRequest, JobsBroker, PreparedSubmit } from "./jobs.ts";
import {
  type IncomingTrace,
  incomingTrace,
  inSpan,
  spanFailed,
  startSubmitSpan,
  storedTrace,
} from "./tracing.ts";

/** A job of a batch: a {@link JobRequest} for any one handler of the map. */
export type BatchJobRequest<H extends Handlers = Handlers> = {
  [K in HandlerName<H>]: JobRequest<H, K>;
}[HandlerName<H>];

/** One job's outcome, at its index in the batch. */
export type BatchOutcome =
  /** Stored now. */
  | { outcome: "accepted"; job: JobRecord }
  /** Its idempotency key was used before (or by an earlier job of the batch): the first job. */
  | { outcome: "replayed"; job: JobRecord }
  /** Refused or not stored; nothing written for it. A `TickworkError` says why (its `status`). */
  | { outcome: "failed"; error: unknown };

/** What `Broker.submitMany` answers. */
export interface BatchSubmitted {
  /** One per job, in order. */
  items: BatchOutcome[];
  /** Where the tenant's submit quota stands after the batch (absent without a quota). */
  quota?: QuotaReport;
}

/** The 413 of a batch over {@link MAX_BATCH_JOBS}. */
export class BatchTooLargeError extends TickworkError {
  override name = "BatchTooLargeError";
  constructor(count: number) {
    super(413, "batch_too_large", `a batch holds at most ${MAX_BATCH_JOBS} jobs, got ${count}`);
  }
}

const utf8 = new TextEncoder();

/** A checked job waiting for its chunk, with its index in the batch. */
interface Pending {
  index: number;
  prepared: PreparedSubmit;
  /** Its JSON's size in UTF-8 bytes, for cutting chunks. */
  size: number;
}

/**
 * Submit many jobs (see the module): 400 when `bodies` is not a non-empty array, 413 over
 * {@link MAX_BATCH_JOBS} — nothing written either way; otherwise one outcome per job. One submit
 * span for the whole batch (src/engine/tracing.ts), whose context — else `trace`, the request's
 * W3C trace context, when valid — every job stores, as a single submit's job does.
 */
export async function submitMany(
  jobs: JobsBroker,
  deps: BrokerDeps,
  bodies: unknown,
  actor: Actor = {},
  trace?: IncomingTrace,
): Promise<BatchSubmitted> {
  if (!Array.isArray(bodies) || bodies.length === 0) {
    throw new InvalidRequestError("invalid batch", [
      { path: "jobs", message: "expected a non-empty array of jobs" },
    ]);
  }
  if (bodies.length > MAX_BATCH_JOBS) throw new BatchTooLargeError(bodies.length);
  const incoming = trace && incomingTrace(trace);
  const span = startSubmitSpan(incoming);
  try {
    const stored = storedTrace(span, incoming);
    const submitted = await inSpan(span, submitAll, undefined, jobs, deps, bodies, actor, stored);
    if (span.isRecording()) batchSpanDone(span, submitted.items, actor);
    return submitted;
  } catch (error) {
    spanFailed(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** {@link submitMany} once the batch is a sound request: each job checked, stored, published. */
async function submitAll(
  jobs: JobsBroker,
  deps: BrokerDeps,
  bodies: unknown[],
  actor: Actor,
  trace: TraceContext | undefined,
): Promise<BatchSubmitted> {
  const items: BatchOutcome[] = new Array(bodies.length);
  const pending: Pending[] = [];
  for (const [index, body] of bodies.entries()) {
    try {
      const checked = jobs.prepare(body, actor);
      const prepared =
        trace === undefined
          ? checked
          : Object.assign({}, checked, { job: Object.assign({}, checked.job, { trace }) });
      checkJobSize(prepared.job, "job", deps.options.maxJobBytes, JOB_TIMES_ALLOWANCE_BYTES);
      // UTF-8 bytes, as the store sends them (a UTF-16 length undercounts non-ASCII up to 3 ×).
      const size = utf8.encode(JSON.stringify(prepared.job)).byteLength;
      pending.push({ index, prepared, size });
    } catch (error) {
      items[index] = { outcome: "failed", error };
    }
  }

  // Every job of the batch has the actor's tenant and rules: one quota check for all of them.
  const quota = pending[0]?.prepared.quota;
  const { options, store } = deps;
  const timing = { recoverGraceMs: options.tick.recoverGraceMs };
  const batch = batchSubmitOf(store);
  const publishes: Promise<void>[] = [];
  let lastQuota: { quota?: QuotaReport } = {};
  let failure: { error: unknown } | undefined;
  const chunks = batch ? submitChunks(pending) : pending.map((p) => [p]);
  const replayedJobs = new Map<string, JobRecord>();
  for (const chunk of chunks) {
    if (failure) {
      for (const p of chunk) items[p.index] = { outcome: "failed", error: failure.error };
      continue;
    }
    const admission = submitAdmission(options, quota);
    const submits: SubmitItem[] = chunk.map(({ prepared }) => ({
      job: prepared.job,
      ...(prepared.runAt !== undefined ? { runAt: prepared.runAt } : {}),
      delayMs: prepared.delayMs,
    }));
    let results: (SubmitItemResult | { failed: unknown })[];
    try {
      results = batch
        ? await batch.submitJobs(submits, timing, admission)
        : [await submitOne(store, submits[0]!, timing, admission)];
    } catch (error) {
      failure = { error };
      for (const p of chunk) items[p.index] = { outcome: "failed", error };
      continue;
    }
    const messages: OutboxMessage[] = [];
    results.forEach((result, i) => {
      const { index } = chunk[i]!;
      if ("failed" in result) {
        items[index] = { outcome: "failed", error: result.failed };
      } else if ("unknown" in result) {
        items[index] = { outcome: "failed", error: unknownDependencies(result.unknown) };
      } else if ("denied" in result) {
        items[index] = { outcome: "failed", error: deniedError(result.denied, "submit", quota) };
      } else if (result.replayed) {
        // One record per replayed job, whichever chunks repeat its key: a batch of tiny items
        // naming large jobs holds each of them once.
        const seen = replayedJobs.get(result.job.id);
        const job = seen ?? presentJob(result.job);
        if (!seen) replayedJobs.set(job.id, job);
        items[index] = { outcome: "replayed", job };
      } else {
        items[index] = { outcome: "accepted", job: presentJob(result.job) };
        if (result.message) messages.push(result.message);
        if (result.quota) lastQuota = quotaReport(result.quota, quota);
      }
    });
    // Published while the next chunk is stored.
    publishes.push(jobs.publishMany(messages));
  }
  await Promise.all(publishes);
  return { items, ...lastQuota };
}

/**
 * Name and attributes of a batch's submit span: `submit <handler>` when every job that passed
 * its checks has the same handler; failed when a job failed for a reason other than its own
 * (the store: 5xx, or not a `TickworkError`).
 */
function batchSpanDone(span: Span, items: BatchOutcome[], actor: Actor): void {
  const handlers = new Set<string>();
  for (const item of items) if (item.outcome !== "failed") handlers.add(item.job.handler);
  const [handler] = handlers;
  if (handlers.size === 1 && handler !== undefined) {
    span.updateName(`submit ${handler}`);
    span.setAttribute("messaging.destination.name", handler);
  }
  span.setAttributes({
    "messaging.system": "tickwork",
    "messaging.operation.type": "create",
    "messaging.operation.name": "submit",
    "messaging.batch.message_count": items.length,
    "tickwork.tenant": tenantOf(actor),
  });
  const broken = items.find(
    (i) => i.outcome === "failed" && !(i.error instanceof TickworkError && i.error.status < 500),
  );
  if (broken?.outcome === "failed") spanFailed(span, broken.error);
}

/**
 * A store without `submitJobs`: one `submitJob` (chunks of one job, so a failure half-way loses
 * no job's answer); `unknown_dependencies` is that job's outcome.
 */
async function submitOne(
  store: Store,
  { job, runAt, delayMs }: SubmitItem,
  timing: { recoverGraceMs: number },
  admission: Admission | undefined,
): Promise<SubmitItemResult | { failed: unknown }> {
  const t: SubmitTiming =
    runAt !== undefined ? { runAt, delayMs, ...timing } : { delayMs, ...timing };
  try {
    return admission ? await store.submitJob(job, t, admission) : await store.submitJob(job, t);
  } catch (error) {
    if (error instanceof TickworkError && error.code === "unknown_dependencies") {
      return { failed: error };
    }
    throw error;
  }
}
