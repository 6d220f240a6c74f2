/**
 * @module
 * A schedule record's timing, pure: which fields decide when it fires, checking its spec, the
 * smallest gap between its occurrences, and recomputing its status and `nextRunAt` after a write.
 * The broker uses these for every schedule write (create, replace, patch, resume).
 */
import { UnprocessableError } from "../errors.ts";
import { MAX_INSTANT_MS } from "../instant.ts";
import type { ScheduleDef, ScheduleRecord } from "../model.ts";
import { ScheduleError } from "./errors.ts";
import { firstRunAt, nextAfter } from "./occurrences.ts";
import { parseSchedule } from "./parse.ts";
import type { ParsedSchedule } from "./types.ts";

/** Occurrences examined (at most) when looking for the smallest gap of a cron schedule. */
const GAP_SAMPLE = 1_000;
/** …over at most this long: a year and a bit, so every month and both DST changes are seen. */
const GAP_SPAN_MS = 400 * 24 * 60 * 60 * 1000;

/** The definition part of a schedule record (without its status, counters and times). */
export function defOf(s: ScheduleRecord): ScheduleDef {
  const {
    status: _s,
    nextRunAt: _n,
    lastRunAt: _l,
    runs: _r,
    rev: _v,
    createdAt: _c,
    updatedAt: _u,
    ...def
  } = s;
  return def;
}

/**
 * The fields that decide the times a schedule fires at (its expression or interval, zone and
 * start), as one comparable string: a change of them recomputes `nextRunAt` from now. `endAt` and
 * `maxRuns` only bound those times ({@link withTiming} applies them either way), so changing them
 * keeps an occurrence that is due and not yet dispatched.
 */
export function timingKey(d: ScheduleDef): string {
  return JSON.stringify([d.schedule, d.tz, d.startAt ?? null]);
}

/**
 * The definition's parsed spec.
 * @throws UnprocessableError (422) with the {@link ScheduleError}'s code for a spec, time zone or
 * start that cannot be used.
 */
export function validateTiming(def: ScheduleDef): ParsedSchedule {
  try {
    return parseSchedule(def.schedule, def.tz, def.startAt);
  } catch (error) {
    if (error instanceof ScheduleError)
      throw new UnprocessableError(error.code, error.message, { cause: error });
    throw error;
  }
}

/**
 * 422 `interval_too_short` when two occurrences of the schedule can be closer than `minMs`: an
 * interval's period, or the smallest gap between consecutive cron occurrences over the coming year
 * (and a bit).
 */
export function checkMinInterval(
  def: ScheduleDef,
  parsed: ParsedSchedule,
  minMs: number,
  now: number,
): void {
  let gap: number | undefined;
  if (parsed.kind === "interval") {
    gap = parsed.everyMs;
  } else {
    const from = Math.max(now, def.startAt ?? 0);
    let previous = nextAfter(parsed, from - 1);
    const end = previous === null ? 0 : previous + GAP_SPAN_MS;
    for (let i = 0; i < GAP_SAMPLE && previous !== null && previous <= end; i++) {
      const next = nextAfter(parsed, previous);
      if (next === null) break;
      const d = next - previous;
      if (gap === undefined || d < gap) gap = d;
      if (gap < minMs) break;
      previous = next;
    }
  }
  if (gap !== undefined && gap < minMs) {
    throw new UnprocessableError(
      "interval_too_short",
      `schedule "${def.schedule}" can run ${gap} ms apart; this tenant's minimum is ${minMs} ms`,
    );
  }
}

/**
 * Recompute status and `nextRunAt`: from `now` when the timing changed (or on resume), else keep
 * the pending `nextRunAt`. Completed when `maxRuns` is reached or nothing is left before `endAt`,
 * whether or not the timing changed; a paused schedule then stays paused (`nextRunAt` null) and
 * completes on resume.
 */
export function withTiming(
  record: ScheduleRecord,
  now: number,
  recompute: boolean,
): ScheduleRecord {
  const exhausted = record.maxRuns !== undefined && record.runs >= record.maxRuns;
  let next = exhausted ? null : record.nextRunAt;
  if (!exhausted && (recompute || next === null)) {
    // Never before the last dispatched occurrence: the tick may have dispatched up to
    // now + horizon already, and those must not be sent (and counted) twice.
    next = firstRunAt(
      parseSchedule(record.schedule, record.tz, record.startAt),
      Math.max(now, (record.lastRunAt ?? Number.NEGATIVE_INFINITY) + 1),
      record.startAt,
    );
  }
  // Nothing after `endAt`, nor past year 9999 (times are written with four-digit years).
  if (next !== null && next > Math.min(record.endAt ?? MAX_INSTANT_MS, MAX_INSTANT_MS)) next = null;
  // A paused schedule stays paused with nothing left to fire: what it dispatched before the
  // pause and has not begun is still skipped (beginRun skips an occurrence of a paused schedule,
  // not of a completed one); it completes when resumed.
  if (next === null) {
    return {
      ...record,
      nextRunAt: null,
      status: record.status === "paused" ? "paused" : "completed",
    };
  }
  return {
    ...record,
    nextRunAt: next,
    status: record.status === "completed" ? "active" : record.status,
  };
}
