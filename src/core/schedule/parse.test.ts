import { describe, expect, it } from "vitest";
import { ScheduleError, type ScheduleErrorCode } from "./errors.ts";
import { parseSchedule } from "./parse.ts";

function errorOf(spec: string, tz = "UTC"): ScheduleError {
  try {
    parseSchedule(spec, tz);
  } catch (error) {
    if (error instanceof ScheduleError) return error;
    throw error;
  }
  throw new Error(`expected "${spec}" in ${tz} to be rejected`);
}

describe("parseSchedule: cron", () => {
  it.each([
    ["*/5 * * * *", [0], [0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55]],
    ["15,45 * * * * *", [15, 45], Array.from({ length: 60 }, (_, i) => i)],
    ["0 30 9 * * 1-5", [0], [30]],
  ])("reads %s with 5 or 6 fields (6 = a leading second)", (spec, seconds, minutes) => {
    const p = parseSchedule(spec, "UTC");
    expect(p.kind).toBe("cron");
    if (p.kind !== "cron") return;
    expect(p.fields.seconds).toEqual(seconds);
    expect(p.fields.minutes).toEqual(minutes);
  });

  it("reads names, ?, L, W, LW and #", () => {
    const p = parseSchedule("0 0 L,15W,LW JAN-MAR ?", "Europe/Berlin");
    if (p.kind !== "cron") throw new Error("cron expected");
    expect(p.fields.lastDayOfMonth).toBe(true);
    expect(p.fields.nearestWeekdays).toEqual([15]);
    expect(p.fields.lastWeekdayOfMonth).toBe(true);
    expect(p.fields.months).toBe(0b1110);
    expect(p.fields.dayOfWeekAny).toBe(true);
    const nth = parseSchedule("0 0 * * FRI#3", "UTC");
    if (nth.kind !== "cron") throw new Error("cron expected");
    expect(nth.fields.daysOfWeek).toBe(1 << 5);
    expect(nth.fields.nthDayOfWeek).toBe(3);
    const last = parseSchedule("0 0 * * 5L", "UTC");
    if (last.kind !== "cron") throw new Error("cron expected");
    expect(last.fields.lastDaysOfWeek).toBe(1 << 5);
  });

  it.each([
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
    "@DAILY",
  ])("accepts the macro %s", (spec) => {
    expect(parseSchedule(spec, "UTC").kind).toBe("cron");
  });

  it.each([
    ["30 2 * * *", true],
    ["*/15 2 * * *", true],
    ["0 1-3,14 * * *", true],
    ["@daily", true],
    ["0 * * * *", false],
    ["0 */2 * * *", false],
    ["0 0-23/2 * * *", false],
    ["0 ? * * *", false],
    ["@hourly", false],
  ])("classifies %s as fixed-time=%s for DST (ADR-0002)", (spec, fixedTime) => {
    const p = parseSchedule(spec, "UTC");
    expect(p.kind === "cron" && p.fixedTime).toBe(fixedTime);
  });

  it("trims the spec and returns the same frozen object for the same input", () => {
    const a = parseSchedule("  0 0 * * *  ", "UTC");
    expect(a.spec).toBe("0 0 * * *");
    expect(Object.isFrozen(a)).toBe(true);
    expect(parseSchedule("  0 0 * * *  ", "UTC")).toBe(a);
    expect(parseSchedule("0 0 * * *", "Asia/Kolkata")).not.toBe(a);
  });

  it("shares one parse across anchors (a cron ignores the schedule's startAt)", () => {
    const a = parseSchedule("0 9 * * 1-5", "Europe/Berlin", 1_700_000_000_000);
    expect(parseSchedule("0 9 * * 1-5", "Europe/Berlin", 1_700_000_123_000)).toBe(a);
    expect(parseSchedule("0 9 * * 1-5", "Europe/Berlin")).toBe(a);
    expect(a).not.toHaveProperty("anchor");
  });
});

