/**
 * @module
 * Reading a point in time a request gives as text: ISO-8601 only, and only dates that exist.
 * `Date.parse` is not used: it reads `"1"` as 2001-01-01, `"June 5"` as a date of 2001, rolls
 * `2026-02-31` over to March 3rd, and reads a date-time without an offset in the server's own
 * time zone — so the same request would mean different times on different servers.
 */

/** Earliest instant a request may name: the Unix epoch, 1970-01-01T00:00:00.000Z. */
export const MIN_INSTANT_MS = 0;
/**
 * Latest instant a request may name, or a schedule may fire at: 9999-12-31T23:59:59.999Z, the
 * last one a four-digit year writes (`new Date(ms).toISOString()` throws past ±8.64e15 ms; this
 * stays well inside it).
 */
export const MAX_INSTANT_MS = 253_402_300_799_999;

/**
 * ISO-8601's extended format: `YYYY-MM-DD` (midnight UTC), or a date-time with `T` (or a space),
 * minutes, optional seconds and fraction, and an offset (`Z`, `±hh:mm`, `±hhmm` or `±hh`). Years
 * may be extended (`+010000`). Not the basic format (`20261201T093000Z`), hour 24 or a leap
 * second (`:60`): JavaScript's dates have neither.
 */
const ISO =
  /^([+-]\d{6}|\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,30}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?))?$/;

/**
 * Epoch ms of an ISO-8601 date or date-time with an offset; `NaN` for any other text, for a
 * field out of its range (month 13, February 30th, hour 24, second 60, offset over 23:59), and
 * for a date-time without an offset; `±Infinity` for an existing date past the range of
 * JavaScript's dates (years ±275760), so that callers tell it out of range, not malformed. A
 * fraction finer than a millisecond is cut.
 *
 * @example
 * parseInstant("2026-12-01T09:30:00Z");      // 1796117400000
 * parseInstant("2026-12-01T10:30:00+01:00"); // the same
 * parseInstant("2026-12-01");                // midnight UTC
 * parseInstant("2026-02-31");                // NaN
 * parseInstant("2026-12-01T09:30:00");       // NaN (no offset)
 * parseInstant("1");                         // NaN
 */
export function parseInstant(text: string): number {
  const m = ISO.exec(text);
  if (!m) return Number.NaN;
  const [, y, mo, d, h, mi, s, frac, zulu, sign, oh, om] = m;
  if (y === "-000000") return Number.NaN; // ISO-8601 has no year minus zero
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hasTime = h !== undefined;
  if (hasTime && zulu === undefined && sign === undefined) return Number.NaN;
  const hour = hasTime ? Number(h) : 0;
  const minute = hasTime ? Number(mi) : 0;
  const second = s === undefined ? 0 : Number(s);
  const ms = frac === undefined ? 0 : Number(frac.slice(0, 3).padEnd(3, "0"));
  const offsetMin = sign === undefined ? 0 : Number(oh) * 60 + Number(om ?? 0);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) {
    return Number.NaN;
  }
  if (sign !== undefined && (Number(oh) > 23 || Number(om ?? 0) > 59)) return Number.NaN;
  if (day > daysInMonth(year, month)) return Number.NaN;
  // A date that exists, past the range of JavaScript's dates (±8.64e15 ms, years ±275760): a
  // time, only out of range, as the same instant in epoch ms is.
  const beyond = year > 0 ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0–99 as 1900–1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  if (Number.isNaN(date.getTime())) return beyond;
  date.setUTCHours(hour, minute, second, ms);
  const at = date.getTime() - (sign === "-" ? -offsetMin : offsetMin) * 60_000;
  // An offset may carry a time just past the range too.
  return Math.abs(at) <= 8.64e15 ? at : beyond;
}

/** Days in `month` (1–12) of proleptic Gregorian `year`. */
function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}
