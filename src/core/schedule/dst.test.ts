/**
 * The DST rule of ADR-0002, with exact instants:
 * - a fixed-time expression (hour field names hours) runs a wall time skipped by a spring-forward
 *   gap once, at the first instant after the gap, and a wall time repeated by a fall-back fold once,
 *   at its first occurrence;
 * - a cadence expression (hour field `*` or a step) skips wall times in a gap and runs wall times in
 *   a fold in both passes, i.e. keeps running every real hour;
 * - a calendar date a gap skips whole (Pacific/Apia, 2011-12-30) owes no run: a daily job runs once
 *   on every date that exists, never twice on one.
 */
import { describe, expect, it } from "vitest";
import { between, countBetween, nextAfter, prevBefore } from "./occurrences.ts";
import { parseSchedule } from "./parse.ts";

const at = (iso: string): number => Date.parse(iso);

/** Occurrences in `[from, to]` as ISO instants (UTC). */
function runs(spec: string, tz: string, from: string, to: string): string[] {
  return between(parseSchedule(spec, tz), at(from), at(to), 1_000).map((t) =>
    new Date(t).toISOString(),
  );
}

const z = (hhmm: string, day: string): string => `${day}T${hhmm}:00.000Z`;

describe("Europe/Berlin, spring forward 2024-03-31 02:00 CET → 03:00 CEST (01:00Z)", () => {
  const tz = "Europe/Berlin";
  it("30 2 * * * runs once at 03:00 CEST on the gap day", () => {
    expect(runs("30 2 * * *", tz, "2024-03-30T00:00:00Z", "2024-04-01T23:59:00Z")).toEqual([
      z("01:30", "2024-03-30"), // 02:30 CET
      z("01:00", "2024-03-31"), // 03:00 CEST: the first instant after the gap
      z("00:30", "2024-04-01"), // 02:30 CEST
    ]);
  });

  it("several skipped wall times of a fixed-time expression run once, together", () => {
    expect(runs("*/15 2 * * *", tz, "2024-03-31T00:00:00Z", "2024-03-31T22:00:00Z")).toEqual([
      z("01:00", "2024-03-31"),
    ]);
    expect(runs("0 2,3 * * *", tz, "2024-03-31T00:00:00Z", "2024-03-31T22:00:00Z")).toEqual([
      z("01:00", "2024-03-31"),
    ]);
    expect(runs("30 30 2 * * *", tz, "2024-03-31T00:00:00Z", "2024-03-31T22:00:00Z")).toEqual([
      z("01:00", "2024-03-31"),
    ]);
  });

  it("a cadence (hour *) skips the gap: one real hour between 01:30 CET and 03:30 CEST", () => {
    expect(runs("30 * * * *", tz, "2024-03-30T23:00:00Z", "2024-03-31T03:00:00Z")).toEqual([
      z("23:30", "2024-03-30"),
      z("00:30", "2024-03-31"),
      z("01:30", "2024-03-31"),
      z("02:30", "2024-03-31"),
    ]);
    expect(runs("0 * * * *", tz, "2024-03-31T00:00:00Z", "2024-03-31T03:00:00Z")).toEqual([
      z("00:00", "2024-03-31"),
      z("01:00", "2024-03-31"),
      z("02:00", "2024-03-31"),
      z("03:00", "2024-03-31"),
    ]);
  });
});

describe("Europe/Berlin, fall back 2024-10-27 03:00 CEST → 02:00 CET (01:00Z)", () => {
  const tz = "Europe/Berlin";
  it("30 2 * * * runs once, at the first 02:30 (CEST)", () => {
    expect(runs("30 2 * * *", tz, "2024-10-26T12:00:00Z", "2024-10-27T12:00:00Z")).toEqual([
      z("00:30", "2024-10-27"),
    ]);
  });

  it("a fixed-time expression runs the repeated hour in its first pass only", () => {
    expect(runs("*/30 2 * * *", tz, "2024-10-27T00:00:00Z", "2024-10-27T02:00:00Z")).toEqual([
      z("00:00", "2024-10-27"),
      z("00:30", "2024-10-27"),
    ]);
    expect(runs("30 1-3 * * *", tz, "2024-10-26T23:00:00Z", "2024-10-27T03:00:00Z")).toEqual([
      z("23:30", "2024-10-26"), // 01:30 CEST
      z("00:30", "2024-10-27"), // 02:30 CEST
      z("02:30", "2024-10-27"), // 03:30 CET
    ]);
  });

  it("0 * * * * still runs every real hour, both 02:00s included", () => {
    expect(runs("0 * * * *", tz, "2024-10-26T23:00:00Z", "2024-10-27T03:00:00Z")).toEqual([
      z("23:00", "2024-10-26"), // 01:00 CEST
      z("00:00", "2024-10-27"), // 02:00 CEST
      z("01:00", "2024-10-27"), // 02:00 CET
      z("02:00", "2024-10-27"), // 03:00 CET
      z("03:00", "2024-10-27"),
    ]);
  });
});

