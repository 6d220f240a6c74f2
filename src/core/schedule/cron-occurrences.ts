/**
 * @module
 * Occurrences of a cron schedule as instants: wall-clock matches mapped through the zone's
 * constant-offset segments, with the DST rule of ADR-0002 at each transition.
 *
 * Within a segment an instant `t` reads `t + offset` on the wall, one to one. At a transition:
 * - gap (clock jumps forward): the skipped wall times have no instant. Fixed-time expressions run
 *   once at the transition instant (the first valid instant after the gap); cadence expressions
 *   skip them.
 * - fold (clock jumps back): the repeated wall times have two instants. Fixed-time expressions run
 *   at the first only (the second segment ignores its first `fold` ms of wall time); cadence
 *   expressions run at both.
 */
import { type ZoneSegment, zoneSegment } from "./time-zone.ts";
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
  while (lo - t < SEARCH_SPAN_MS) {
    const seg = zoneSegment(c.tz, lo + 1);
    const o = seg.offset;
    const gapFrom = gapRunFrom(c, seg, lo + 1);
    const wallFrom = Math.max(lo + 1 + o, firstWall(c, seg)) - gapFrom;
    const w = nextWall(c, wallFrom, seg.to + o - 1);
    if (w !== null) return w < seg.from + o ? seg.from : w - o;
    lo = seg.to - 1;
  }
  return null;
}

/** Last occurrence strictly before `t`, or `null` when there is none within 400 years. */
export function cronPrevBefore(c: ParsedCron, t: number): number | null {
  let hi = t;
  while (t - hi < SEARCH_SPAN_MS) {
    const seg = zoneSegment(c.tz, hi - 1);
    const o = seg.offset;
    const wallFrom = firstWall(c, seg);
    const w = prevWall(c, wallFrom - gapRunFrom(c, seg, seg.from), hi - 1 + o);
    if (w !== null) return w < wallFrom ? seg.from : w - o;
    hi = seg.from;
  }
  return null;
}

/** Number of occurrences in `[from, to]`, without enumerating them. */
export function cronCount(c: ParsedCron, from: number, to: number): number {
  let n = 0;
  let lo = from;
  while (lo <= to) {
    const seg = zoneSegment(c.tz, lo);
    const o = seg.offset;
    const wallFrom = Math.max(lo + o, firstWall(c, seg));
    n += countWall(c, wallFrom, Math.min(to + 1, seg.to) + o);
    // The gap's run lands on the segment's first instant, unless a wall time there runs anyway.
    const gap = gapRunFrom(c, seg, lo);
    if (gap > 0 && !matchesWall(c, wallFrom) && countWall(c, wallFrom - gap, wallFrom) > 0) n++;
    lo = seg.to;
  }
  return n;
}

/** First wall time the segment runs normally; for fixed times, past the wall times a fold repeats. */
function firstWall(c: ParsedCron, seg: ZoneSegment): number {
  return seg.from + seg.offset + (c.fixedTime ? seg.fold : 0);
}

/**
 * Wall time (ms) skipped by a gap just before the segment whose run falls on the segment's first
 * instant — non-zero only for fixed-time expressions searched from exactly that instant.
 */
function gapRunFrom(c: ParsedCron, seg: ZoneSegment, from: number): number {
  return c.fixedTime && from === seg.from ? seg.gapBefore : 0;
}

function matchesWall(c: ParsedCron, wall: number): boolean {
  return wall % 1000 === 0 && matchesWallSecond(c.fields, wall / 1000);
}
