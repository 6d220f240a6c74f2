/**
 * @module
 * Cron matching on the wall clock: time as the clock on the wall reads it, counted in seconds since
 * 1970-01-01T00:00:00 as if it were UTC ("wall seconds"). A wall clock has no DST, so this layer is
 * plain calendar maths; `cron-occurrences.ts` maps wall times to instants in a time zone.
 *
 * Every search is bounded by a caller's limit and by 400 years (the Gregorian cycle: a date pattern
 * that matches nothing in 400 years matches nothing ever).
 */
import {
  civilFromDays,
  daysFromCivil,
  daysInMonth,
  SECONDS_PER_DAY,
  weekdayOfDays,
} from "./calendar.ts";
import type { CronFields } from "./types.ts";

/** Days in the 400-year Gregorian cycle. */
export const GREGORIAN_CYCLE_DAYS = 146_097;

/** Lookup tables for one field: nearest allowed value at or after / at or before, and counts. */
interface FieldTable {
  /** `next[v]`: smallest allowed value ≥ v, or -1 (index `size` is a -1 sentinel). */
  next: Int8Array;
  /** `prev[v]`: largest allowed value ≤ v, or -1. */
  prev: Int8Array;
  /** `countFrom[v]`: number of allowed values ≥ v (index `size` is 0). */
  countFrom: Int16Array;
  first: number;
  last: number;
  size: number;
}

interface Tables {
  s: FieldTable;
  m: FieldTable;
  h: FieldTable;
}

const tablesCache = new WeakMap<CronFields, Tables>();

function fieldTable(values: readonly number[], size: number): FieldTable {
  const allowed = new Uint8Array(size);
  for (const v of values) allowed[v] = 1;
  const next = new Int8Array(size + 1).fill(-1);
  const prev = new Int8Array(size).fill(-1);
  const countFrom = new Int16Array(size + 1);
  for (let v = size - 1; v >= 0; v--) {
    next[v] = allowed[v] ? v : next[v + 1]!;
    countFrom[v] = countFrom[v + 1]! + allowed[v]!;
  }
  for (let v = 0; v < size; v++) prev[v] = allowed[v] ? v : v > 0 ? prev[v - 1]! : -1;
  return { next, prev, countFrom, first: values[0]!, last: values.at(-1)!, size: values.length };
}

function tablesOf(f: CronFields): Tables {
  let t = tablesCache.get(f);
  if (!t) {
    t = { s: fieldTable(f.seconds, 60), m: fieldTable(f.minutes, 60), h: fieldTable(f.hours, 24) };
    tablesCache.set(f, t);
  }
  return t;
}

/** Smallest matching second of the day ≥ `tod`, or -1. */
function nextTimeOfDay(t: Tables, tod: number): number {
  const h = Math.floor(tod / 3600);
  const m = Math.floor((tod % 3600) / 60);
  const s = tod % 60;
  let hour = t.h.next[h]!;
  if (hour === h) {
    let minute = t.m.next[m]!;
    if (minute === m) {
      const second = t.s.next[s]!;
      if (second >= 0) return h * 3600 + m * 60 + second;
      minute = t.m.next[m + 1]!;
    }
    if (minute >= 0) return h * 3600 + minute * 60 + t.s.first;
    hour = t.h.next[h + 1]!;
  }
  return hour < 0 ? -1 : hour * 3600 + t.m.first * 60 + t.s.first;
}

/** Largest matching second of the day ≤ `tod`, or -1. */
function prevTimeOfDay(t: Tables, tod: number): number {
  const h = Math.floor(tod / 3600);
  const m = Math.floor((tod % 3600) / 60);
  const s = tod % 60;
  let hour = t.h.prev[h]!;
  if (hour === h) {
    let minute = t.m.prev[m]!;
    if (minute === m) {
      const second = t.s.prev[s]!;
      if (second >= 0) return h * 3600 + m * 60 + second;
      minute = m > 0 ? t.m.prev[m - 1]! : -1;
    }
    if (minute >= 0) return h * 3600 + minute * 60 + t.s.last;
    hour = h > 0 ? t.h.prev[h - 1]! : -1;
  }
  return hour < 0 ? -1 : hour * 3600 + t.m.last * 60 + t.s.last;
}

/** Number of matching seconds of the day ≥ `tod` (0 ≤ tod ≤ 86400). */
function countTimeOfDayFrom(t: Tables, tod: number): number {
  if (tod >= SECONDS_PER_DAY) return 0;
  const h = Math.floor(tod / 3600);
  const m = Math.floor((tod % 3600) / 60);
  const s = tod % 60;
  const perHour = t.m.size * t.s.size;
  let n = t.h.countFrom[h + 1]! * perHour;
  if (t.h.next[h] === h) {
    n += t.m.countFrom[m + 1]! * t.s.size;
    if (t.m.next[m] === m) n += t.s.countFrom[s]!;
  }
  return n;
}

function bit(mask: number, i: number): boolean {
  return ((mask >>> i) & 1) === 1;
}

/** The day `nW` names in a month, or -1 when day `n` does not exist in it. */
function nearestWeekday(n: number, day: number, weekday: number, length: number): number {
  if (n > length) return -1;
  const w = (((weekday + n - day) % 7) + 7) % 7;
  if (w === 6) return n === 1 ? 3 : n - 1;
  if (w === 0) return n === length ? n - 2 : n + 1;
  return n;
}

