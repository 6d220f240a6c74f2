/**
 * tickwork parses cron with cron-parser but evaluates it itself (ADR-0004). Where cron-parser's own
 * iteration has no DST to get wrong — UTC, and a zone with a fixed offset — the two must agree on
 * every generated expression (except `W`, which cron-parser does not support).
 */
import { CronExpressionParser } from "cron-parser";
import { describe, expect, it } from "vitest";
import { between, parseSchedule, type ScheduleError } from "../../src/core/schedule/index.ts";
import { cronCorpus } from "./cron-generator.ts";

const EXPRESSIONS = cronCorpus(7, 240).filter((spec) => !/W/i.test(spec));
const FROM = Date.parse("2024-01-01T00:00:00Z");
const TO = Date.parse("2026-01-01T00:00:00Z");
const N = 25;

describe("cron evaluation agrees with cron-parser's own iteration", () => {
  for (const tz of ["UTC", "Asia/Kolkata"]) {
    it(`in ${tz}`, () => {
      let compared = 0;
      for (const spec of EXPRESSIONS) {
        let ours: number[];
        try {
          ours = between(parseSchedule(spec, tz), FROM, TO, N);
        } catch (error) {
          expect((error as ScheduleError).code, spec).toBe("never_fires");
          continue;
        }
        const iterator = CronExpressionParser.parse(spec, {
          tz,
          currentDate: FROM - 1,
          endDate: TO,
        });
        const theirs: number[] = [];
        while (theirs.length < N && iterator.hasNext()) theirs.push(iterator.next().getTime());
        expect(ours, spec).toEqual(theirs);
        compared++;
      }
      expect(compared).toBeGreaterThan(150);
    });
  }

  // cron-parser refuses a value two list items share, and a lowercase `l`; crontab and croner
  // accept both, and so do we: the union of the items, and `l` read as `L`.
  it.each([
    ["0 0 * * 0,1,2,3,4,5,6,7", "0 0 * * 0-6"],
    ["0 1-15/5,6 * * *", "0 1,6,11 * * *"],
    ["*/10,30-35 * * * *", "0,10,20,30-35,40,50 * * * *"],
    ["0 0 l * *", "0 0 L * *"],
    ["0 0 * * 5l", "0 0 * * 5L"],
    ["0 0 l,1-15,10 * *", "0 0 L,1-15 * *"],
  ])("reads %s as cron-parser reads %s", (spec, equivalent) => {
    const iterator = CronExpressionParser.parse(equivalent, {
      tz: "UTC",
      currentDate: FROM - 1,
      endDate: TO,
    });
    const theirs: number[] = [];
    while (theirs.length < N && iterator.hasNext()) theirs.push(iterator.next().getTime());
    expect(between(parseSchedule(spec, "UTC"), FROM, TO, N)).toEqual(theirs);
  });
});
