/**
 * @module
 * `parseSchedule`: validates a spec and its time zone, and returns immutable data.
 */
import { parseCron } from "./cron-parse.ts";
import { ScheduleError } from "./errors.ts";
import { looksLikeInterval, parseIntervalMs } from "./interval.ts";
import { assertTimeZone } from "./time-zone.ts";
import type { ParsedSchedule } from "./types.ts";

/**
 * Parse and validate a schedule spec in a time zone.
 *
 * - Cron: 5 fields (`minute hour day-of-month month day-of-week`) or 6 (a leading `second`);
 *   `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`; lists (whose
 *   items may overlap), ranges, steps, month and weekday names, `?`, `L`, `W`, `LW`, `#` (letters in
 *   either case). Read on the wall clock of `tz`, with the DST rule of ADR-0002.
 * - Interval: a whole number and a unit `s`, `m`, `h` or `d`, from `"1s"` to `"365d"`, on the grid
 *   `anchor + k × period` (ADR-0003). `tz` is validated but not used.
 *
 * @param spec - The schedule, e.g. `"*\/5 * * * *"`, `"0 30 9 * * 1-5"`, `"@daily"`, `"30s"`.
 * @param tz - IANA time zone for cron expressions, e.g. `"Europe/Berlin"`.
 * @param anchor - Epoch ms the interval grid is aligned to: pass the schedule's `startAt`.
 *   Ignored by cron. @default 0 (so `"1h"` fires on the hour UTC and `"1d"` at UTC midnight)
 * @throws {ScheduleError} with `code` `invalid_cron`, `never_fires`, `invalid_timezone`,
 *   `invalid_interval` or `interval_out_of_range`.
 *
 * @example
 * const daily = parseSchedule("30 2 * * *", "Europe/Berlin");
 * const every5m = parseSchedule("5m", "UTC", Date.parse("2024-01-01T00:02:00Z")); // :02, :07, …
 */
export function parseSchedule(spec: string, tz: string, anchor = 0): ParsedSchedule {
  // A cron result does not depend on the anchor: one entry serves every startAt.
  const cronKey = `${tz}\n${spec}`;
  const cron = crons.get(cronKey);
  if (cron) return cron;
  const key = `${tz}\n${anchor}\n${spec}`;
  const cached = intervals.get(key);
  if (cached) return cached;
  const parsed = parseUncached(spec, tz, anchor);
  if (parsed.kind === "cron") remember(crons, cronKey, parsed);
  else remember(intervals, key, parsed);
  return parsed;
}

/**
 * Parsing a cron costs ~0.1 ms (mostly cron-parser), and the tick re-parses every due schedule,
 * so results (immutable) are memoised; errors are not. Crons by time zone and spec (the anchor
 * plays no part: schedules with the same spec but their own `startAt` share one entry),
 * intervals by time zone, anchor and spec.
 */
const MEMO_SIZE = 1_024;
const crons = new Map<string, ParsedSchedule>();
const intervals = new Map<string, ParsedSchedule>();

function remember(memo: Map<string, ParsedSchedule>, key: string, parsed: ParsedSchedule): void {
  if (memo.size >= MEMO_SIZE) memo.delete(memo.keys().next().value!);
  memo.set(key, parsed);
}

function parseUncached(spec: string, tz: string, anchor: number): ParsedSchedule {
  const trimmed = spec.trim();
  if (trimmed === "") {
    throw new ScheduleError(
      "invalid_cron",
      'Schedule is empty: give a cron expression such as "*/5 * * * *" or an interval such as "5m"',
    );
  }
  if (looksLikeInterval(trimmed)) {
    const everyMs = parseIntervalMs(trimmed);
    assertTimeZone(tz);
    if (!Number.isFinite(anchor)) {
      throw new RangeError(`Interval anchor must be a finite epoch ms, got ${anchor}`);
    }
    return Object.freeze({ kind: "interval", spec: trimmed, tz, everyMs, anchor });
  }
  const { fields, fixedTime } = parseCron(trimmed);
  assertTimeZone(tz);
  return Object.freeze({
    kind: "cron",
    spec: trimmed,
    tz,
    fields: Object.freeze(fields),
    fixedTime,
  });
}
