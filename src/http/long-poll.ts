/**
 * @module
 * `GET /v1/jobs/:id?wait=`: hold the request until the job is final or the wait is over, polling
 * the store with backoff (25 ms growing ×1.5 to 1 s, so a 30 s wait costs about 37 reads).
 */
import { FINAL_JOB_STATUSES, type JobRecord } from "../core/model.ts";
import type { Store } from "../store/port.ts";

const FIRST_DELAY_MS = 25;
const GROWTH = 1.5;
const MAX_DELAY_MS = 1_000;

/**
 * The job once it is final (succeeded, dead, cancelled, skipped), or as it is when `waitMs` has
 * passed or `signal` aborts (the client went away); `null` when it does not exist (any more).
 *
 * @example
 * const job = await waitForFinal(store, id, 10_000, c.req.raw.signal);
 */
export async function waitForFinal(
  store: Pick<Store, "getJob">,
  id: string,
  waitMs: number,
  signal: AbortSignal,
): Promise<JobRecord | null> {
  const deadline = Date.now() + waitMs;
  let delay = FIRST_DELAY_MS;
  for (;;) {
    const job = await store.getJob(id);
    if (job === null || FINAL_JOB_STATUSES.includes(job.status)) return job;
    const left = deadline - Date.now();
    if (left <= 0 || signal.aborted) return job;
    await pause(Math.min(delay, left), signal);
    if (signal.aborted) return job;
    delay = Math.min(delay * GROWTH, MAX_DELAY_MS);
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
