/**
 * @module
 * Retention and expiry the stores apply inside their operations, and the reaper's delay.
 */

/**
 * How long a started job may go without a delivery before the tick re-dispatches it (its run lease
 * expired, or its attempt failed and the queue's retry never came): one hour, longer than
 * QStash's default retry backoff (12 s, 2.5 min, 30 min) and its 10-minute dedup window.
 */
export const DEFAULT_REAP_AFTER_MS = 3_600_000;

/**
 * Retention and expiry settings the store applies inside its operations. A job's retention starts
 * when it reaches a final status (`succeeded`, `dead`, `cancelled`, `skipped`); `queued`, `running`
 * and `failed` jobs do not expire. An expired dead job leaves the dead-letter list with it.
 */
export interface StoreRetention {
  /** How long a finished job record is kept. @default 7 days */
  jobMs: number;
  /** How long an idempotency key maps to its job. @default 24 h */
  idempotencyMs: number;
  /**
   * At most this many finished jobs are kept, deployment-wide: past it the oldest finished ones
   * are dropped early (BullMQ's `removeOnComplete` by count). `0` or `Infinity`: no cap. A dropped
   * job's idempotency key no longer replays it. @default 50_000 (≈ 75 MB of Redis at 1.5 KB each)
   */
  maxFinishedJobs: number;
  /**
   * At most this many finished runs are kept per schedule (its runs list and the job records):
   * a `"1s"` schedule would otherwise keep 86,400 a day. `0` or `Infinity`: no cap. @default 100
   */
  maxRunsPerSchedule: number;
}

/**
 * Retention both stores apply unless told otherwise: finished jobs 7 days but at most 50,000 of
 * them, and the last 100 runs of each schedule; idempotency keys 24 h. Sized for a small Redis
 * (a 256 MB Upstash database): finished jobs take at most about 75 MB whatever the daily volume.
 */
export const DEFAULT_RETENTION: StoreRetention = {
  jobMs: 7 * 24 * 60 * 60 * 1000,
  idempotencyMs: 24 * 60 * 60 * 1000,
  maxFinishedJobs: 50_000,
  maxRunsPerSchedule: 100,
};
