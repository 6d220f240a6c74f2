import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseInstant } from "./instant.ts";

describe("parseInstant", () => {
  it("reads what toISOString writes, for every millisecond from year -271821 to 275760", () => {
    fc.assert(
      fc.property(fc.integer({ min: -8.64e15, max: 8.64e15 }), (ms) => {
        expect(parseInstant(new Date(ms).toISOString())).toBe(ms);
      }),
      { numRuns: 2_000 },
    );
  });

  it("applies the offset, in every form", () => {
    const at = Date.UTC(2026, 11, 1, 9, 30);
    expect(parseInstant("2026-12-01T09:30:00Z")).toBe(at);
    expect(parseInstant("2026-12-01T09:30Z")).toBe(at);
    expect(parseInstant("2026-12-01t09:30:00z")).toBe(at);
    expect(parseInstant("2026-12-01 09:30:00Z")).toBe(at);
    expect(parseInstant("2026-12-01T10:30:00+01:00")).toBe(at);
    expect(parseInstant("2026-12-01T10:30:00+0100")).toBe(at);
    expect(parseInstant("2026-12-01T10:30:00+01")).toBe(at);
    expect(parseInstant("2026-12-01T09:30:00.1234567890123Z")).toBe(at + 123);
    expect(parseInstant("2026-12-01T00:00:00-09:30")).toBe(at);
    expect(parseInstant("2026-12-01T09:30:00.5Z")).toBe(at + 500);
    expect(parseInstant("2026-12-01T09:30:00,123456789Z")).toBe(at + 123);
    expect(parseInstant("2026-12-01")).toBe(Date.UTC(2026, 11, 1));
    expect(parseInstant("+010000-01-01T00:00:00Z")).toBe(253402300800000);
    expect(parseInstant("0050-06-01")).toBe(new Date("0050-06-01T00:00:00Z").getTime());
  });

  it("refuses what is not an ISO-8601 time that exists, with its offset", () => {
    for (const text of [
      "",
      "1",
      "12",
      "2026",
      "June 5",
      "hello 2026",
      "2026-12-01T09:30:00", // no offset: it would be read in the server's zone
      "2026-12-01T09:30",
      "2026-02-31",
      "2025-02-29",
      "2026-13-01",
      "2026-00-10",
      "2026-12-00",
      "2026-12-01T24:00:00Z",
      "2026-12-01T23:60:00Z",
      "2026-12-01T23:59:60Z",
      "2026-12-01T09:30:00+24:00",
      "2026-12-01T09:30:00+01:60",
      "2026-12-1",
      "26-12-01",
      "-000000-01-01",
      "+275761-02-29", // not a leap year: no such day, however far out
      "2026-12-01T09:30:00.Z",
      "2026-12-01T09:30:00Z ",
      " 2026-12-01",
      "2026-12-01T09:30:00Zx",
      "２０２６-12-01",
      "Tue, 01 Dec 2026 09:30:00 GMT",
      "20261201T093000Z", // the basic format
      "2026-12-01T09:30:00+1", // an offset's hours are two digits
    ]) {
      expect(parseInstant(text), text).toBeNaN();
    }
    // Dates that exist past the range of JavaScript's dates: out of range, not malformed.
    for (const text of [
      "+275761-01-01",
      "+999999-12-31T23:59:59.999Z",
      "+275760-09-13T00:00:00-00:01", // one minute past the last time a Date holds
      "+275764-02-29", // a leap year
    ]) {
      expect(parseInstant(text), text).toBe(Number.POSITIVE_INFINITY);
    }
    expect(parseInstant("-271822-01-01")).toBe(Number.NEGATIVE_INFINITY);
    expect(parseInstant("-999999-01-01T00:00:00Z")).toBe(Number.NEGATIVE_INFINITY);
    expect(parseInstant("2024-02-29")).toBe(Date.UTC(2024, 1, 29));
  });
});

describe("instant and boundedDuration (request fields)", () => {
  it("keep whole milliseconds: a fraction is dropped, as an ISO string has none", async () => {
    const { instant, boundedDuration } = await import("./schemas.ts");
    // A duration is rounded to whole ms already (parseDuration).
    const at = Date.UTC(2026, 11, 1, 9, 30);
    expect(instant.parse(at + 0.25)).toBe(at);
    expect(instant.parse(at + 0.999)).toBe(at);
    expect(instant.parse(at)).toBe(at);
    expect(boundedDuration(0, 10_000).parse(1_500.7)).toBe(1_501);
    fc.assert(
      fc.property(fc.double({ min: 0, max: 253402300799999, noNaN: true }), (ms) => {
        expect(Number.isInteger(instant.parse(ms))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
