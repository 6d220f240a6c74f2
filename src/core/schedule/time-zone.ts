/**
 * @module
 * UTC offsets and DST transitions of IANA time zones, read from `Intl` (no tz database of our own,
 * so Workers, Node and browsers agree with their own ICU data).
 *
 * Transitions are found once per zone and UTC year, by sampling the offset weekly and bisecting
 * each change to the second, then memoised (about 100 `Intl` calls, ~1 ms, per zone and year). Two
 * transitions less than a week apart would be missed; no zone has had such a pair in decades (the
 * shortest DST interruptions, Morocco's for Ramadan, last about a month).
 */
import { ScheduleError } from "./errors.ts";

/** Offset sampling step when looking for transitions. */
const PROBE_STEP_MS = 7 * 86_400_000;
/**
 * JavaScript's dates end at ±8.64e15 ms (year 275760): `Intl` reads no offset past them, so the
 * offset there is taken to hold beyond, and no instant past them is an occurrence.
 */
export const DATE_LIMIT_MS = 8.64e15;

function clampToDates(t: number): number {
  return Math.min(Math.max(t, -DATE_LIMIT_MS), DATE_LIMIT_MS);
}

/** A change of a zone's UTC offset; offsets are ms to add to UTC to get the wall clock. */
export interface Transition {
  /** First instant (epoch ms) of the new offset. */
  at: number;
  before: number;
  after: number;
}

/**
 * The stretch of time around an instant during which a zone's offset does not change, with what
 * happened at its start: a wall clock moving back (a fold) makes `fold` ms of wall time repeat right
 * after `from`; moving forward (a gap) skips the `gapBefore` ms of wall time just before `from`.
 */
export interface ZoneSegment {
  /** First instant of the segment (a transition, or a year boundary when none is near). */
  from: number;
  /** First instant after the segment. */
  to: number;
  offset: number;
  fold: number;
  gapBefore: number;
}

interface YearZone {
  startOffset: number;
  /** Transitions with `at` in `(Jan 1 of the year, Jan 1 of the next]`, UTC, ascending. */
  transitions: Transition[];
}

/**
 * The caches are keyed by a zone's canonical name (`resolvedOptions().timeZone`), of which there
 * are a few hundred: `Intl` takes a name in any case and under its aliases (`europe/berlin`,
 * `EUROPE/Berlin`, …: 2^n spellings of an n-letter name), and a formatter and a zone's years kept
 * per spelling (tens of KB each, mostly ICU's) let requests naming new spellings grow the process
 * without bound. The spellings seen map to their canonical name in a bounded memo.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();
const years = new Map<string, Map<number, YearZone>>();
/**
 * The years kept per zone, the oldest probed dropped first: a write may name any year from 1970
 * to 9999 (a schedule's `startAt`), and kept for good, every new one grew the process (about 330
 * bytes each, 3.4 million zone-years in all). Probing a year again takes about a millisecond.
 */
const YEARS_PER_ZONE = 64;
const SPELLINGS_MEMO = 1_024;
const spellings = new Map<string, string>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  return new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric",
  });
}

/**
 * The canonical name of `tz`, its formatter made once per canonical name.
 *
 * @throws {ScheduleError} `invalid_timezone`.
 */
function zoneOf(tz: string): string {
  const known = spellings.get(tz);
  if (known !== undefined) return known;
  let made: Intl.DateTimeFormat;
  try {
    made = formatter(tz);
  } catch (error) {
    throw new ScheduleError(
      "invalid_timezone",
      `Unknown time zone "${tz}": use an IANA name such as "Europe/Berlin" or "UTC"`,
      { cause: error },
    );
  }
  const name = made.resolvedOptions().timeZone;
  if (!formatters.has(name)) formatters.set(name, name === tz ? made : formatter(name));
  if (spellings.size >= SPELLINGS_MEMO) spellings.delete(spellings.keys().next().value!);
  spellings.set(tz, name);
  return name;
}

/**
 * Check that `tz` is a time zone `Intl` knows (IANA names such as `"Europe/Berlin"`, and `"UTC"`).
 *
 * @throws {ScheduleError} `invalid_timezone`.
 */
export function assertTimeZone(tz: string): void {
  zoneOf(tz);
}

/** UTC offset of `tz` at instant `t`, in ms (wall clock = `t + offset`). */
export function offsetAt(tz: string, instant: number): number {
  const t = clampToDates(instant);
  const parts = formatters.get(zoneOf(tz))!.formatToParts(t);
  const get = (type: Intl.DateTimeFormatPartTypes) =>
    Number(parts.find((p) => p.type === type)?.value);
  const wall = Date.UTC(
    get("year"),
    get("month") - 1,
    get("day"),
    get("hour"),
    get("minute"),
    get("second"),
  );
  return wall - (t - (((t % 1000) + 1000) % 1000));
}

/** Jan 1 of `year`, UTC; just outside the dates for a year they do not reach. */
function yearStart(year: number): number {
  const t = Date.UTC(year, 0, 1);
  if (!Number.isNaN(t)) return t;
  return year > 0 ? DATE_LIMIT_MS + 1 : -DATE_LIMIT_MS - 1;
}

function yearZone(tz: string, year: number): YearZone {
  const name = zoneOf(tz);
  let zone = years.get(name);
  if (!zone) {
    zone = new Map();
    years.set(name, zone);
  }
  let found = zone.get(year);
  if (!found) {
    found = probeYear(tz, year);
    if (zone.size >= YEARS_PER_ZONE) zone.delete(zone.keys().next().value!);
    zone.set(year, found);
  }
  return found;
}

function probeYear(tz: string, year: number): YearZone {
  const start = yearStart(year);
  const end = yearStart(year + 1);
  const startOffset = offsetAt(tz, start);
  const transitions: Transition[] = [];
  let lo = start;
  let loOffset = startOffset;
  while (lo < end) {
    const hi = Math.min(lo + PROBE_STEP_MS, end);
    const hiOffset = offsetAt(tz, hi);
    if (hiOffset !== loOffset) {
      const at = bisect(tz, lo, hi, loOffset);
      transitions.push({ at, before: loOffset, after: offsetAt(tz, at) });
    }
    lo = hi;
    loOffset = hiOffset;
  }
  return { startOffset, transitions };
}

/** First whole second in `(lo, hi]` whose offset differs from `loOffset` (the one at `lo`). */
function bisect(tz: string, lo: number, hi: number, loOffset: number): number {
  let a = Math.floor(lo / 1000);
  let b = Math.ceil(hi / 1000);
  while (b - a > 1) {
    const mid = Math.floor((a + b) / 2);
    if (offsetAt(tz, mid * 1000) === loOffset) a = mid;
    else b = mid;
  }
  return b * 1000;
}

/** The constant-offset segment of `tz` that holds instant `t`. */
export function zoneSegment(tz: string, t: number): ZoneSegment {
  const year = new Date(clampToDates(t)).getUTCFullYear();
  const here = yearZone(tz, year);
  let start: Transition | undefined;
  let end: Transition | undefined;
  for (const tr of here.transitions) {
    if (tr.at <= t) start = tr;
    else {
      end = tr;
      break;
    }
  }
  start ??= yearZone(tz, year - 1).transitions.at(-1);
  end ??= yearZone(tz, year + 1).transitions[0];
  const offset = start ? start.after : here.startOffset;
  return {
    from: start ? start.at : yearStart(year),
    to: end ? end.at : yearStart(year + 2),
    offset,
    fold: start ? Math.max(0, start.before - start.after) : 0,
    gapBefore: start ? Math.max(0, start.after - start.before) : 0,
  };
}