describe("parseSchedule: intervals", () => {
  it.each([
    ["1s", 1_000],
    ["30s", 30_000],
    ["5m", 300_000],
    ["1h", 3_600_000],
    ["1d", 86_400_000],
    ["365d", 365 * 86_400_000],
    ["90m", 5_400_000],
  ])("reads %s", (spec, everyMs) => {
    const p = parseSchedule(spec, "UTC");
    expect(p).toMatchObject({ kind: "interval", everyMs, anchor: 0 });
  });

  it("anchors the grid where it is told to (the schedule's startAt)", () => {
    expect(parseSchedule("5m", "UTC", 120_000)).toMatchObject({ anchor: 120_000 });
    expect(parseSchedule("5m", "UTC", 180_000)).toMatchObject({ anchor: 180_000 });
    expect(parseSchedule("5m", "UTC", 120_000)).toBe(parseSchedule("5m", "UTC", 120_000));
  });
});

describe("parseSchedule: every invalid input throws a ScheduleError naming what is wrong", () => {
  it.each<[string, string, ScheduleErrorCode, RegExp]>([
    ["", "UTC", "invalid_cron", /empty/],
    ["   ", "UTC", "invalid_cron", /empty/],
    ["garbage", "UTC", "invalid_cron", /expected 5 fields .* got 1/],
    ["not a cron at all", "UTC", "invalid_cron", /minute field "not": Invalid characters/],
    ["* * * *", "UTC", "invalid_cron", /got 4/],
    ["* * * * * * *", "UTC", "invalid_cron", /got 7/],
    ["60 * * * *", "UTC", "invalid_cron", /minute field "60"/],
    ["0 24 * * *", "UTC", "invalid_cron", /hour field "24"/],
    ["0 0 32 * *", "UTC", "invalid_cron", /day-of-month field "32"/],
    ["0 0 0 * *", "UTC", "invalid_cron", /day-of-month field "0"/],
    ["0 0 * 13 *", "UTC", "invalid_cron", /month field "13"/],
    ["0 0 * * 8", "UTC", "invalid_cron", /day-of-week field "8"/],
    ["0 0 * * 1#6", "UTC", "invalid_cron", /day-of-week field "1#6"/],
    ["0 0 * * FOO", "UTC", "invalid_cron", /day-of-week field "FOO"/],
    ["61 0 0 * * *", "UTC", "invalid_cron", /second field "61"/],
    ["5-1 * * * *", "UTC", "invalid_cron", /minute field "5-1"/],
    ["*/0 * * * *", "UTC", "invalid_cron", /minute field/],
    ["0 0 1-5W * *", "UTC", "invalid_cron", /W must follow a single day/],
    ["0 0 32W * *", "UTC", "invalid_cron", /32W is outside 1-31/],
    ["H * * * *", "UTC", "invalid_cron", /H \(hashed values\) is not supported/],
    ["@reboot", "UTC", "invalid_cron", /unknown macro/],
    ["@every 5m", "UTC", "invalid_cron", /unknown macro|got 2/],
    ["0 0 30 2 *", "UTC", "never_fires", /never fires/],
    ["0 0 31 4,6,9,11 *", "UTC", "never_fires", /never fires/],
    ["0 0 30W 2 *", "UTC", "never_fires", /never fires/],
    ["0 0 * * *", "Mars/Olympus", "invalid_timezone", /Unknown time zone "Mars\/Olympus"/],
    ["0 0 * * *", "", "invalid_timezone", /Unknown time zone ""/],
    ["5m", "Not/AZone", "invalid_timezone", /Unknown time zone/],
    ["0s", "UTC", "interval_out_of_range", /at least 1s and at most 365d/],
    ["400d", "UTC", "interval_out_of_range", /at least 1s and at most 365d/],
    ["366d", "UTC", "interval_out_of_range", /out of range/],
    ["99999999999999999999d", "UTC", "interval_out_of_range", /out of range/],
    ["5x", "UTC", "invalid_interval", /whole number followed by s, m, h or d/],
    ["1.5h", "UTC", "invalid_interval", /whole number/],
    ["500ms", "UTC", "invalid_interval", /whole number/],
    ["-5m", "UTC", "invalid_interval", /whole number/],
    ["5", "UTC", "invalid_interval", /whole number/],
    ["1h30m", "UTC", "invalid_interval", /whole number/],
    ["5M", "UTC", "invalid_interval", /whole number/],
  ])("%j in %j → %s", (spec, tz, code, message) => {
    const error = errorOf(spec, tz);
    expect(error).toBeInstanceOf(ScheduleError);
    expect(error.name).toBe("ScheduleError");
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
  });

  it("keeps cron-parser's error as the cause", () => {
    expect(errorOf("60 * * * *").cause).toBeInstanceOf(Error);
  });
});
