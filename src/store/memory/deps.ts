/**
 * @module
 * The memory store's job dependencies (ADR 0014), as include "deps" keeps them on Redis: which
 * waiting jobs wait for a job, and what a dependency's final state does to them.
 */
import type { JobRecord, NewJob } from "../../core/model.ts";
import { unknownDependencies } from "../port/deps.ts";
import { jobFields } from "./events.ts";
import { specOf } from "./job-table.ts";
import { retain } from "./retention.ts";
import { clone } from "./shared.ts";
import type { MemoryState, StoredJob } from "./state.ts";

/** What a submit's `after` comes to. */
export interface DependencyCheck {
  /** Dependencies not final yet: the job waits for these. */
  unfinished: string[];
  /** A dependency already failed and `onFailure` is cancel: the job is stored cancelled. */
  failed: boolean;
}

/**
 * Checks `job.after`.
 *
 * @throws UnprocessableError (`unknown_dependencies`) naming ids that name no job of the tenant.
 */
export function checkDependencies(s: MemoryState, job: NewJob): DependencyCheck {
  const unfinished: string[] = [];
  const unknown: string[] = [];
  let failed = false;
  for (const id of new Set(job.after ?? [])) {
    const dep = s.jobs.get(id)?.record;
    if (!dep || dep.tenant !== job.tenant) unknown.push(id);
    else if (dep.status === "succeeded") continue;
    else if (isFinal(dep)) failed ||= job.onFailure !== "run";
    else unfinished.push(id);
  }
  if (unknown.length > 0) throw unknownDependencies(unknown);
  return { unfinished, failed };
}

/** A new job waits for `unfinished`: listed as a dependent of each. */
export function registerWaiting(s: MemoryState, stored: StoredJob, unfinished: string[]): void {
  stored.record.status = "waiting";
  stored.waits = unfinished.length;
  stored.held = true;
  for (const dep of unfinished) {
    const set = s.dependents.get(dep) ?? new Set<string>();
    s.dependents.set(dep, set.add(stored.record.id));
  }
  s.metrics.gauges.waiting += 1;
}

/**
 * Job `id` reached a final state (`ok`: it succeeded): release its waiting dependents (success,
 * or `onFailure: "run"` → one dependency fewer, and at none queued and dispatched; else
 * cancelled, cascading to their own dependents).
 */
export function releaseDependents(s: MemoryState, id: string, ok: boolean, now: number): void {
  const queue: [string, boolean][] = [[id, ok]];
  for (let next = queue.shift(); next; next = queue.shift()) {
    const [depId, depOk] = next;
    const waiting = s.dependents.get(depId);
    s.dependents.delete(depId);
    for (const w of waiting ?? []) {
      const stored = s.jobs.get(w);
      if (stored?.record.status !== "waiting") continue;
      if (depOk || stored.record.onFailure === "run") {
        stored.waits = (stored.waits ?? 1) - 1;
        if (stored.waits <= 0) dispatch(s, stored, now);
      } else {
        cancelWaiting(s, stored, now);
        queue.push([w, false]);
      }
    }
  }
}

/**
 * A waiting job cancelled (by `cancelJob` or a failed dependency); `counted: false` for a submit
 * cancelled at once (a dependency had failed already), which never counted as waiting.
 */
export function cancelWaiting(
  s: MemoryState,
  stored: StoredJob,
  now: number,
  counted = true,
): void {
  const job = stored.record;
  job.status = "cancelled";
  job.finishedAt = now;
  delete stored.waits;
  retain(s, stored, now);
  if (counted) s.metrics.gauges.waiting = Math.max(0, s.metrics.gauges.waiting - 1);
  s.metrics.totals.cancelled += 1;
  s.events.emit(now, { type: "job.cancelled", ...jobFields(job) });
}

function dispatch(s: MemoryState, stored: StoredJob, now: number): void {
  const job = stored.record;
  job.status = "queued";
  job.runAt = Math.max(job.runAt, now);
  delete stored.waits;
  // Due now: the next tick's recover step publishes it, as it would a submit's lost publish.
  s.outbox.set(job.id, {
    id: job.id,
    dedupId: job.id,
    job: clone(specOf(job)),
    notBefore: job.runAt,
    recoverAt: now,
  });
  s.metrics.gauges.waiting = Math.max(0, s.metrics.gauges.waiting - 1);
  s.metrics.enter(job.id, "queued", job.runAt);
}

function isFinal(job: JobRecord): boolean {
  return (
    job.status === "dead" ||
    job.status === "cancelled" ||
    job.status === "skipped" ||
    job.status === "succeeded"
  );
}
