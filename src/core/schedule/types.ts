/**
 * @module
 * What {@link parseSchedule} returns: plain, immutable data. Evaluation lives in other files.
 */

/**
 * The fields of a cron expression, expanded to sets. Days are matched like cron-parser does:
 * when both day fields are restricted a day matches either (Vixie cron's OR); when one is `*` (or
 * `?`) only the other counts.
 */
export interface CronFields {
  /** Allowed seconds 0–59, ascending (`[0]` for a 5-field expression). */
  readonly seconds: readonly number[];
  /** Allowed minutes 0–59, ascending. */
  readonly minutes: readonly number[];
  /** Allowed hours 0–23, ascending. */
  readonly hours: readonly number[];
  /** Bit `m` set for each allowed month 1–12. */
  readonly months: number;
  /** True when the day-of-month field is `*` or `?`. */
  readonly dayOfMonthAny: boolean;
  /** Bit `d` set for each listed day of the month 1–31. */
  readonly daysOfMonth: number;
  /** `L`: the last day of the month. */
  readonly lastDayOfMonth: boolean;
  /** `nW`: the weekday (Mon–Fri) nearest day `n`, within the month; none if day `n` does not exist. */
  readonly nearestWeekdays: readonly number[];
  /** `LW`: the last weekday (Mon–Fri) of the month. */
  readonly lastWeekdayOfMonth: boolean;
  /** True when the day-of-week field is `*` or `?`. */
  readonly dayOfWeekAny: boolean;
  /** Bit `w` set for each listed day of the week, 0 = Sunday … 6 = Saturday. */
  readonly daysOfWeek: number;
  /** Bit `w` set for each `wL` (the last such weekday of the month). */
  readonly lastDaysOfWeek: number;
  /** `w#n`: only the n-th such weekday of the month (1–5); 0 when not used. */
  readonly nthDayOfWeek: number;
}

/** A parsed cron schedule: wall-clock fields evaluated in an IANA time zone. */
export interface ParsedCron {
  readonly kind: "cron";
  /** The spec as given (trimmed). */
  readonly spec: string;
  /** IANA time zone the wall-clock fields are read in. */
  readonly tz: string;
  readonly fields: CronFields;
  /**
   * DST class (ADR-0002). `true` when the hour field names hours (`2`, `1-3`, `9,17`): each matching
   * wall time is an appointment that runs once — after a spring-forward gap at the first instant
   * after it (not at all when the gap skips its whole date), in a fall-back fold at its first
   * occurrence. `false` when the hour field is `*`, `?` or has a step (`0-23/3`, or `*` with a
   * step): the expression is a cadence; wall times in a gap are skipped and those in a fold run in
   * both passes.
   */
  readonly fixedTime: boolean;
}

/** A parsed interval schedule: a fixed period on a grid, independent of time zones. */
export interface ParsedInterval {
  readonly kind: "interval";
  /** The spec as given (trimmed). */
  readonly spec: string;
  /** Validated time zone (unused by intervals; kept so every schedule carries one). */
  readonly tz: string;
  /** The period, 1 s … 365 d. */
  readonly everyMs: number;
  /**
   * Epoch ms the grid is aligned to: occurrences are `anchor + k × everyMs` for integer `k`
   * (ADR-0003). The schedule's `startAt` when it has one, else 0, so `"1h"` fires on the hour UTC.
   */
  readonly anchor: number;
}

/** A schedule spec, parsed and validated: cron or interval. */
export type ParsedSchedule = ParsedCron | ParsedInterval;
