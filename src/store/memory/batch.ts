/**
 * @module
 * The memory store's batch submit (the port's `BatchSubmit`): the items one after the other in one
 * synchronous step, each exactly as `submitJob` (./jobs.ts) takes a job.
 */
import { UnprocessableError } from "../../core/errors.ts";
import { MAX_SUBMIT_CHUNK, type SubmitItem, type SubmitItemResult } from "../port/batch.ts";
import type { Admission } from "../port.ts";
import { submitJob } from "./jobs.ts";
import type { MemoryState } from "./state.ts";

export function submitJobs(
  s: MemoryState,
  items: SubmitItem[],
  timing: { recoverGraceMs: number },
  admission: Admission,
): SubmitItemResult[] {
  if (items.length > MAX_SUBMIT_CHUNK) {
    throw new RangeError(`submitJobs takes at most ${MAX_SUBMIT_CHUNK} items, got ${items.length}`);
  }
  const tenant = items[0]?.job.tenant;
  if (items.some((item) => item.job.tenant !== tenant)) {
    throw new RangeError("submitJobs takes the jobs of one tenant");
  }
  return items.map(({ job, runAt, delayMs }) => {
    try {
      return submitJob(
        s,
        job,
        { ...(runAt !== undefined ? { runAt } : {}), delayMs, ...timing },
        admission,
      );
    } catch (error) {
      // `unknown_dependencies` (checkDependencies): thrown before anything is written.
      if (error instanceof UnprocessableError && error.code === "unknown_dependencies") {
        const unknown = [...new Set(job.after ?? [])].filter(
          (id) => s.jobs.get(id)?.record.tenant !== job.tenant,
        );
        return { unknown };
      }
      throw error;
    }
  });
}
