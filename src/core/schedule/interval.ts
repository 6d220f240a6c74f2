/**
 * @module
 * Interval schedules (`"30s"`, `"5m"`, `"1h"`, `"1d"`): parsing, and occurrence arithmetic on the
 * grid `anchor + k × everyMs` (ADR-0003). No time zones: a day is 86,400,000 ms.
 */
import { ScheduleError } from "./errors.ts";
import type { ParsedInterval } from "./types.ts";

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Shortest interval accepted: 1 s. */
export const MIN_INTERVAL_MS = 1_000;
/** Longest interval accepted: 365 d. */
export const MAX_INTERVAL_MS = 365 * UNIT_MS.d;

const INTERVAL = /^(\d+)([smhd])$/;
/** A single token that starts with a number is meant as an interval, valid or not (`"1h30m"`). */
const INTERVAL_LIKE = /^[+-]?\d[\w.,]*$/;

/** True when `spec` should be read as an interval rather than a cron expression. */
export function looksLikeInterval(spec: string): boolean {
  return INTERVAL_LIKE.test(spec);
}

/**
 * Period in ms of an interval spec: a whole number followed by `s`, `m`, `h` or `d`.
 *
 * @throws {ScheduleError} `invalid_interval` or `interval_out_of_range`.
 */
export function parseIntervalMs(spec: string): number {
  const match = INTERVAL.exec(spec);
  if (!match) {
    throw new ScheduleError(
      "invalid_interval",
      `Invalid interval "${spec}": use a whole number followed by s, m, h or d, such as "30s", "5m", "1h" or "1d"`,
    );
  }
  const everyMs = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  if (!(everyMs >= MIN_INTERVAL_MS && everyMs <= MAX_INTERVAL_MS)) {
    throw new ScheduleError(
      "interval_out_of_range",
      `Interval "${spec}" is out of range: it must be at least 1s and at most 365d`,
    );
  }
  return everyMs;
}

/** First grid point strictly after `t`. */
export function intervalNextAfter(p: ParsedInterval, t: number): number {
  return p.anchor + (Math.floor((t - p.anchor) / p.everyMs) + 1) * p.everyMs;
}

/** Last grid point strictly before `t`. */
export function intervalPrevBefore(p: ParsedInterval, t: number): number {
  return p.anchor + (Math.ceil((t - p.anchor) / p.everyMs) - 1) * p.everyMs;
}

/** Number of grid points in `[from, to]`. */
export function intervalCount(p: ParsedInterval, from: number, to: number): number {
  if (to < from) return 0;
  const first = Math.ceil((from - p.anchor) / p.everyMs);
  const last = Math.floor((to - p.anchor) / p.everyMs);
  return Math.max(0, last - first + 1);
}