describe("America/New_York, 2024-03-10 and 2024-11-03", () => {
  const tz = "America/New_York";
  it("30 2 * * * runs at 03:00 EDT on the gap day", () => {
    expect(runs("30 2 * * *", tz, "2024-03-09T00:00:00Z", "2024-03-11T23:00:00Z")).toEqual([
      z("07:30", "2024-03-09"), // 02:30 EST
      z("07:00", "2024-03-10"), // 03:00 EDT
      z("06:30", "2024-03-11"), // 02:30 EDT
    ]);
  });

  it("30 1 * * * runs once in the repeated 01:00 hour, at 01:30 EDT", () => {
    expect(runs("30 1 * * *", tz, "2024-11-03T00:00:00Z", "2024-11-03T12:00:00Z")).toEqual([
      z("05:30", "2024-11-03"),
    ]);
  });

  it("*/20 * * * * runs through both passes of the repeated hour", () => {
    expect(runs("*/20 * * * *", tz, "2024-11-03T05:00:00Z", "2024-11-03T07:00:00Z")).toEqual(
      ["05:00", "05:20", "05:40", "06:00", "06:20", "06:40", "07:00"].map((t) =>
        z(t, "2024-11-03"),
      ),
    );
  });
});

describe("Australia/Lord_Howe: a 30-minute shift", () => {
  const tz = "Australia/Lord_Howe";
  it("spring forward 2024-10-06 02:00 (+10:30) → 02:30 (+11): 15 2 * * * runs at 02:30", () => {
    expect(runs("15 2 * * *", tz, "2024-10-05T00:00:00Z", "2024-10-06T23:00:00Z")).toEqual([
      z("15:30", "2024-10-05"), // 02:30 +11, the transition instant
      z("15:15", "2024-10-06"), // 02:15 +11 on the next day
    ]);
  });

  it("a cadence skips the 30 skipped minutes", () => {
    expect(runs("*/15 * * * *", tz, "2024-10-05T14:50:00Z", "2024-10-05T15:50:00Z")).toEqual(
      // 01:30 01:45 | 02:30 02:45
      ["15:00", "15:15", "15:30", "15:45"].map((t) => z(t, "2024-10-05")),
    );
    expect(runs("0 * * * *", tz, "2024-10-05T14:00:00Z", "2024-10-05T16:30:00Z")).toEqual(
      ["14:30", "16:00"].map((t) => z(t, "2024-10-05")), // 01:00 +10:30, 03:00 +11
    );
  });

  it("fall back 2024-04-07 02:00 (+11) → 01:30 (+10:30): 01:30–02:00 repeats", () => {
    expect(runs("45 1 * * *", tz, "2024-04-06T00:00:00Z", "2024-04-06T23:00:00Z")).toEqual([
      z("14:45", "2024-04-06"),
    ]);
    expect(runs("*/15 1 * * *", tz, "2024-04-06T00:00:00Z", "2024-04-06T23:00:00Z")).toEqual(
      ["14:00", "14:15", "14:30", "14:45"].map((t) => z(t, "2024-04-06")),
    );
    expect(runs("*/15 * * * *", tz, "2024-04-06T14:20:00Z", "2024-04-06T15:40:00Z")).toEqual(
      // 01:30 01:45 (+11), 01:30 01:45 (+10:30), 02:00
      ["14:30", "14:45", "15:00", "15:15", "15:30"].map((t) => z(t, "2024-04-06")),
    );
  });
});

describe("America/Santiago: transitions at midnight", () => {
  const tz = "America/Santiago";
  it("0 0 * * * runs at 01:00 -03 when midnight is skipped (2024-09-08)", () => {
    expect(runs("0 0 * * *", tz, "2024-09-07T12:00:00Z", "2024-09-08T12:00:00Z")).toEqual([
      z("04:00", "2024-09-08"),
    ]);
  });

  it("the repeated 23:00 hour of 2024-04-06 runs once for 23:xx, twice for a cadence", () => {
    expect(runs("*/30 23 * * *", tz, "2024-04-07T01:00:00Z", "2024-04-07T05:00:00Z")).toEqual(
      ["02:00", "02:30"].map((t) => z(t, "2024-04-07")),
    );
    expect(runs("30 * * * *", tz, "2024-04-07T02:00:00Z", "2024-04-07T04:00:00Z")).toEqual(
      ["02:30", "03:30"].map((t) => z(t, "2024-04-07")),
    );
  });
});

