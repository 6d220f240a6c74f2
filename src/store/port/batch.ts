/**
 * @module
 * Batch submit's part of the Store port (docs/adr/0020-batch-submit.md): many jobs of one tenant
 * stored in one atomic step per chunk — one Redis round trip — each judged on its own exactly as
 * {@link JobStore.submitJob} judges a job. Optional on a store: without it the broker submits the
 * items one by one.
 */
import type { Admission } from "../../core/admission.ts";
import type { NewJob } from "../../core/model.ts";
import type { JobStore, SubmitDenied, SubmitResult } from "./jobs.ts";

/** Most items of one {@link BatchSubmit.submitJobs} call (a Redis script's ARGV stays bounded). */
export const MAX_SUBMIT_CHUNK = 200;

/**
 * Most bytes of job JSON (the spec without its stamps, as stored) in one
 * {@link BatchSubmit.submitJobs} call: a chunk of large inputs is cut before
 * {@link MAX_SUBMIT_CHUNK} items, so one request stays well inside a REST endpoint's request limit
 * (Upstash: 1 MB on its smallest plans). A single larger job still goes alone.
 */
export const MAX_SUBMIT_CHUNK_BYTES = 512 * 1024;

/** One job of a batch: the job as the broker built it and when it runs. */
export interface SubmitItem {
  job: NewJob;
  /** Absolute time to run (ms); else `now + delayMs`. */
  runAt?: number;
  delayMs: number;
}

/** One item's answer: as {@link JobStore.submitJob}'s, or the dependencies it names that do not exist. */
export type SubmitItemResult = SubmitResult | SubmitDenied | { unknown: string[] };

/** Many submits in one step. */
export interface BatchSubmit {
  /**
   * Submit `items` — at most {@link MAX_SUBMIT_CHUNK}, every job of the same tenant — in one
   * atomic step, answering one result per item, in order. Each item is what
   * {@link JobStore.submitJob} would do with `(item.job, { runAt, delayMs, recoverGraceMs },
   * admission)`, in order, so a later item sees what an earlier one wrote: a second item with
   * the same idempotency key is answered `replayed` with the first one's job. Where `submitJob`
   * throws `unknown_dependencies`, the item answers `{ unknown }` and nothing is written for it.
   * The quota is counted item by item: items are admitted up to its limit and the rest denied
   * (`{ denied: { kind: "quota" } }`). The degradation controller may be evaluated once for the
   * whole call. Counters and events are those of as many single submits.
   */
  submitJobs(
    items: SubmitItem[],
    timing: { recoverGraceMs: number },
    admission?: Admission,
  ): Promise<SubmitItemResult[]>;
}

/**
 * `items` cut into chunks for {@link BatchSubmit.submitJobs}: at most {@link MAX_SUBMIT_CHUNK}
 * items and, unless one item alone is larger, {@link MAX_SUBMIT_CHUNK_BYTES} of job JSON each
 * (`size`: the caller's measure, e.g. the JSON's length).
 */
export function submitChunks<T extends { size: number }>(items: readonly T[]): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    if (
      current.length > 0 &&
      (current.length >= MAX_SUBMIT_CHUNK || bytes + item.size > MAX_SUBMIT_CHUNK_BYTES)
    ) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += item.size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** Whether `store` stores batches itself ({@link BatchSubmit}). */
export function batchSubmitOf(store: Partial<BatchSubmit>): BatchSubmit | undefined {
  return typeof store.submitJobs === "function" ? (store as BatchSubmit) : undefined;
}
