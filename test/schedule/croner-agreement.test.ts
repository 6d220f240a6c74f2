/**
 * tickwork's cron evaluation against croner, an independent implementation: ≥ 200 generated
 * expressions × 8 time zones, over 2024: the first occurrences of the year, and windows around
 * every DST transition (12 occurrences each, to keep the file near 10 s; croner takes ~0.1 ms per
 * occurrence).
 *
 * croner is configured to the comparable semantics: day-of-month OR day-of-week (`domAndDow:
 * false`, its default), 5 or 6 fields, and `fixedTimeRule: "no-wildcard"` for DST. The one class of
 * difference is which expressions count as fixed-time at a DST transition (ADR-0002): croner treats
 * any `*` or step in the second, minute or hour field as a cadence, tickwork looks at the hour field
 * only. So each expression is compared twice:
 * 1. evaluated with croner's DST class, it must agree with croner exactly;
 * 2. with tickwork's own class, it may differ from (1) only within a day of a DST transition, and
 *    only when the two classes differ.
 *
 * Also: a date a zone skipped whole (Pacific/Apia 2011, Pacific/Kiritimati 1994), and what croner
 * and tickwork accept but cron-parser refuses (overlapping list items, a lowercase `l`).
 */
import { Cron } from "croner";
import { describe, expect, it } from "vitest";
import {
  CRON_MACROS,
  nextAfter,
  type ParsedCron,
  parseSchedule,
  type ScheduleError,
} from "../../src/core/schedule/index.ts";
import { zoneSegment } from "../../src/core/schedule/time-zone.ts";
import { cronCorpus } from "./cron-generator.ts";

const EXPRESSIONS = cronCorpus(20_240, 220);
const ZONES = [
  "UTC",
  "Europe/Berlin",
  "America/New_York",
  "Australia/Lord_Howe", // 30-minute DST shift
  "Asia/Kolkata", // +05:30, no DST
  "America/Santiago", // transitions at midnight
  "Pacific/Chatham", // +12:45 / +13:45
  "America/St_Johns", // −03:30 / −02:30
];
const YEAR_START = Date.parse("2024-01-01T00:00:00Z");
const YEAR_END = Date.parse("2025-01-01T00:00:00Z");
const PER_WINDOW = 12;
const DAY = 86_400_000;

/** DST transitions of `tz` in `[from, to)`. */
function transitions(tz: string, from = YEAR_START, to = YEAR_END): number[] {
  const out: number[] = [];
  for (let t = from; t < to; ) {
    const seg = zoneSegment(tz, t);
    if (seg.to < to && zoneSegment(tz, seg.to).offset !== seg.offset) out.push(seg.to);
    t = seg.to;
  }
  return out;
}

/** croner's fixed-time class under `fixedTimeRule: "no-wildcard"`. */
function cronerFixedTime(spec: string): boolean {
  const fields = (CRON_MACROS[spec] ?? spec).split(/\s+/);
  const timeFields = fields.length === 5 ? ["0", ...fields.slice(0, 2)] : fields.slice(0, 3);
  return timeFields.every((f) => !/[*?/]/.test(f));
}

function ours(p: ParsedCron, after: number, n: number): number[] {
  const out: number[] = [];
  for (let t: number | null = after; out.length < n; ) {
    t = nextAfter(p, t);
    if (t === null) break;
    out.push(t);
  }
  return out;
}

function theirs(cron: Cron, after: number, n: number): number[] {
  return cron.nextRuns(n, new Date(after)).map((d) => d.getTime());
}

const iso = (ts: number[]): string[] => ts.map((t) => new Date(t).toISOString());

