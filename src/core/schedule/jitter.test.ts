import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hash32, occurrenceJitter } from "./jitter.ts";

describe("occurrenceJitter", () => {
  it("is 0 without jitter", () => {
    expect(occurrenceJitter("s", 1_000, 0)).toBe(0);
  });

  it("is a whole number of ms in [0, jitterMs], the same every time", () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.integer({ min: 0, max: 2 ** 42 }),
        fc.integer({ min: 0, max: 86_400_000 }),
        (id, fireAt, jitterMs) => {
          const j = occurrenceJitter(id, fireAt, jitterMs);
          expect(Number.isInteger(j)).toBe(true);
          expect(j).toBeGreaterThanOrEqual(0);
          expect(j).toBeLessThanOrEqual(jitterMs);
          expect(occurrenceJitter(id, fireAt, jitterMs)).toBe(j);
        },
      ),
    );
  });

  it("spreads occurrences over the whole range", () => {
    const buckets = new Array<number>(10).fill(0);
    for (let i = 0; i < 10_000; i++) {
      buckets[Math.floor(occurrenceJitter("nightly", i * 60_000, 9_999) / 1_000)]! += 1;
    }
    for (const n of buckets) expect(n).toBeGreaterThan(800);
  });

  it("has a stable hash (a change would move every scheduled run)", () => {
    expect([hash32("a"), hash32("s1@0"), hash32("s1@1000")]).toMatchInlineSnapshot(`
      [
        444641715,
        2241271817,
        3308336078,
      ]
    `);
  });
});
