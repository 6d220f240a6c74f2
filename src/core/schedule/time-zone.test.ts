import { afterEach, describe, expect, it, vi } from "vitest";
import { ScheduleError } from "./errors.ts";
import { assertTimeZone, offsetAt, zoneSegment } from "./time-zone.ts";

const at = (iso: string): number => Date.parse(iso);
const HOUR = 3_600_000;

describe("offsetAt", () => {
  it.each([
    ["UTC", "2024-07-01T00:00:00Z", 0],
    ["Europe/Berlin", "2024-01-15T12:00:00Z", HOUR],
    ["Europe/Berlin", "2024-07-15T12:00:00Z", 2 * HOUR],
    ["Asia/Kolkata", "2024-07-15T12:00:00Z", 5.5 * HOUR],
    ["Australia/Lord_Howe", "2024-07-15T12:00:00Z", 10.5 * HOUR],
    ["Australia/Lord_Howe", "2024-12-15T12:00:00Z", 11 * HOUR],
    ["America/New_York", "2024-12-15T12:00:00Z", -5 * HOUR],
  ])("%s at %s", (tz, iso, offset) => {
    expect(offsetAt(tz, at(iso))).toBe(offset);
  });
});

describe("zoneSegment", () => {
  it("finds the spring-forward gap to the second", () => {
    const seg = zoneSegment("Europe/Berlin", at("2024-03-31T01:00:00Z"));
    expect(seg).toMatchObject({
      from: at("2024-03-31T01:00:00Z"),
      offset: 2 * HOUR,
      gapBefore: HOUR,
      fold: 0,
    });
    expect(seg.to).toBe(at("2024-10-27T01:00:00Z"));
    const before = zoneSegment("Europe/Berlin", at("2024-03-31T00:59:59Z"));
    expect(before).toMatchObject({ to: at("2024-03-31T01:00:00Z"), offset: HOUR });
  });

  it("finds a 30-minute fold (Lord Howe)", () => {
    const seg = zoneSegment("Australia/Lord_Howe", at("2024-04-06T15:10:00Z"));
    expect(seg).toMatchObject({
      from: at("2024-04-06T15:00:00Z"),
      offset: 10.5 * HOUR,
      fold: HOUR / 2,
    });
  });

  it("spans years in a zone without DST", () => {
    const seg = zoneSegment("Asia/Kolkata", at("2024-06-01T00:00:00Z"));
    expect(seg.from).toBeLessThanOrEqual(at("2024-01-01T00:00:00Z"));
    expect(seg.to).toBeGreaterThanOrEqual(at("2026-01-01T00:00:00Z"));
    expect(seg).toMatchObject({ offset: 5.5 * HOUR, fold: 0, gapBefore: 0 });
  });

  it("finds a whole-day gap (Pacific/Apia skipped 2011-12-30)", () => {
    // Pacific/Apia skipped 2011-12-30 entirely: 2011-12-29T24:00-10 → 2011-12-31T00:00+14.
    const seg = zoneSegment("Pacific/Apia", at("2011-12-30T10:00:00Z"));
    expect(seg).toMatchObject({ from: at("2011-12-30T10:00:00Z"), gapBefore: 24 * HOUR });
  });
});

describe("assertTimeZone", () => {
  it("accepts IANA names and rejects the rest", () => {
    expect(() => assertTimeZone("America/Argentina/Buenos_Aires")).not.toThrow();
    expect(() => assertTimeZone("Europe/Atlantis")).toThrow(ScheduleError);
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("keeps one zone's offsets however its name is spelled (no cache per spelling)", () => {
    // `Intl` takes a name in any case (2^n spellings of an n-letter name) and under its aliases:
    // a schedule's `tz` is any of them. Kept per spelling, each new one held a formatter and its
    // zone's years (~37 KB of RSS, mostly ICU's): 5,000 PATCHes of one schedule's `tz`, each a new
    // spelling of America/Argentina/ComodRivadavia, grew the server by 185 MB, never freed.
    const name = "America/Argentina/ComodRivadavia";
    const t = at("2024-06-01T00:00:00Z");
    const expected = zoneSegment(name, t);
    const spelling = (n: number) =>
      [...name].map((c, i) => ((n >> i) & 1 ? c.toUpperCase() : c.toLowerCase())).join("");
    const formatToParts = vi.spyOn(Intl.DateTimeFormat.prototype, "formatToParts");
    for (let n = 1; n <= 100; n++) {
      expect(zoneSegment(spelling(n), t)).toEqual(expected);
      expect(offsetAt(spelling(n), t)).toBe(expected.offset);
    }
    // The zone's years were found once, for its first spelling: one read per offsetAt here.
    expect(formatToParts.mock.calls.length).toBeLessThanOrEqual(100);
  });

  it("keeps a bounded number of a zone's years (a write may name any year up to 9999)", () => {
    const name = "Australia/Lord_Howe";
    const june = (year: number) => Date.UTC(year, 5, 1);
    for (let year = 3000; year < 3200; year++) zoneSegment(name, june(year));
    const formatToParts = vi.spyOn(Intl.DateTimeFormat.prototype, "formatToParts");
    // The years asked about last are still kept: no probe.
    zoneSegment(name, june(3199));
    expect(formatToParts).not.toHaveBeenCalled();
    // The first ones were dropped: asked again, the year is probed again (the same answer).
    const again = zoneSegment(name, june(3000));
    expect(formatToParts).toHaveBeenCalled();
    expect(again.offset).toBe(offsetAt(name, june(3000)));
  });
});
