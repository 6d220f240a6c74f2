/**
 * @module
 * Rate limits for `beginRun` ({@link RateLimit}): at most `limit` runs of one key BEGIN in any
 * sliding window of `periodMs`, across every caller of the store
 * (docs/adr/0013-concurrency-limits.md, "Rate limits"). The runner derives the key from the
 * handler's `rateLimit` and the job's input (`src/engine/rate-limit.ts`), as it does for
 * concurrency.
 */

/**
 * A rate limit for `JobStore.beginRun` (`src/store/port/jobs.ts`): a run of `key` begins only
 * while fewer than `limit` runs of it began in the last `periodMs` (by the store's clock). The
 * store does not interpret `key`.
 */
export interface RateLimit {
  /** The window's name, e.g. `report.build` or `crm.sync=7:default:42` (bounded in length). */
  key: string;
  /** A whole number from 1 to {@link MAX_RATE_LIMIT}. */
  limit: number;
  /** The sliding window (ms): a whole number from 1 to {@link MAX_RATE_PERIOD_MS}. */
  periodMs: number;
}

/** Most runs of one {@link RateLimit} key that may begin in one window. */
export const MAX_RATE_LIMIT = 100_000;

/** Longest {@link RateLimit} window: 24 hours. (A handler's `rateLimit` needs at least 1 s.) */
export const MAX_RATE_PERIOD_MS = 86_400_000;

/**
 * Refuse a {@link RateLimit} a store cannot honour: a limit that is not a whole number from 1 to
 * {@link MAX_RATE_LIMIT}, a period that is not a whole number of ms from 1 to
 * {@link MAX_RATE_PERIOD_MS}, or an empty key. Both stores call it before they write anything.
 *
 * @throws RangeError naming the value.
 */
export function checkRateLimit(rate: RateLimit): void {
  if (!(Number.isInteger(rate.limit) && rate.limit >= 1 && rate.limit <= MAX_RATE_LIMIT)) {
    throw new RangeError(
      `a rate limit must be a whole number from 1 to ${MAX_RATE_LIMIT}, got ${rate.limit}`,
    );
  }
  if (
    !(Number.isInteger(rate.periodMs) && rate.periodMs >= 1 && rate.periodMs <= MAX_RATE_PERIOD_MS)
  ) {
    throw new RangeError(
      `a rate limit's period must be a whole number of ms from 1 to ${MAX_RATE_PERIOD_MS}, got ${rate.periodMs}`,
    );
  }
  if (typeof rate.key !== "string" || rate.key === "") {
    throw new RangeError("a rate limit needs a non-empty key");
  }
}
