/**
 * @module
 * The memory store's placement record (`PlacementLog`, docs/adr/0017-placement.md), with the
 * Redis script's semantics: recorded only while the job waits for a run.
 */
import type { JobStatus } from "../../core/model.ts";
import { MAX_REFUSAL_REASON, type PlacementRefusal } from "../port.ts";
import type { MemoryState } from "./state.ts";

export function refusePlacement(
  s: MemoryState,
  id: string,
  refusal: PlacementRefusal,
  reapAfterMs: number,
): JobStatus | null {
  const job = s.jobs.get(id)?.record;
  if (!job) {
    s.metrics.totals.unplaced += 1;
    return null;
  }
  if (job.status !== "queued" && job.status !== "failed") return job.status;
  const now = s.now();
  job.refused = {
    node: refusal.node.slice(0, 200),
    reason: refusal.reason.slice(0, MAX_REFUSAL_REASON),
    at: now,
  };
  const watch = s.outbox.get(id);
  if (watch) watch.recoverAt = now + reapAfterMs;
  s.metrics.totals.unplaced += 1;
  return job.status;
}
