import { describe, expect, it } from "vitest";
import { retryAfterMs } from "./retry-after.ts";

const now = Date.parse("2026-06-01T12:00:00Z");

describe("retryAfterMs", () => {
  it.each([
    ["0", 0],
    ["10", 10_000],
    [" 3 ", 3000],
    ["6m5s", 365_000],
    ["1.5s", 1500],
    ["250ms", 250],
    ["1h", 3_600_000],
    ["Mon, 01 Jun 2026 12:00:30 GMT", 30_000],
    ["Mon, 01 Jun 2026 11:00:00 GMT", 0],
  ])("reads %j as %i ms", (value, ms) => {
    expect(retryAfterMs(value, now)).toBe(ms);
  });

  it.each([null, undefined, "", "soon", "-5", "86401", "25h"])(
    "falls back to the backoff for %j",
    (value) => {
      expect(retryAfterMs(value, now)).toBeUndefined();
    },
  );
});
