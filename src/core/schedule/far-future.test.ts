/**
 * Occurrences near the end of JavaScript's dates (±8.64e15 ms, year 275760). `nextAfter` and
 * `prevBefore` (exported from `tickwork/core`) answer an occurrence or `null`; for a cron schedule
 * they threw `RangeError: Invalid time value`, because the zone lookup probed the offset of a year
 * `Date` cannot hold.
 */
import { describe, expect, it } from "vitest";
import { countBetween, nextAfter, parseSchedule, prevBefore } from "./index.ts";

const MAX_DATE_MS = 8.64e15; // 275760-09-13T00:00:00.000Z
const DAY = 86_400_000;

describe("cron occurrences at the end of the Date range", () => {
  it("a daily cron's last representable occurrence is found, then null", () => {
    const daily = parseSchedule("0 0 * * *", "UTC");
    expect(nextAfter(daily, MAX_DATE_MS - 2 * DAY)).toBe(MAX_DATE_MS - DAY);
    expect(nextAfter(daily, MAX_DATE_MS - DAY)).toBe(MAX_DATE_MS);
    expect(nextAfter(daily, MAX_DATE_MS)).toBeNull();
  });

  it("in a zone with DST too", () => {
    const berlin = parseSchedule("0 12 * * *", "Europe/Berlin");
    const t = nextAfter(berlin, MAX_DATE_MS - 3 * DAY);
    expect(t).not.toBeNull();
    expect(t!).toBeLessThanOrEqual(MAX_DATE_MS);
    expect(nextAfter(berlin, MAX_DATE_MS - 1000)).toBeNull();
  });

  it("prevBefore at the start of the Date range answers null, not a RangeError", () => {
    const daily = parseSchedule("0 0 * * *", "UTC");
    // -8.64e15 is -271821-04-20T00:00:00Z: the first instant JavaScript can hold, a midnight.
    expect(prevBefore(daily, -MAX_DATE_MS + 1000)).toBe(-MAX_DATE_MS);
    expect(prevBefore(daily, -MAX_DATE_MS)).toBeNull();
    expect(prevBefore(daily, -MAX_DATE_MS + DAY + 1)).toBe(-MAX_DATE_MS + DAY);
  });

  it("countBetween up to the end of the range", () => {
    const daily = parseSchedule("0 0 * * *", "UTC");
    expect(countBetween(daily, MAX_DATE_MS - 10 * DAY + 1, MAX_DATE_MS)).toBe(10);
  });
});
