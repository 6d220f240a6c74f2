/**
 * @module
 * The memory store's attempt operations (`JobStore`): a delivery begins an attempt
 * (`beginRun`: run leases, overlap `skip`, concurrency and rate limits, the attempt's watch), the
 * attempt ends (`finishRun`), or the queue gives up on it (`markDead`). Each is one synchronous
 * step.
 */
import type { DeliveryToken, JobError, JobRecord, JobSpec } from "../../core/model.ts";
import { FINAL_JOB_STATUSES } from "../../core/model.ts";
import {
  type BeginRunResult,
  checkRateLimit,
  checkRunLimit,
  type FinishRunOptions,
  type FinishRunResult,
  type RateLimit,
  type RunLimit,
  type RunOutcome,
} from "../port.ts";
import { releaseDependents } from "./deps.ts";
import { errorOf, jobFields } from "./events.ts";
import {
  firstUse,
  jobOrCreate,
  leaseToRunning,
  releaseRun,
  rememberToken,
  specOf,
  tokenUse,
} from "./job-table.ts";
import { cancelNow } from "./jobs.ts";
import { limitedFor, takeSlot } from "./limits.ts";
import { movingAverage, observe } from "./metrics.ts";
import { countStart, rateLimitedFor } from "./rate.ts";
import { retain } from "./retention.ts";
import { clone, live } from "./shared.ts";
import type { MemoryState, StoredJob } from "./state.ts";

/** A delivery token's remembered value when its first answer told the queue to wait. */
const WAITED = "b";
/** A waited delivery sent again once the reason has gone: how long the queue waits (ms). */
const REPLAYED_WAIT_MS = 1_000;

