/**
 * @module
 * Reading a worker's `Retry-After` answer, as QStash reads it: seconds, an HTTP date, or a duration
 * such as `6m5s`; a wait over one day is ignored and the backoff applies instead.
 */

const MAX_RETRY_AFTER_MS = 86_400_000;
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};
const DURATION = /^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$/;
const DURATION_PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;

/**
 * Milliseconds to wait before the next retry, or `undefined` to use the backoff (header absent,
 * unreadable, or more than one day).
 *
 * @example
 * retryAfterMs("10", Date.now()); // 10_000
 * retryAfterMs("1m30s", Date.now()); // 90_000
 */
export function retryAfterMs(value: string | null | undefined, now: number): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else if (DURATION.test(text)) {
    ms = 0;
    for (const [, amount, unit] of text.matchAll(DURATION_PART)) {
      ms += Number(amount) * UNIT_MS[unit!]!;
    }
  } else {
    // HTTP dates start with the weekday; Date.parse alone would also read "-5" as a year.
    const at = /^[A-Za-z]/.test(text) ? Date.parse(text) : Number.NaN;
    if (Number.isNaN(at)) return undefined;
    ms = Math.max(0, at - now);
  }
  return ms <= MAX_RETRY_AFTER_MS ? Math.ceil(ms) : undefined;
}
