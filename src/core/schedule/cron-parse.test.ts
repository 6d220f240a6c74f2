/**
 * Cron as users write it: list items that overlap (crontab and croner take the union; cron-parser,
 * which parses for us, refuses a value two items share) and a lowercase `l`, read like `L`.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseCron } from "./cron-parse.ts";
import { ScheduleError } from "./errors.ts";
import { between } from "./occurrences.ts";
import { parseSchedule } from "./parse.ts";

const at = (iso: string): number => Date.parse(iso);
const FROM = at("2024-01-01T00:00:00Z");

/** Occurrences of `spec` in UTC from 2024-01-01 over `days` days. */
function runs(spec: string, days: number): number[] {
  return between(parseSchedule(spec, "UTC"), FROM, FROM + days * 86_400_000 - 1, 100_000);
}

/** The error code `spec` is refused with, or `null` when it parses. */
function refusal(spec: string): string | null {
  try {
    parseCron(spec);
    return null;
  } catch (error) {
    if (error instanceof ScheduleError) return error.code;
    throw error;
  }
}

describe("list items that overlap are read as their union", () => {
  it.each([
    ["0 0 * * 0,1,2,3,4,5,6,7", "0 0 * * 0,1,2,3,4,5,6"], // 0 and 7 are both Sunday
    ["0 0 * * 5-7,0", "0 0 * * 0,5,6"],
    ["0 0 * * sun,7", "0 0 * * 0"],
    ["0 1-15/5,6 * * *", "0 1,6,11 * * *"],
    ["*/10,30-35 * * * *", "0,10,20,30,31,32,33,34,35,40,50 * * * *"],
    ["0 0 1-10,5-15 * *", "0 0 1-15 * *"],
    ["0 0 * JAN-MAR,2,feb *", "0 0 * 1-3 *"],
    ["0,0,30 0 0 * * *", "0,30 0 0 * * *"],
    ["0 0 L,L,15,1-15 * *", "0 0 L,1-15 * *"],
    ["0 0 * * 5L,5L,7L,0L", "0 0 * * 5L,0L"],
    ["0 0 15 * 0,7", "0 0 15 * 0"], // still a restricted day-of-week: the 15th OR a Sunday
  ])("%s = %s", (overlapping, distinct) => {
    expect(refusal(overlapping)).toBeNull();
    expect(parseCron(overlapping).fields).toEqual(parseCron(distinct).fields);
    expect(runs(overlapping, 366)).toEqual(runs(distinct, 366));
  });

  it("keeps the DST class of what is written: a stepped hour item makes a cadence", () => {
    expect(parseCron("0 1-15/5,6 * * *").fixedTime).toBe(false);
    expect(parseCron("0 6,6 * * *").fixedTime).toBe(true);
  });

  it("still refuses an invalid item, naming the field as written", () => {
    expect(() => parseCron("0 0 32,1,1 * *")).toThrow(/day-of-month field "32,1,1"/);
    expect(() => parseCron("0,60,0 * * * *")).toThrow(/minute field "0,60,0"/);
    expect(() => parseCron("0 0 * * 1#2,1#2")).toThrow(/day-of-week field "1#2,1#2"/);
  });

  /** Field bounds by index: second, minute, hour, day-of-month, month, day-of-week (7 = Sunday). */
  const BOUNDS = [
    [0, 59],
    [0, 59],
    [0, 23],
    [1, 31],
    [1, 12],
    [0, 7],
  ] as const;
  /** How many days of occurrences show a field's whole effect, by index. */
  const SPAN_DAYS = [2, 2, 2, 366, 366, 21];

  /** A list item within `[min, max]`, with the values it stands for. */
  function itemArb(min: number, max: number): fc.Arbitrary<[string, number[]]> {
    const value = fc.integer({ min, max });
    const range = fc
      .tuple(value, value, fc.integer({ min: 1, max: max - min + 1 }))
      .map(([a, b, step]) => [Math.min(a, b), Math.max(a, b), step] as const);
    const expand = (lo: number, hi: number, step: number) =>
      Array.from({ length: Math.floor((hi - lo) / step) + 1 }, (_, i) => lo + i * step);
    return fc.oneof(
      value.map((v): [string, number[]] => [`${v}`, [v]]),
      range.map(([a, b]): [string, number[]] => [`${a}-${b}`, expand(a, b, 1)]),
      range.map(([a, b, s]): [string, number[]] => [`${a}-${b}/${s}`, expand(a, b, s)]),
      range.map(([, , s]): [string, number[]] => [`*/${s}`, expand(min, max, s)]),
      fc.constant<[string, number[]]>(["*", expand(min, max, 1)]),
    );
  }

  /** A field index and up to 5 items of that field, at least `minLength`. */
  const listArb = (minLength: number) =>
    fc
      .integer({ min: 0, max: 5 })
      .chain((index) =>
        fc
          .array(itemArb(BOUNDS[index]![0], BOUNDS[index]![1]), { minLength, maxLength: 5 })
          .map((items) => ({ index, items })),
      );

  /** A daily-at-midnight expression with field `index` replaced. */
  const withField = (index: number, field: string): string => {
    const six = ["0", "0", "0", "*", "*", "*"];
    six[index] = field;
    return six.join(" ");
  };

  it("property: a list fires exactly when one of its items alone would, overlaps or not", () => {
    fc.assert(
      fc.property(listArb(1), ({ index, items }) => {
        const spec = withField(index, items.map(([item]) => item).join(","));
        const days = SPAN_DAYS[index]!;
        const union = new Set(items.flatMap(([item]) => runs(withField(index, item), days)));
        expect(runs(spec, days)).toEqual([...union].sort((a, b) => a - b));
      }),
      { numRuns: 150 },
    );
  });

  it("property: a list parses to the fields of the list of its distinct values", () => {
    // Two items at least: a lone `*` is unrestricted, a list of values never is (ADR-0004).
    fc.assert(
      fc.property(listArb(2), ({ index, items }) => {
        const spec = withField(index, items.map(([item]) => item).join(","));
        const values = items.flatMap(([, v]) => v).map((v) => (index === 5 ? v % 7 : v));
        const distinct = [...new Set(values)].sort((a, b) => a - b).join(",");
        expect(parseCron(spec).fields).toEqual(parseCron(withField(index, distinct)).fields);
      }),
      { numRuns: 300 },
    );
  });
});