describe("cron evaluation agrees with croner", () => {
  let classDifferences = 0;

  it("compares at least 200 expressions", () => {
    expect(EXPRESSIONS.length).toBeGreaterThanOrEqual(200);
  });

  for (const tz of ZONES) {
    it(`in ${tz}`, () => {
      const starts = [YEAR_START, ...transitions(tz).map((t) => t - 90 * 60_000)].map(
        (t) => t + 500,
      );
      // Windows of sparse expressions reach into later years.
      const dst = transitions(tz, YEAR_START, YEAR_END + 10 * 365 * DAY);
      const disagreements: string[] = [];
      let compared = 0;
      let dstClassDifferences = 0;
      for (const spec of EXPRESSIONS) {
        const cron = new Cron(spec, {
          timezone: tz,
          paused: true,
          domAndDow: false,
          fixedTimeRule: "no-wildcard",
        });
        let parsed: ParsedCron;
        try {
          parsed = parseSchedule(spec, tz) as ParsedCron;
        } catch (error) {
          // We reject what never fires; croner accepts it and finds no run.
          expect((error as ScheduleError).code, spec).toBe("never_fires");
          expect(theirs(cron, YEAR_START, 1), spec).toEqual([]);
          continue;
        }
        const asCroner: ParsedCron = { ...parsed, fixedTime: cronerFixedTime(spec) };
        for (const start of starts) {
          compared++;
          const expected = theirs(cron, start, PER_WINDOW);
          const actual = ours(asCroner, start, PER_WINDOW);
          if (actual.join() !== expected.join()) {
            disagreements.push(
              `${spec} from ${new Date(start).toISOString()}\n  ours   ${iso(actual).join(" ")}\n  croner ${iso(expected).join(" ")}`,
            );
          }
          // Compare our own DST class over the span both lists cover (a run more or less at a
          // transition shifts everything after it).
          const own = ours(parsed, start, PER_WINDOW);
          const end = Math.min(own.at(-1) ?? 0, actual.at(-1) ?? 0);
          const a = own.filter((t) => t <= end);
          const b = actual.filter((t) => t <= end);
          if (a.join() !== b.join()) {
            dstClassDifferences++;
            expect(parsed.fixedTime, spec).not.toBe(asCroner.fixedTime);
            const differing = [...a, ...b].filter((t) => !a.includes(t) || !b.includes(t));
            for (const t of differing) {
              expect(
                dst.some((d) => Math.abs(d - t) <= DAY),
                `${spec}: ${new Date(t).toISOString()}`,
              ).toBe(true);
            }
          }
        }
      }
      expect(disagreements).toEqual([]);
      expect(compared).toBeGreaterThan(200);
      if (dst.length === 0) expect(dstClassDifferences).toBe(0);
      classDifferences += dstClassDifferences;
    });
  }

  it("skips a date the zone never had, as croner does (Pacific/Apia 2011, Kiritimati 1994)", () => {
    const cases: [string, string[]][] = [
      // 2011-12-29 23:59:59 −10 → 2011-12-31 00:00:00 +14
      ["Pacific/Apia", ["2011-12-28T00:00:00Z", "2011-12-30T08:30:00Z"]],
      // 1994-12-30 23:59:59 −10 → 1995-01-01 00:00:00 +14
      ["Pacific/Kiritimati", ["1994-12-29T00:00:00Z"]],
    ];
    const disagreements: string[] = [];
    for (const [tz, starts] of cases) {
      for (const spec of [...EXPRESSIONS, "0 12 * * *", "30 23 * * *", "0 12 * * 5"]) {
        let parsed: ParsedCron;
        try {
          parsed = parseSchedule(spec, tz) as ParsedCron;
        } catch {
          continue; // never_fires, checked above
        }
        const asCroner: ParsedCron = { ...parsed, fixedTime: cronerFixedTime(spec) };
        const cron = new Cron(spec, {
          timezone: tz,
          paused: true,
          domAndDow: false,
          fixedTimeRule: "no-wildcard",
        });
        for (const start of starts.map(Date.parse)) {
          const actual = iso(ours(asCroner, start, 8));
          const expected = iso(theirs(cron, start, 8));
          if (actual.join() !== expected.join())
            disagreements.push(`${spec} in ${tz}\n  ours   ${actual}\n  croner ${expected}`);
        }
      }
    }
    expect(disagreements).toEqual([]);
  });

  it("reads overlapping list items and a lowercase l as croner does", () => {
    const specs = [
      "0 0 * * 0,1,2,3,4,5,6,7",
      "0 0 * * 5-7,0",
      "0 1-15/5,6 * * *",
      "*/10,30-35 * * * *",
      "0 0 1-10,5-15 * *",
      "0 0 * JAN-MAR,2 *",
      "0 0 l * *",
      "0 0 * * 5l",
      "0 0 lw * *",
      "30 9 l,15 * *",
      "0 30 2 * * 0l,6l",
    ];
    for (const tz of ["UTC", "Europe/Berlin"]) {
      for (const spec of specs) {
        const cron = new Cron(spec, {
          timezone: tz,
          paused: true,
          domAndDow: false,
          fixedTimeRule: "no-wildcard",
        });
        const parsed = parseSchedule(spec, tz) as ParsedCron;
        const asCroner: ParsedCron = { ...parsed, fixedTime: cronerFixedTime(spec) };
        for (const start of [YEAR_START, ...transitions(tz).map((t) => t - 90 * 60_000)]) {
          expect(iso(ours(asCroner, start, 40)), `${spec} in ${tz}`).toEqual(
            iso(theirs(cron, start, 40)),
          );
        }
      }
    }
  });

  it("met the one documented class of difference (ADR-0002) on the way", () => {
    expect(classDifferences).toBeGreaterThan(0);
  });
});
