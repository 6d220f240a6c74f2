/**
 * The JobSpec part of a job record: what a delivery carries, as a test builds it to call
 * `beginRun` for a stored job.
 */
import type { JobRecord, JobSpec } from "../../src/core/model.ts";

const SPEC_KEYS = (
  "id tenant handler input priority timeoutMs retries tags runAt createdAt scheduleId fireAt " +
  "overlap idempotencyKey"
).split(" ") as (keyof JobSpec)[];

/** The JobSpec part of a job record (what a delivery carries). */
export function specOf(job: JobRecord): JobSpec {
  const out: Record<string, unknown> = {};
  for (const key of SPEC_KEYS) if (job[key] !== undefined) out[key] = job[key];
  return out as unknown as JobSpec;
}