describe("Pacific/Apia: 2011-12-29 23:59:59 −10 → 2011-12-31 00:00:00 +14 (10:00Z)", () => {
  const tz = "Pacific/Apia";
  const localDate = new Intl.DateTimeFormat("en-CA", {
    timeZone: tz,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
  });
  /** How many runs fall on each local date from 2011-12-27 to 2012-01-01. */
  function runsPerDate(spec: string): Record<string, number> {
    const perDate: Record<string, number> = {};
    for (const t of runs(spec, tz, "2011-12-27T10:00:00Z", "2012-01-01T09:59:59Z"))
      perDate[localDate.format(at(t))] = (perDate[localDate.format(at(t))] ?? 0) + 1;
    return perDate;
  }
  const existingDates = ["27", "28", "29", "31"].map((d) => `2011-12-${d}`).concat("2012-01-01");

  it("0 12 * * * runs once on each date that exists and not for the one that did not, 24 h apart", () => {
    expect(runs("0 12 * * *", tz, "2011-12-28T00:00:00Z", "2012-01-01T00:00:00Z")).toEqual([
      z("22:00", "2011-12-28"), // 28 Dec 12:00 −10
      z("22:00", "2011-12-29"), // 29 Dec 12:00 −10
      z("22:00", "2011-12-30"), // 31 Dec 12:00 +14
      z("22:00", "2011-12-31"), // 1 Jan 12:00 +14
    ]);
  });

  it("every daily wall time runs exactly once on each date that exists", () => {
    for (let hour = 0; hour < 24; hour++) {
      for (const minute of [0, 30, 59]) {
        const spec = `${minute} ${hour} * * *`;
        expect(runsPerDate(spec), spec).toEqual(
          Object.fromEntries(existingDates.map((date) => [date, 1])),
        );
      }
    }
    expect(runsPerDate("@daily")).toEqual(Object.fromEntries(existingDates.map((d) => [d, 1])));
  });

  it("an appointment only on the skipped date does not run that year; its weekday skips a week", () => {
    const yearly = parseSchedule("0 12 30 12 *", tz);
    expect(new Date(nextAfter(yearly, at("2011-12-01T00:00:00Z"))!).toISOString()).toBe(
      z("22:00", "2012-12-29"), // 30 Dec 2012 12:00 +14
    );
    // 2011-12-30 was a Friday.
    expect(runs("0 12 * * 5", tz, "2011-12-20T00:00:00Z", "2012-01-08T00:00:00Z")).toEqual([
      z("22:00", "2011-12-23"),
      z("22:00", "2012-01-05"),
    ]);
  });

  it("a cadence keeps running every real hour across the date line", () => {
    const hourly = runs("0 * * * *", tz, "2011-12-30T07:00:00Z", "2011-12-30T13:00:00Z");
    expect(hourly).toEqual(
      ["07:00", "08:00", "09:00", "10:00", "11:00", "12:00", "13:00"].map((t) =>
        z(t, "2011-12-30"),
      ),
    );
  });
});

describe("a gap ending at midnight owes its date's run: America/Nuuk 2024-03-30 23:00 → 00:00", () => {
  it("30 23 * * * runs Saturday's 23:30 at the first instant after the gap, Sunday 00:00", () => {
    expect(
      runs("30 23 * * *", "America/Nuuk", "2024-03-29T12:00:00Z", "2024-04-01T12:00:00Z"),
    ).toEqual([
      z("01:30", "2024-03-30"), // Fri 23:30 −02
      z("01:00", "2024-03-31"), // Sat's 23:30 does not exist: Sun 00:00 −01
      z("00:30", "2024-04-01"), // Sun 23:30 −01
    ]);
  });
});

describe("around every transition, next/prev/between/count describe the same set", () => {
  const cases: [string, string[]][] = [
    ["Europe/Berlin", ["2024-03-31T01:00:00Z", "2024-10-27T01:00:00Z"]],
    ["America/New_York", ["2024-03-10T07:00:00Z", "2024-11-03T06:00:00Z"]],
    ["Australia/Lord_Howe", ["2024-04-06T15:00:00Z", "2024-10-05T15:30:00Z"]],
    ["America/Santiago", ["2024-04-07T03:00:00Z", "2024-09-08T04:00:00Z"]],
    ["Pacific/Apia", ["2011-12-30T10:00:00Z"]],
    ["America/Nuuk", ["2024-03-30T23:00:00Z"]],
  ];
  const specs = [
    "30 2 * * *",
    "*/15 1-2 * * *",
    "0 * * * *",
    "*/10 * * * *",
    "0 23,0 * * *",
    "*/30 30 1,2 * * *",
  ];
  for (const [tz, transitions] of cases) {
    for (const spec of specs) {
      it(`${spec} in ${tz}`, () => {
        const p = parseSchedule(spec, tz);
        for (const tr of transitions) {
          const from = at(tr) - 6 * 3_600_000;
          const to = at(tr) + 6 * 3_600_000;
          const forward = between(p, from, to, 1_000);
          const backward: number[] = [];
          for (let t = prevBefore(p, to + 1); t !== null && t >= from; t = prevBefore(p, t))
            backward.push(t);
          expect(backward.reverse()).toEqual(forward);
          expect(countBetween(p, from, to)).toBe(forward.length);
          for (const t of forward) expect(nextAfter(p, t - 1)).toBe(t);
        }
      });
    }
  }
});
