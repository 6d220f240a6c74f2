/**
 * @module
 * The memory store's job table, as includes "job" and "spec" keep jobs on Redis: a job created
 * from a delivery's spec (occurrences are created by their first delivery), its place in its
 * schedule's runs, its run lease and the schedule's overlap lease, delivery tokens seen, and
 * forgetting a job with every index entry of it.
 */
import type { DeliveryToken, JobRecord, JobSpec } from "../../core/model.ts";
import { clone, live } from "./shared.ts";
import type { MemoryState, StoredJob } from "./state.ts";

/**
 * The stored job, or a new one from `spec` for an occurrence (created by its first delivery).
 * `undefined` for a missing job without `scheduleId`: it existed before it was published, so it
 * expired (cancelled or finished) and must not come back.
 */
export function jobOrCreate(s: MemoryState, spec: JobSpec, now: number): StoredJob | undefined {
  let stored = s.jobs.get(spec.id);
  if (!stored) {
    if (spec.scheduleId === undefined || live(s.gone, spec.id, now)) return undefined;
    stored = { record: { ...clone(spec), status: "queued", attempts: 0 } };
    s.jobs.set(spec.id, stored);
    indexRun(s, stored.record);
  }
  return stored;
}

/**
 * False when `token` was used before (a replay); else remembers it until it expires (plus a
 * minute for clock skew, as the Redis store does). No token: always a first use.
 */
export function firstUse(s: MemoryState, token: DeliveryToken | undefined, now: number): boolean {
  if (!token) return true;
  if (live(s.deliveries, token.id, now)) return false;
  rememberToken(s, token, now, "-");
  return true;
}

/** What an earlier use of `token` recorded (the attempt it began, or `-`); undefined if none. */
export function tokenUse(
  s: MemoryState,
  token: DeliveryToken | undefined,
  now: number,
): string | undefined {
  return token ? live(s.deliveries, token.id, now)?.value : undefined;
}

/** Records a use of `token` until it expires (plus a minute, as the Redis store does). */
export function rememberToken(
  s: MemoryState,
  token: DeliveryToken | undefined,
  now: number,
  value: string,
): void {
  if (!token) return;
  const expiresAt = now + Math.max(1_000, token.expiresAt - now + 60_000);
  s.deliveries.set(token.id, { value, expiresAt });
  s.expiresAt(expiresAt);
}

/** Lists an occurrence under its schedule's runs, while the schedule exists. */
export function indexRun(s: MemoryState, job: JobRecord): void {
  if (job.scheduleId === undefined || !s.schedules.has(job.scheduleId)) return;
  const runs = s.runs.get(job.scheduleId) ?? new Set<string>();
  s.runs.set(job.scheduleId, runs.add(job.id));
}

/** Forget a job and every index entry of it. */
export function drop(s: MemoryState, job: JobRecord): void {
  s.jobs.delete(job.id);
  s.dead.delete(job.id);
  if (job.scheduleId !== undefined) s.runs.get(job.scheduleId)?.delete(job.id);
}

/**
 * Drops the job's run lease, its concurrency slot and, if it holds it, its schedule's overlap
 * lease (handed on to another run still running when it was handed to this one).
 */
export function releaseRun(s: MemoryState, stored: StoredJob): void {
  delete stored.leaseUntil;
  releaseSlot(s, stored);
  const { scheduleId, id } = stored.record;
  const handed = stored.overlapHeld === true;
  delete stored.overlapHeld;
  if (scheduleId !== undefined && s.running.get(scheduleId)?.value === id) {
    // The clock as read, not `now()`: no sweep in the middle of the caller's step.
    if (handed) leaseToRunning(s, scheduleId, id, s.clock());
    else s.running.delete(scheduleId);
  }
}

/**
 * A `skip` schedule's overlap lease for a run begun under another policy (before a PATCH to
 * `skip`): the latest-fired of its 200 latest runs fired by now that still runs under an unexpired
 * run lease, other than `except`, takes it until that lease ends; its id. None: the lease goes.
 */
export function leaseToRunning(
  s: MemoryState,
  scheduleId: string,
  except: string | undefined,
  now: number,
): string | undefined {
  const runs: { stored: StoredJob; fireAt: number }[] = [];
  for (const runId of s.runs.get(scheduleId) ?? []) {
    const stored = s.jobs.get(runId);
    const fireAt = stored ? (stored.record.fireAt ?? stored.record.runAt) : Number.NaN;
    if (stored && fireAt <= now) runs.push({ stored, fireAt });
  }
  runs.sort((a, b) => b.fireAt - a.fireAt || (a.stored.record.id < b.stored.record.id ? 1 : -1));
  for (const { stored } of runs.slice(0, 200)) {
    const { leaseUntil } = stored;
    if (stored.record.id === except || stored.record.status !== "running") continue;
    if (leaseUntil === undefined || leaseUntil <= now) continue;
    s.running.set(scheduleId, { value: stored.record.id, expiresAt: leaseUntil });
    stored.overlapHeld = true;
    return stored.record.id;
  }
  s.running.delete(scheduleId);
  return undefined;
}

/** Leaves the concurrency limit's slots the job holds one of, if any. */
export function releaseSlot(s: MemoryState, stored: StoredJob): void {
  if (stored.slot === undefined) return;
  const slots = s.limits.get(stored.slot);
  slots?.delete(stored.record.id);
  if (slots?.size === 0) s.limits.delete(stored.slot);
  delete stored.slot;
}

/** The spec part of a job record. */
export function specOf(job: JobRecord): JobSpec {
  const {
    status,
    attempts,
    attemptBase,
    startedAt,
    finishedAt,
    result,
    error,
    progress,
    cancelRequested,
    node,
    refused,
    ...spec
  } = job;
  return spec;
}
