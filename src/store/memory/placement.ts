/**
 * @module
 * The memory store's placement record (`PlacementLog`, docs/adr/0017-placement.md), with the
 * Redis script's semantics: recorded only while the job waits for a run.
 */
import type { JobSpec, JobStatus } from "../../core/model.ts";
import { cutText, MAX_REFUSAL_REASON, type PlacementRefusal } from "../port.ts";
import { jobOrCreate } from "./job-table.ts";
import { skipStopped } from "./runs.ts";
import type { MemoryState } from "./state.ts";

export function refusePlacement(
  s: MemoryState,
  spec: JobSpec,
  refusal: PlacementRefusal,
  reapAfterMs: number,
): JobStatus | null {
  const now = s.now();
  // A missing occurrence is created, as its first beginRun would, so the refusal shows on it.
  const stored = jobOrCreate(s, spec, now);
  if (!stored) return null;
  const job = stored.record;
  if (job.status !== "queued" && job.status !== "failed") return job.status;
  // Not begun, and its schedule stopped: skipped here, as its begin would (it would otherwise be
  // refused again for as long as no node matches).
  if (skipStopped(s, stored, now)) return job.status;
  job.refused = {
    node: cutText(refusal.node, 200),
    reason: cutText(refusal.reason, MAX_REFUSAL_REASON),
    at: now,
  };
  const watch = s.outbox.get(spec.id);
  if (watch) watch.recoverAt = now + reapAfterMs;
  s.metrics.totals.unplaced += 1;
  return job.status;
}