export function beginRun(
  s: MemoryState,
  spec: JobSpec,
  leaseMs: number,
  reapAfterMs: number,
  token: DeliveryToken | undefined,
  limit?: RunLimit,
  rate?: RateLimit,
  node?: string,
): BeginRunResult {
  if (limit) checkRunLimit(limit);
  if (rate) checkRateLimit(rate);
  const now = s.now();
  const used = tokenUse(s, token, now);
  if (used !== undefined) {
    // This delivery again: never a second run. Busy while the attempt it began still runs under
    // its lease (its answer may have been lost; the queue will ask again); busy again when it was
    // first told to wait ("b": it has not run, and "done" would stop the queue asking); else done.
    const current = s.jobs.get(spec.id);
    if (
      current?.record.status === "running" &&
      (used === WAITED || String(current.record.attempts) === used) &&
      current.leaseUntil !== undefined &&
      current.leaseUntil > now
    ) {
      return { kind: "busy", retryAfterMs: current.leaseUntil - now };
    }
    if (used === WAITED) return { kind: "busy", retryAfterMs: REPLAYED_WAIT_MS };
    return { kind: "replayed" };
  }
  rememberToken(s, token, now, "-");
  /** An answer that tells the queue to ask again later: its token is remembered as such. */
  const wait = <T extends BeginRunResult>(answer: T): T => {
    rememberToken(s, token, now, WAITED);
    return answer;
  };
  const stored = jobOrCreate(s, spec, now);
  if (!stored) {
    s.outbox.delete(spec.id); // finished and expired: a leftover re-dispatch
    return { kind: "missing" };
  }
  const job = stored.record;
  if (FINAL_JOB_STATUSES.includes(job.status)) {
    s.outbox.delete(job.id);
    // A leftover entry: an occurrence committed again after it finished.
    s.metrics.leave(job.id, "queued");
    return { kind: "final", job: clone(job) };
  }
  if (job.status === "running" && stored.leaseUntil !== undefined && stored.leaseUntil > now) {
    return wait({ kind: "busy", retryAfterMs: stored.leaseUntil - now });
  }
  if (job.status === "running" && job.cancelRequested) {
    // Cancel asked for, and the attempt's lease ran out before it finished: it ends here.
    cancelNow(s, stored, now);
    return { kind: "final", job: clone(job) };
  }
  if (scheduleStopped(s, job)) return skip(s, stored, now);
  if (job.overlap === "skip" && job.scheduleId !== undefined) {
    let holder = live(s.running, job.scheduleId, now)?.value;
    // Held by a run that has ended without handing it on (see job-table's leaseToRunning):
    // handed on now, or free.
    if (
      holder !== undefined &&
      holder !== job.id &&
      s.jobs.get(holder)?.record.status !== "running"
    ) {
      holder = leaseToRunning(s, job.scheduleId, job.id, now);
    }
    const lease = s.running.get(job.scheduleId);
    if (holder !== undefined && holder !== job.id && lease) {
      // Only an occurrence that never started may be skipped; a retry of a started one waits.
      if (job.attempts > 0) return wait({ kind: "busy", retryAfterMs: lease.expiresAt - now });
      return skip(s, stored, now);
    }
  }
  // Both limits are judged before either takes anything: one refused by either takes neither.
  const slotWaitMs = limit ? limitedFor(s, limit, job.id, now) : undefined;
  const rateWaitMs = rate ? rateLimitedFor(s, rate, now) : undefined;
  if (slotWaitMs !== undefined || rateWaitMs !== undefined) {
    // Not an attempt: the job stays as it is; it is alive, only waiting, so the reaper waits too,
    // from when the queue is told to come back.
    const retryAfterMs = Math.max(slotWaitMs ?? 0, rateWaitMs ?? 0);
    const watch = s.outbox.get(job.id);
    if (watch) watch.recoverAt = now + retryAfterMs + reapAfterMs;
    if (job.attempts === 0) stored.limitedAt ??= now;
    s.metrics.totals.limited += 1;
    return wait({ kind: "limited", retryAfterMs });
  }
  if (job.overlap === "skip" && job.scheduleId !== undefined) {
    s.running.set(job.scheduleId, { value: job.id, expiresAt: now + leaseMs });
  }
  s.metrics.leave(job.id, job.status);
  job.status = "running";
  job.attempts += 1;
  job.startedAt = now;
  delete job.finishedAt;
  if (node !== undefined) job.node = node;
  else delete job.node;
  stored.leaseUntil = now + leaseMs;
  takeSlot(s, stored, limit, stored.leaseUntil);
  if (rate) countStart(s, rate, now);
  s.outbox.set(job.id, {
    id: job.id,
    dedupId: `${job.id}~a${job.attempts}`,
    job: clone(specOf(job)),
    notBefore: job.runAt,
    recoverAt: stored.leaseUntil + reapAfterMs,
    attempt: job.attempts,
  });
  s.metrics.enter(job.id, "running", now);
  s.metrics.totals.started += 1;
  if (job.attempts === 1) {
    // From when the job was both stored and due: a run time before its submit (or an
    // occurrence stored after its fire time) counts no time it was not queued.
    // Up to its first `limited` answer, if its handler's limit held it.
    const startedBy = Math.min(now, stored.limitedAt ?? now);
    const lag = Math.max(0, startedBy - Math.max(job.runAt, job.createdAt));
    observe(s.metrics.histograms.dispatchLagMs, lag);
    s.metrics.averages.lagMs = movingAverage(s.metrics.averages.lagMs, lag);
  }
  delete stored.limitedAt;
  s.events.emit(now, { type: "job.started", ...jobFields(job), attempt: job.attempts });
  rememberToken(s, token, now, String(job.attempts));
  return { kind: "run", attempt: job.attempts, job: clone(job) };
}

/**
 * `job` is an occurrence that has not begun and its schedule is paused or deleted: it is not to run
 * (one retried from the dead-letter list was asked for again, and runs).
 */
function scheduleStopped(s: MemoryState, job: JobRecord): boolean {
  if (job.scheduleId === undefined || job.attempts !== 0 || job.attemptBase !== undefined) {
    return false;
  }
  const schedule = s.schedules.get(job.scheduleId);
  return schedule === undefined || schedule.status === "paused";
}

/**
 * A waiting job a node refused for its placement: skipped (see {@link skip}) when its schedule
 * stopped before it began, as its begin would skip it; `false` otherwise.
 */
export function skipStopped(s: MemoryState, stored: StoredJob, now: number): boolean {
  if (!scheduleStopped(s, stored.record)) return false;
  skip(s, stored, now);
  return true;
}

/** Marks an occurrence that never started `skipped` (its schedule's overlap lease is held, or the
 * schedule was paused or deleted before it began). */
function skip(s: MemoryState, stored: StoredJob, now: number): BeginRunResult {
  const job = stored.record;
  s.outbox.delete(job.id);
  s.metrics.leave(job.id, job.status);
  job.status = "skipped";
  job.finishedAt = now;
  delete stored.leaseUntil;
  retain(s, stored, now);
  s.metrics.totals.skipped += 1;
  s.events.emit(now, { type: "job.skipped", ...jobFields(job) });
  // Jobs waiting for it are released as by a failure (as a submit after it would be).
  releaseDependents(s, job.id, false, now);
  return { kind: "skipped", job: clone(job) };
}

