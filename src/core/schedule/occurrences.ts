/**
 * @module
 * Occurrence enumeration for any parsed schedule: the next, the previous, those in a range, how
 * many in a range. Instants are epoch ms; occurrences fall on whole seconds (cron) or on the
 * interval grid.
 */
import { cronCount, cronNextAfter, cronPrevBefore } from "./cron-occurrences.ts";
import { intervalCount, intervalNextAfter, intervalPrevBefore } from "./interval.ts";
import type { ParsedSchedule } from "./types.ts";

/**
 * First occurrence strictly after `t`, or `null` when there is none.
 *
 * @example
 * nextAfter(parseSchedule("0 9 * * 1-5", "Europe/Berlin"), Date.parse("2024-03-29T12:00:00Z"));
 * // Date.parse("2024-04-01T07:00:00Z"): Monday 09:00 CEST
 */
export function nextAfter(p: ParsedSchedule, t: number): number | null {
  return p.kind === "interval" ? intervalNextAfter(p, t) : cronNextAfter(p, t);
}

/**
 * Last occurrence strictly before `t`, or `null` when there is none.
 *
 * @example
 * prevBefore(parseSchedule("1h", "UTC"), Date.parse("2024-01-01T10:30:00Z"));
 * // Date.parse("2024-01-01T10:00:00Z")
 */
export function prevBefore(p: ParsedSchedule, t: number): number | null {
  return p.kind === "interval" ? intervalPrevBefore(p, t) : cronPrevBefore(p, t);
}

/**
 * Occurrences in `[fromInclusive, toInclusive]`, ascending, at most `limit` of them.
 *
 * @example
 * between(parseSchedule("*\/15 * * * *", "UTC"), 0, 3_600_000, 10);
 * // [0, 900000, 1800000, 2700000, 3600000]
 */
export function between(
  p: ParsedSchedule,
  fromInclusive: number,
  toInclusive: number,
  limit: number,
): number[] {
  const out: number[] = [];
  let t = fromInclusive - 1;
  while (out.length < limit) {
    const next = nextAfter(p, t);
    if (next === null || next > toInclusive) break;
    out.push(next);
    t = next;
  }
  return out;
}

/**
 * Number of occurrences in `[fromInclusive, toInclusive]`, computed without enumerating them (a
 * `"1s"` schedule over a year costs a few hundred steps, not 31 million).
 *
 * @example
 * countBetween(parseSchedule("1s", "UTC"), 0, 365 * 86_400_000 - 1); // 31536000
 */
export function countBetween(
  p: ParsedSchedule,
  fromInclusive: number,
  toInclusive: number,
): number {
  if (toInclusive < fromInclusive) return 0;
  return p.kind === "interval"
    ? intervalCount(p, fromInclusive, toInclusive)
    : cronCount(p, fromInclusive, toInclusive);
}

/**
 * The first run of a new (or resumed) schedule: its first occurrence at or after both `now` and
 * `startAt`, or `null` when there is none.
 *
 * @example
 * const startAt = Date.parse("2024-05-01T08:00:00Z");
 * firstRunAt(parseSchedule("1d", "UTC", startAt), Date.parse("2024-04-01T00:00:00Z"), startAt);
 * // startAt: the grid is anchored there
 */
export function firstRunAt(p: ParsedSchedule, now: number, startAt?: number): number | null {
  const from = startAt === undefined ? now : Math.max(now, startAt);
  return nextAfter(p, from - 1);
}
