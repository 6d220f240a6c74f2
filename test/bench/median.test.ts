import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { median, pairedRatio } from "../../bench/lib/median.ts";

describe("the benchmark's round-by-round ratios", () => {
  it("pairs each round with its own round, not the medians with each other", () => {
    // 31da8c0's Redis time per submit: the ratio of the medians read 47.8 / 37.2 = 1.28.
    const r = pairedRatio([39.1, 47.8, 55.3], [36.9, 46.3, 37.2]);
    expect(r.by_round).toEqual([1.06, 1.03, 1.49]);
    expect(r.median).toBe(1.06);
    expect(r.value).toBeCloseTo(39.1 / 36.9, 10);
    expect(median([39.1, 47.8, 55.3]) / median([36.9, 46.3, 37.2])).toBeCloseTo(1.285, 2);
  });

  it("keeps the unrounded median a target compares: 0.996 is not 1.0", () => {
    const r = pairedRatio([996], [1000]);
    expect(r.median).toBe(1);
    expect(r.value).toBe(0.996);
    expect(r.value >= 1).toBe(false);
  });

  it("takes the mean of the middle two for an even count", () => {
    expect(pairedRatio([2, 3, 4, 10], [1, 1, 1, 1]).median).toBe(3.5);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it("does not move when a round slows both contenders alike", () => {
    fc.assert(
      fc.property(
        fc
          .array(fc.tuple(fc.integer({ min: 1, max: 1e6 }), fc.integer({ min: 1, max: 1e6 })), {
            minLength: 1,
            maxLength: 7,
            // Odd counts: the median is one round's ratio, so scaling both sides keeps it exactly.
          })
          .filter((rounds) => rounds.length % 2 === 1),
        fc.integer({ min: 2, max: 50 }),
        (rounds, k) => {
          const a = rounds.map(([x]) => x);
          const b = rounds.map(([, y]) => y);
          const scaled = pairedRatio(
            a.map((x) => x * k),
            b.map((y) => y * k),
          );
          const r = pairedRatio(a, b);
          expect(scaled.by_round).toEqual(r.by_round);
          expect(scaled.median).toBe(r.median);
          expect(scaled.value).toBeCloseTo(r.value, 12);
          expect(r.by_round).toContain(r.median);
        },
      ),
    );
  });

  it("refuses rounds that do not pair", () => {
    expect(() => pairedRatio([1, 2], [1])).toThrow(/2 rounds against 1/);
    expect(() => pairedRatio([], [])).toThrow();
  });
});