describe("a lowercase l is read as L", () => {
  it.each([
    ["0 0 l * *", "0 0 L * *"],
    ["0 0 * * 5l", "0 0 * * 5L"],
    ["0 0 * * fril", "0 0 * * FRIL"],
    ["0 0 l,15 * *", "0 0 L,15 * *"],
    ["0 0 lw,l,15w * *", "0 0 LW,L,15W * *"],
    ["0 0 ? * 0l,6l", "0 0 ? * 0L,6L"],
  ])("%s = %s", (lower, upper) => {
    expect(refusal(lower)).toBeNull();
    expect(parseCron(lower)).toEqual(parseCron(upper));
  });

  it("runs 0 0 l * * on the last day of each month, 0 0 * * 5l on the last Friday", () => {
    const iso = (spec: string) =>
      runs(spec, 121).map((t) => new Date(t).toISOString().slice(0, 10));
    expect(iso("0 0 l * *")).toEqual(["2024-01-31", "2024-02-29", "2024-03-31", "2024-04-30"]);
    expect(iso("0 0 * * 5l")).toEqual(["2024-01-26", "2024-02-23", "2024-03-29", "2024-04-26"]);
  });

  it("refuses l where L is refused: a lone L in day-of-week", () => {
    expect(() => parseCron("0 0 * * l")).toThrow(/day-of-week field "l": .*standalone L/);
  });

  const DAYS_OF_MONTH = ["L", "LW", "15W", "L,15", "1-5,L", "L,LW", "*", "?", "10-20"];
  const DAYS_OF_WEEK = ["5L", "FRIL", "0L,6L", "MON-FRI", "FRI#2", "*", "SUN,SAT", "L", "1L,1"];
  const MONTHS = ["*", "JUL", "JAN-MAR", "APR,JUL", "*/2"];

  it("property: an expression means the same in lowercase (and is refused the same way)", () => {
    const spec = fc
      .tuple(
        fc.constantFrom("0", "30", "*/15"),
        fc.constantFrom("9", "*/2", "0-6"),
        fc.constantFrom(...DAYS_OF_MONTH),
        fc.constantFrom(...MONTHS),
        fc.constantFrom(...DAYS_OF_WEEK),
      )
      .map((fields) => fields.join(" "));
    fc.assert(
      fc.property(spec, (upper) => {
        const lower = upper.toLowerCase();
        expect(refusal(lower), lower).toBe(refusal(upper));
        if (refusal(upper) === null) expect(parseCron(lower)).toEqual(parseCron(upper));
      }),
      { numRuns: 300 },
    );
  });
});