export function finishRun(
  s: MemoryState,
  id: string,
  attempt: number,
  outcome: RunOutcome,
  reapAfterMs: number,
  options?: FinishRunOptions,
): FinishRunResult {
  const now = s.now();
  const stored = s.jobs.get(id);
  if (!stored) return { kind: "stale", job: null };
  const job = stored.record;
  if (job.status !== "running" || job.attempts !== attempt) {
    return { kind: "stale", job: clone(job) };
  }
  // Copied before anything changes: a value that cannot be copied refuses the whole call (as
  // Redis refuses a result it cannot write), rather than leave the job half finished.
  const result = outcome.ok ? clone(outcome.result) : undefined;
  const error = outcome.ok ? undefined : clone(outcome.error);
  releaseRun(s, stored);
  s.metrics.leave(id, "running");
  job.finishedAt = now;
  const { histograms, averages, totals } = s.metrics;
  observe(histograms.handlerDurationMs, now - (job.startedAt ?? now));
  if (!outcome.ok && job.cancelRequested) {
    // Asked to stop: not a failure, never retried.
    job.status = "cancelled";
    job.error = error as JobError;
    retain(s, stored, now);
    s.outbox.delete(id);
    totals.cancelled += 1;
    s.events.emit(now, { type: "job.cancelled", ...jobFields(job) });
    releaseDependents(s, id, false, now);
    return { kind: "ok", job: clone(job) };
  }
  averages.failureRate = movingAverage(averages.failureRate, outcome.ok ? 0 : 1);
  if (outcome.ok) {
    job.status = "succeeded";
    job.result = result;
    delete job.error;
    retain(s, stored, now);
    s.outbox.delete(id);
    totals.succeeded += 1;
    s.events.emit(now, { type: "job.succeeded", ...jobFields(job) });
    releaseDependents(s, id, true, now);
    if (options?.recordOnly) return { kind: "recorded" };
  } else if (outcome.final) {
    totals.failed += 1;
    s.outbox.delete(id);
    kill(s, stored, outcome.error, now);
  } else {
    job.status = "failed";
    job.error = error as JobError;
    const watch = s.outbox.get(id);
    if (watch) watch.recoverAt = now + reapAfterMs;
    totals.failed += 1;
    s.metrics.enter(id, "failed", now);
    s.events.emit(now, {
      type: "job.failed",
      ...jobFields(job),
      attempt,
      error: errorOf(outcome.error),
    });
  }
  return { kind: "ok", job: clone(job) };
}

export function markDead(
  s: MemoryState,
  spec: JobSpec,
  error: JobError,
  expect: { attempts: number } | undefined,
  token: DeliveryToken | undefined,
): JobRecord | null {
  const now = s.now();
  if (!firstUse(s, token, now)) {
    const current = s.jobs.get(spec.id);
    return current ? clone(current.record) : null;
  }
  const stored = jobOrCreate(s, spec, now);
  if (!stored) {
    s.outbox.delete(spec.id); // finished and expired: a leftover watch
    return null;
  }
  const job = stored.record;
  // The reaper's watch was for another attempt: the job has moved on.
  if (expect !== undefined && job.attempts !== expect.attempts) return clone(job);
  if (job.status === "dead" || job.status === "succeeded" || job.status === "cancelled") {
    return clone(job);
  }
  // A skipped occurrence was deliberately not run: dead-lettering it would invite running it.
  if (job.status === "skipped") return clone(job);
  // A callback for an earlier dispatch (retryDead set a new runAt since) must not kill this one.
  if (spec.runAt !== job.runAt) return clone(job);
  // A live attempt may still succeed: the late callback must not kill it.
  if (job.status === "running" && stored.leaseUntil !== undefined && stored.leaseUntil > now) {
    return clone(job);
  }
  releaseRun(s, stored);
  s.outbox.delete(job.id);
  s.metrics.leave(job.id, job.status);
  job.finishedAt = now;
  kill(s, stored, clone(error), now);
  return clone(job);
}

/** → `dead` (the caller has left the previous status): dead-letter list, total and event. */
function kill(s: MemoryState, stored: StoredJob, error: JobError, now: number): void {
  stored.record.status = "dead";
  stored.record.error = clone(error);
  s.dead.set(stored.record.id, now);
  retain(s, stored, now);
  s.metrics.totals.dead += 1;
  s.events.emit(now, {
    type: "job.dead",
    ...jobFields(stored.record),
    attempt: stored.record.attempts,
    error: errorOf(error),
  });
  releaseDependents(s, stored.record.id, false, now);
}
