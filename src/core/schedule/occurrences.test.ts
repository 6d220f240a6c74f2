import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { between, countBetween, firstRunAt, nextAfter, prevBefore } from "./occurrences.ts";
import { parseSchedule } from "./parse.ts";

const at = (iso: string): number => Date.parse(iso);
const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());
const YEAR_2024 = [at("2024-01-01T00:00:00Z"), at("2024-12-31T23:59:59Z")] as const;

/** The first `n` occurrences in 2024, as ISO strings. */
function first(spec: string, n: number, tz = "UTC"): string[] {
  return between(parseSchedule(spec, tz), YEAR_2024[0], YEAR_2024[1], n).map((t) => iso(t)!);
}

describe("intervals: a grid anchored at epoch 0 or at startAt, time zone ignored", () => {
  it("fires on the hour UTC and at UTC midnight, whatever the time zone", () => {
    const hourly = parseSchedule("1h", "Asia/Kolkata");
    expect(iso(nextAfter(hourly, at("2024-05-05T10:17:00Z")))).toBe("2024-05-05T11:00:00.000Z");
    const daily = parseSchedule("1d", "America/New_York");
    expect(iso(nextAfter(daily, at("2024-03-10T12:00:00Z")))).toBe("2024-03-11T00:00:00.000Z");
  });

  it("is strictly after / strictly before, and inclusive in between", () => {
    const p = parseSchedule("15m", "UTC");
    const t = at("2024-01-01T10:15:00Z");
    expect(nextAfter(p, t)).toBe(t + 900_000);
    expect(prevBefore(p, t)).toBe(t - 900_000);
    expect(between(p, t, t + 1_800_000, 10)).toEqual([t, t + 900_000, t + 1_800_000]);
    expect(between(p, t, t + 1_800_000, 2)).toEqual([t, t + 900_000]);
    expect(countBetween(p, t, t + 1_800_000)).toBe(3);
    expect(countBetween(p, t + 1, t + 899_999)).toBe(0);
  });

  it("anchors at startAt: a 5m schedule starting at :02 fires at :02, :07, …", () => {
    const startAt = at("2024-01-01T00:02:00Z");
    const p = parseSchedule("5m", "UTC", startAt);
    expect(firstRunAt(p, at("2023-12-01T00:00:00Z"), startAt)).toBe(startAt);
    expect(iso(firstRunAt(p, at("2024-01-01T01:00:00Z"), startAt))).toBe(
      "2024-01-01T01:02:00.000Z",
    );
    expect(iso(firstRunAt(p, at("2024-01-01T01:02:00Z"), startAt))).toBe(
      "2024-01-01T01:02:00.000Z",
    );
  });

  it("counts a 1s interval over a year by arithmetic", () => {
    const p = parseSchedule("1s", "UTC");
    expect(countBetween(p, at("2023-01-01T00:00:00Z"), at("2023-12-31T23:59:59.999Z"))).toBe(
      31_536_000,
    );
  });
});

