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

/** Ten years in ms: the longest a retention may be (as the configuration file's schema says). */
export const MAX_RETENTION_MS = 10 * 365 * 24 * 60 * 60 * 1000;
/** The most finished jobs or runs a cap may name (`Infinity`, like `0`, is no cap). */
export const MAX_RETENTION_COUNT = 1_000_000_000;

/**
 * {@link DEFAULT_RETENTION} with `retention`'s defined values over it, each checked: `jobMs` and
 * `idempotencyMs` whole numbers of ms from 1 to ten years, `maxFinishedJobs` and
 * `maxRunsPerSchedule` whole numbers from 0 to 1e9, or `Infinity` (0 and Infinity: no cap).
 *
 * @throws RangeError naming the option, e.g. `retention.jobMs must be … got NaN`: on Redis such a
 * value failed every submit at run time, or silently meant 1 ms or no cap.
 */
export function resolveRetention(retention: Partial<StoreRetention> = {}): StoreRetention {
  const resolved: StoreRetention = { ...DEFAULT_RETENTION };
  for (const key of ["jobMs", "idempotencyMs"] as const) {
    const value = retention[key];
    if (value === undefined) continue;
    if (!(Number.isInteger(value) && value >= 1 && value <= MAX_RETENTION_MS)) {
      throw new RangeError(
        `retention.${key} must be a whole number of ms from 1 to ${MAX_RETENTION_MS} (ten years), got ${String(value)}`,
      );
    }
    resolved[key] = value;
  }
  for (const key of ["maxFinishedJobs", "maxRunsPerSchedule"] as const) {
    const value = retention[key];
    if (value === undefined) continue;
    const ok =
      value === Number.POSITIVE_INFINITY ||
      (Number.isInteger(value) && value >= 0 && value <= MAX_RETENTION_COUNT);
    if (!ok) {
      throw new RangeError(
        `retention.${key} must be a whole number from 0 to ${MAX_RETENTION_COUNT} (0 or Infinity: no cap), got ${String(value)}`,
      );
    }
    resolved[key] = value;
  }
  return resolved;
}
