/**
 * @module
 * Occurrences of a cron schedule as instants: wall-clock matches mapped through the zone's
 * constant-offset segments, with the DST rule of ADR-0002 at each transition.
 *
 * Within a segment an instant `t` reads `t + offset` on the wall, one to one. At a transition:
 * - gap (clock jumps forward): the skipped wall times have no instant. Fixed-time expressions run
 *   once at the transition instant (the first valid instant after the gap); cadence expressions
 *   skip them. Wall times on a calendar date the gap skips whole (Pacific/Apia's 2011-12-30) are
 *   not owed a run by either: that date never existed there.
 * - fold (clock jumps back): the repeated wall times have two instants. Fixed-time expressions run
 *   at the first only (the second segment ignores its first `fold` ms of wall time); cadence
 *   expressions run at both.
 */
import { SECONDS_PER_DAY } from "./calendar.ts";
import { DATE_LIMIT_MS, type ZoneSegment, zoneSegment } from "./time-zone.ts";
import type { ParsedCron } from "./types.ts";
import {
  countWallSeconds,
  GREGORIAN_CYCLE_DAYS,
  matchesWallSecond,
  nextWallSecond,
  prevWallSecond,
} from "./wall-clock.ts";

/** Searches give up (no occurrence) this far from where they start: one Gregorian cycle. */
const SEARCH_SPAN_MS = GREGORIAN_CYCLE_DAYS * 86_400_000;
/** A calendar day of wall-clock time, in ms. */
const DAY_MS = SECONDS_PER_DAY * 1000;

/** Smallest matching wall time (ms) in `[from, to]`, or `null`. */
function nextWall(c: ParsedCron, from: number, to: number): number | null {
  const s = nextWallSecond(c.fields, Math.ceil(from / 1000), Math.floor(to / 1000));
  return s === null ? null : s * 1000;
}

/** Largest matching wall time (ms) in `[from, to]`, or `null`. */
function prevWall(c: ParsedCron, from: number, to: number): number | null {
  const s = prevWallSecond(c.fields, Math.ceil(from / 1000), Math.floor(to / 1000));
  return s === null ? null : s * 1000;
}

/** Number of matching wall times (ms) in `[from, to)`. */
function countWall(c: ParsedCron, from: number, to: number): number {
  return countWallSeconds(c.fields, Math.ceil(from / 1000), Math.ceil(to / 1000));
}

/** First occurrence strictly after `t`, or `null` when there is none within 400 years. */
export function cronNextAfter(c: ParsedCron, t: number): number | null {
  let lo = t;
  // No occurrence past the end of JavaScript's dates.
  while (lo - t < SEARCH_SPAN_MS && lo < DATE_LIMIT_MS) {
    const seg = zoneSegment(c.tz, lo + 1);
    const o = seg.offset;
    // The gap's run is the earliest instant the segment has.
    if (lo + 1 === seg.from && gapRuns(c, seg)) return seg.from;
    const w = nextWall(c, Math.max(lo + 1 + o, firstWall(c, seg)), seg.to + o - 1);
    if (w !== null) return w - o;
    lo = seg.to - 1;
  }
  return null;
}

/** Last occurrence strictly before `t`, or `null` when there is none within 400 years. */
export function cronPrevBefore(c: ParsedCron, t: number): number | null {
  let hi = t;
  while (t - hi < SEARCH_SPAN_MS && hi > -DATE_LIMIT_MS) {
    const seg = zoneSegment(c.tz, hi - 1);
    const o = seg.offset;
    const w = prevWall(c, firstWall(c, seg), hi - 1 + o);
    if (w !== null) return w - o;
    // `hi - 1` is in the segment, so its first instant (the gap's run) is before `t`.
    if (gapRuns(c, seg)) return seg.from;
    hi = seg.from;
  }
  return null;
}

/** Number of occurrences in `[from, to]`, without enumerating them. */
export function cronCount(c: ParsedCron, from: number, until: number): number {
  let n = 0;
  let lo = Math.max(from, -DATE_LIMIT_MS);
  const to = Math.min(until, DATE_LIMIT_MS);
  while (lo <= to) {
    const seg = zoneSegment(c.tz, lo);
    const o = seg.offset;
    const wallFrom = Math.max(lo + o, firstWall(c, seg));
    n += countWall(c, wallFrom, Math.min(to + 1, seg.to) + o);
    // The gap's run lands on the segment's first instant, unless a wall time there runs anyway.
    if (lo === seg.from && gapRuns(c, seg) && !matchesWall(c, wallFrom)) n++;
    lo = seg.to;
  }
  return n;
}

/** First wall time the segment runs normally; for fixed times, past the wall times a fold repeats. */
function firstWall(c: ParsedCron, seg: ZoneSegment): number {
  return seg.from + seg.offset + (c.fixedTime ? seg.fold : 0);
}

/**
 * Whether a fixed-time expression owes a run for the gap just before the segment (ADR-0002): a
 * matching wall time skipped by the gap, on a calendar date that has instants of its own. That run
 * falls on the segment's first instant.
 *
 * A date the gap skips whole — Pacific/Apia went from 2011-12-29 23:59:59 (−10) to 2011-12-31
 * 00:00:00 (+14) — owes nothing, as 30 February owes nothing: its appointments are not moved onto
 * the next date, which has its own, so a daily job runs once on every date that exists and keeps
 * running every 24 real hours. Only the date a gap starts on and the date it ends on can owe a
 * run, each when part of it lies outside the gap.
 */
function gapRuns(c: ParsedCron, seg: ZoneSegment): boolean {
  if (!c.fixedTime || seg.gapBefore === 0) return false;
  const end = seg.from + seg.offset;
  const start = end - seg.gapBefore;
  // Midnights inside the gap: the dates between the first and the last are wholly skipped.
  const firstMidnight = Math.ceil(start / DAY_MS) * DAY_MS;
  const lastMidnight = Math.floor(end / DAY_MS) * DAY_MS;
  if (firstMidnight >= lastMidnight) return countWall(c, start, end) > 0;
  return countWall(c, start, firstMidnight) > 0 || countWall(c, lastMidnight, end) > 0;
}

function matchesWall(c: ParsedCron, wall: number): boolean {
  return wall % 1000 === 0 && matchesWallSecond(c.fields, wall / 1000);
}