describe("cron in UTC", () => {
  it("6 fields: a leading seconds field", () => {
    expect(first("*/20 * * * * *", 4)).toEqual([
      "2024-01-01T00:00:00.000Z",
      "2024-01-01T00:00:20.000Z",
      "2024-01-01T00:00:40.000Z",
      "2024-01-01T00:01:00.000Z",
    ]);
  });

  it.each([
    ["@yearly", ["2024-01-01T00:00:00.000Z", "2025-01-01T00:00:00.000Z"]],
    ["@annually", ["2024-01-01T00:00:00.000Z", "2025-01-01T00:00:00.000Z"]],
    ["@monthly", ["2024-01-01T00:00:00.000Z", "2024-02-01T00:00:00.000Z"]],
    ["@weekly", ["2024-01-07T00:00:00.000Z", "2024-01-14T00:00:00.000Z"]],
    ["@daily", ["2024-01-01T00:00:00.000Z", "2024-01-02T00:00:00.000Z"]],
    ["@midnight", ["2024-01-01T00:00:00.000Z", "2024-01-02T00:00:00.000Z"]],
    ["@hourly", ["2024-01-01T00:00:00.000Z", "2024-01-01T01:00:00.000Z"]],
  ])("%s", (spec, expected) => {
    const p = parseSchedule(spec, "UTC");
    expect(between(p, YEAR_2024[0], at("2025-12-31T00:00:00Z"), 2).map(iso)).toEqual(expected);
  });

  it("L: the last day of the month", () => {
    expect(first("0 0 L * *", 4)).toEqual([
      "2024-01-31T00:00:00.000Z",
      "2024-02-29T00:00:00.000Z",
      "2024-03-31T00:00:00.000Z",
      "2024-04-30T00:00:00.000Z",
    ]);
  });

  it("W: the weekday nearest the day, within its month; none when the day does not exist", () => {
    // 2024-06-15 is a Saturday, 2024-09-15 a Sunday.
    expect(first("0 0 15W 6,9 *", 2)).toEqual([
      "2024-06-14T00:00:00.000Z",
      "2024-09-16T00:00:00.000Z",
    ]);
    // 2024-06-01 is a Saturday: 1W does not go back into May but forward to Monday the 3rd.
    expect(first("0 0 1W 6 *", 1)).toEqual(["2024-06-03T00:00:00.000Z"]);
    // 2024-03-31 is a Sunday: 31W does not go forward into April; April has no 31st.
    expect(first("0 0 31W 3-5 *", 2)).toEqual([
      "2024-03-29T00:00:00.000Z",
      "2024-05-31T00:00:00.000Z",
    ]);
  });

  it("LW: the last weekday of the month", () => {
    // 2024-03-31 is a Sunday, 2024-08-31 a Saturday.
    expect(first("0 0 LW 3,8 *", 2)).toEqual([
      "2024-03-29T00:00:00.000Z",
      "2024-08-30T00:00:00.000Z",
    ]);
  });

  it("#: the n-th weekday of the month, and nL: the last one", () => {
    expect(first("0 0 * * 1#2", 2)).toEqual([
      "2024-01-08T00:00:00.000Z",
      "2024-02-12T00:00:00.000Z",
    ]);
    expect(first("0 0 * * 0#5", 2)).toEqual([
      "2024-03-31T00:00:00.000Z",
      "2024-06-30T00:00:00.000Z",
    ]);
    expect(first("0 0 * * 5L", 2)).toEqual([
      "2024-01-26T00:00:00.000Z",
      "2024-02-23T00:00:00.000Z",
    ]);
  });

  it("day-of-month and day-of-week both restricted: either matches (Vixie cron's OR)", () => {
    // November 2024: the 13th is a Wednesday; the Fridays are the 1st, 8th, 15th, 22nd and 29th.
    expect(first("0 0 13 11 5", 10).map((d) => d.slice(0, 10))).toEqual([
      "2024-11-01",
      "2024-11-08",
      "2024-11-13",
      "2024-11-15",
      "2024-11-22",
      "2024-11-29",
    ]);
  });

  it("a leap day comes every four years", () => {
    const p = parseSchedule("0 0 29 2 *", "UTC");
    expect(iso(nextAfter(p, at("2024-03-01T00:00:00Z")))).toBe("2028-02-29T00:00:00.000Z");
    expect(iso(prevBefore(p, at("2024-02-29T00:00:00Z")))).toBe("2020-02-29T00:00:00.000Z");
  });
});

describe("next, previous, between and count agree (any zone, any expression)", () => {
  const specs = [
    "*/7 * * * *",
    "30 2 * * *",
    "*/15 1-3 * * *",
    "0 * * * *",
    "0 0 15W * *",
    "0 30 1 * * 0",
    "*/20 */10 2 * * *",
  ];
  const zones = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Santiago",
  ];
  const instant = fc.integer({ min: at("2023-01-01T00:00:00Z"), max: at("2026-01-01T00:00:00Z") });

  it("prevBefore(nextAfter(t)) <= t < nextAfter(t), with nothing in between", () => {
    fc.assert(
      fc.property(fc.constantFrom(...specs), fc.constantFrom(...zones), instant, (spec, tz, t) => {
        const p = parseSchedule(spec, tz);
        const next = nextAfter(p, t)!;
        expect(next).toBeGreaterThan(t);
        expect(prevBefore(p, next)!).toBeLessThanOrEqual(t);
        const prev = prevBefore(p, t)!;
        expect(prev).toBeLessThan(t);
        expect(nextAfter(p, prev)!).toBeGreaterThanOrEqual(t);
      }),
      { numRuns: 300 },
    );
  });

  it("countBetween equals the length of between over a day, across DST days too", () => {
    const day = fc
      .integer({ min: 0, max: 3 * 365 })
      .map((d) => at("2023-01-01T00:00:00Z") + d * 86_400_000);
    fc.assert(
      fc.property(fc.constantFrom(...specs), fc.constantFrom(...zones), day, (spec, tz, from) => {
        const p = parseSchedule(spec, tz);
        const to = from + 2 * 86_400_000;
        expect(countBetween(p, from, to)).toBe(between(p, from, to, 1_000_000).length);
      }),
      { numRuns: 200 },
    );
  });
});
