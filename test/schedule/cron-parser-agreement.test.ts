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
});
