/**
 * @module
 * The placement part of the Store port (docs/adr/0017-placement.md): a node that may not run a
 * job records why, so a job no node takes is visible as such rather than silently waiting.
 */
import type { JobSpec, JobStatus } from "../../core/model.ts";

/** A node's refusal of a delivery: which node, and why (e.g. `job needs capability gpu=nvidia`). */
export interface PlacementRefusal {
  /** The refusing node's id (1–200 characters). */
  node: string;
  /** Why, for people (at most 200 characters are kept). */
  reason: string;
}

/** Longest refusal reason a store keeps; a longer one is cut. */
export const MAX_REFUSAL_REASON = 200;

/** `text` cut to at most `max` UTF-16 units, never inside a surrogate pair. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/**
 * Placement records. Optional on a store (like the node registry): without it a refused delivery
 * is handed back just the same, only not recorded or counted.
 */
export interface PlacementLog {
  /**
   * A node refused to run the job of `spec`: the job is read, or created when it is a missing
   * occurrence (as its first `beginRun` would), so the refusal is visible on it. While it is
   * `queued` or `failed` (waiting for a run): record the refusal on it as `refused: { node, reason,
   * at }` (the last one wins), count `totals.unplaced` and, like a `limited` begin, move the job's
   * watch `reapAfterMs` ahead (it is alive, only waiting, so the reaper leaves it). An occurrence
   * that has not begun and whose schedule is paused or deleted ends `skipped` instead, exactly as
   * `beginRun` would end it (no node would run it, and a refusal would hand it back for as long as
   * no node matches). Anything else is left as it is. Not an attempt: nothing else about the job
   * changes.
   *
   * @returns the job's status, `null` when it is missing — so the runner can tell a finished
   * job (nothing left to run: acknowledge) from one still waiting for a matching node.
   */
  refusePlacement(
    spec: JobSpec,
    refusal: PlacementRefusal,
    reapAfterMs: number,
  ): Promise<JobStatus | null>;
}
