/**
 * @module
 * Batch submit on the wire (`POST /v1/jobs/batch`, docs/api.md; docs/adr/0020-batch-submit.md):
 * the most jobs one batch may hold and the answer's shape, declared once for the server and the
 * client.
 */
import type { JobSummary, Problem } from "./wire.ts";

/** Most jobs one `POST /v1/jobs/batch` (and `broker.submitMany`) takes; more is a 413. */
export const MAX_BATCH_JOBS = 1_000;

/** One job's outcome in a batch answer, at the job's index. */
export type BatchItemResource =
  /** Stored: the job as `POST /v1/jobs` answers it (202 there). */
  | { outcome: "accepted"; status: 202; job: JobSummary }
  /** Its idempotency key was used before (or by an earlier job of the batch): the first job. */
  | { outcome: "replayed"; status: 200; job: JobSummary }
  /** Refused, nothing written for it: the problem `POST /v1/jobs` would have answered. */
  | { outcome: "failed"; status: number; problem: Problem };

/** The answer of `POST /v1/jobs/batch` (status 200): one outcome per job, in order, and counts. */
export interface BatchResource {
  items: BatchItemResource[];
  accepted: number;
  replayed: number;
  failed: number;
}
