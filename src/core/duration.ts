/**
 * @module
 * Durations as the API accepts them: milliseconds, or strings like `"500ms"`, `"30s"`, `"5m"`,
 * `"1h"`, `"1d"`.
 */

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

/**
 * The longest delay a timer holds (2^31 - 1 ms, about 24.8 days): Node, browsers and workerd run
 * a longer one (and a negative or NaN one) after about 1 ms.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** A duration: milliseconds or a string with a unit. */
export type Duration = number | string;

/**
 * Parse a duration to milliseconds; `undefined` when it is not one (or is too large for a finite
 * number).
 *
 * @example
 * parseDuration("5m"); // 300000
 * parseDuration(1500); // 1500
 */
export function parseDuration(value: Duration): number | undefined {
  if (typeof value === "number") {
    return Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined;
  }
  const match = DURATION.exec(value.trim());
  if (!match) return undefined;
  const unit = match[2] as keyof typeof UNIT_MS;
  const ms = Math.round(Number(match[1]) * UNIT_MS[unit]);
  // Digits too many for a double (or a product past one) are no duration, as such a number is.
  return Number.isFinite(ms) ? ms : undefined;
}
