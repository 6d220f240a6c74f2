/**
 * @module
 * Retention and expiry in the memory store (`StoreRetention`): a job that reaches a final
 * status starts its retention clock, and the caps (finished jobs deployment-wide, finished runs
 * per schedule) drop the oldest early, as include "job" does on Redis (`retainJob`); the sweep
 * drops whatever expired when the clock passes the earliest expiry.
 */
import { FINAL_JOB_STATUSES, type JobRecord } from "../../core/model.ts";
import { drop } from "./job-table.ts";
import { compareIds } from "./shared.ts";
import type { MemoryState, StoredJob } from "./state.ts";

/** Starts the retention clock of a job that reached a final state. */
export function retain(s: MemoryState, stored: StoredJob, now: number): void {
  stored.expiresAt = Math.max(now + s.retention.jobMs, stored.keepUntil ?? 0);
  s.expiresAt(stored.expiresAt);
  // The retention caps, as the Redis store applies them: at most two drops of each per call.
  const { maxFinishedJobs, maxRunsPerSchedule } = s.retention;
  const { id, scheduleId } = stored.record;
  if (maxRunsPerSchedule > 0 && scheduleId !== undefined) {
    const runs = [...(s.runs.get(scheduleId) ?? [])]
      .map((runId) => s.jobs.get(runId))
      .filter((run): run is StoredJob => run !== undefined);
    const over = runs.length - maxRunsPerSchedule;
    if (over > 0) {
      runs.sort(
        (a, b) => runScore(a.record) - runScore(b.record) || compareIds(a.record.id, b.record.id),
      );
      // Past unfinished oldest runs (a bounded 20), as the Redis store looks.
      let dropped = 0;
      for (const run of runs.slice(0, 20)) {
        if (dropped >= Math.min(over, 2)) break;
        if (run.record.id !== id && dropFinished(s, run, now)) dropped++;
      }
    }
  }
  if (maxFinishedJobs > 0) {
    const finished = [...s.jobs.values()].filter((job) => job.expiresAt !== undefined);
    const over = finished.length - maxFinishedJobs;
    if (over > 0) {
      finished.sort((a, b) => a.expiresAt! - b.expiresAt! || compareIds(a.record.id, b.record.id));
      // Past kept oldest jobs (a webhook's key still lives; a bounded 20), as the Redis store looks.
      let dropped = 0;
      for (const old of finished.slice(0, 20)) {
        if (dropped >= Math.min(over, 2)) break;
        if (old.record.id !== id && dropFinished(s, old, now)) dropped++;
      }
    }
  }
}

/**
 * A finished job dropped before its time by a retention cap; an occurrence leaves a tombstone
 * for at most an hour, so a late delivery of it does not bring it back to run again.
 */
function dropFinished(s: MemoryState, stored: StoredJob, now: number): boolean {
  if (!FINAL_JOB_STATUSES.includes(stored.record.status)) return false;
  // Its idempotency key still lives (a webhook job): dropping it would let a redelivery run twice.
  if ((stored.keepUntil ?? 0) > now) return false;
  drop(s, stored.record);
  if (stored.record.scheduleId !== undefined && stored.expiresAt !== undefined) {
    const expiresAt = now + Math.min(stored.expiresAt - now, 3_600_000);
    s.gone.set(stored.record.id, { value: true, expiresAt });
    s.expiresAt(expiresAt);
  }
  return true;
}

/**
 * Drops every job, idempotency key, delivery token, tombstone, quota counter and rate window
 * expired at `now`;
 * returns the earliest expiry left (when the next sweep is due).
 */
export function sweepExpired(s: MemoryState, now: number): number {
  let next = Number.POSITIVE_INFINITY;
  for (const stored of s.jobs.values()) {
    if (stored.expiresAt === undefined) continue;
    if (stored.expiresAt <= now) {
      drop(s, stored.record);
    } else next = Math.min(next, stored.expiresAt);
  }
  for (const map of [s.idempotency, s.deliveries, s.gone]) {
    for (const [key, entry] of map) {
      if (entry.expiresAt <= now) map.delete(key);
      else next = Math.min(next, entry.expiresAt);
    }
  }
  for (const [key, entry] of s.quotas) {
    if (entry.expiresAt <= now) s.quotas.delete(key);
    else next = Math.min(next, entry.expiresAt);
  }
  for (const [key, entry] of s.rates) {
    if (entry.expiresAt <= now) s.rates.delete(key);
    else next = Math.min(next, entry.expiresAt);
  }
  return next;
}

/** A run's place in its schedule's runs list: its fire time (else when it was due). */
function runScore(job: JobRecord): number {
  return job.fireAt ?? job.runAt;
}