function lastWeekday(day: number, weekday: number, length: number): number {
  const w = (((weekday + length - day) % 7) + 7) % 7;
  return w === 6 ? length - 1 : w === 0 ? length - 2 : length;
}

function matchesDayOfMonth(f: CronFields, day: number, weekday: number, length: number): boolean {
  if (bit(f.daysOfMonth, day)) return true;
  if (f.lastDayOfMonth && day === length) return true;
  if (f.lastWeekdayOfMonth && lastWeekday(day, weekday, length) === day) return true;
  for (const n of f.nearestWeekdays)
    if (nearestWeekday(n, day, weekday, length) === day) return true;
  return false;
}

function matchesDayOfWeek(f: CronFields, day: number, weekday: number, length: number): boolean {
  if (bit(f.daysOfWeek, weekday)) {
    if (f.nthDayOfWeek === 0 || Math.ceil(day / 7) === f.nthDayOfWeek) return true;
  }
  return bit(f.lastDaysOfWeek, weekday) && day + 7 > length;
}

/** Whether the calendar day `days` (a day number) matches the month and day fields. */
function matchesDay(
  f: CronFields,
  days: number,
  year: number,
  month: number,
  day: number,
): boolean {
  if (!bit(f.months, month)) return false;
  if (f.dayOfMonthAny && f.dayOfWeekAny) return true;
  const length = daysInMonth(year, month);
  const weekday = weekdayOfDays(days);
  if (f.dayOfWeekAny) return matchesDayOfMonth(f, day, weekday, length);
  if (f.dayOfMonthAny) return matchesDayOfWeek(f, day, weekday, length);
  return matchesDayOfMonth(f, day, weekday, length) || matchesDayOfWeek(f, day, weekday, length);
}

/** Day number of the first day of the month after the one holding `days`. */
function firstOfNextMonth(year: number, month: number): number {
  return month === 12 ? daysFromCivil(year + 1, 1, 1) : daysFromCivil(year, month + 1, 1);
}

/** Smallest matching wall second in `[from, to]`, or `null`. */
export function nextWallSecond(f: CronFields, from: number, to: number): number | null {
  const t = tablesOf(f);
  const lastDay = Math.min(
    Math.floor(to / SECONDS_PER_DAY),
    Math.floor(from / SECONDS_PER_DAY) + GREGORIAN_CYCLE_DAYS,
  );
  let days = Math.floor(from / SECONDS_PER_DAY);
  let tod = from - days * SECONDS_PER_DAY;
  while (days <= lastDay) {
    const { year, month, day } = civilFromDays(days);
    if (!bit(f.months, month)) {
      days = firstOfNextMonth(year, month);
      tod = 0;
      continue;
    }
    if (matchesDay(f, days, year, month, day)) {
      const s = nextTimeOfDay(t, tod);
      if (s >= 0) {
        const found = days * SECONDS_PER_DAY + s;
        return found <= to ? found : null;
      }
    }
    days++;
    tod = 0;
  }
  return null;
}

/** Largest matching wall second in `[from, to]`, or `null`. */
export function prevWallSecond(f: CronFields, from: number, to: number): number | null {
  const t = tablesOf(f);
  const firstDay = Math.max(
    Math.floor(from / SECONDS_PER_DAY),
    Math.floor(to / SECONDS_PER_DAY) - GREGORIAN_CYCLE_DAYS,
  );
  let days = Math.floor(to / SECONDS_PER_DAY);
  let tod = to - days * SECONDS_PER_DAY;
  while (days >= firstDay) {
    const { year, month, day } = civilFromDays(days);
    if (!bit(f.months, month)) {
      days = daysFromCivil(year, month, 1) - 1;
      tod = SECONDS_PER_DAY - 1;
      continue;
    }
    if (matchesDay(f, days, year, month, day)) {
      const s = prevTimeOfDay(t, tod);
      if (s >= 0) {
        const found = days * SECONDS_PER_DAY + s;
        return found >= from ? found : null;
      }
    }
    days--;
    tod = SECONDS_PER_DAY - 1;
  }
  return null;
}

/** Number of matching wall seconds in `[from, to)`, counted a day at a time. */
export function countWallSeconds(f: CronFields, from: number, to: number): number {
  if (to <= from) return 0;
  const t = tablesOf(f);
  const firstDay = Math.floor(from / SECONDS_PER_DAY);
  const lastDay = Math.floor((to - 1) / SECONDS_PER_DAY);
  let n = 0;
  let days = firstDay;
  while (days <= lastDay) {
    const { year, month, day } = civilFromDays(days);
    if (!bit(f.months, month)) {
      days = firstOfNextMonth(year, month);
      continue;
    }
    if (matchesDay(f, days, year, month, day)) {
      const start = days * SECONDS_PER_DAY;
      const lo = days === firstDay ? from - start : 0;
      const hi = days === lastDay ? to - start : SECONDS_PER_DAY;
      n += countTimeOfDayFrom(t, lo) - countTimeOfDayFrom(t, hi);
    }
    days++;
  }
  return n;
}

/** Whether a wall second matches. */
export function matchesWallSecond(f: CronFields, second: number): boolean {
  const days = Math.floor(second / SECONDS_PER_DAY);
  const tod = second - days * SECONDS_PER_DAY;
  const { year, month, day } = civilFromDays(days);
  return matchesDay(f, days, year, month, day) && nextTimeOfDay(tablesOf(f), tod) === tod;
}
