import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { resolveOptions } from "../../src/engine/options.ts";

describe("engine options", () => {
  it("fills in the documented defaults", () => {
    const o = resolveOptions();
    expect(o.tick).toMatchObject({ leaseMs: 30_000, horizonMs: 65_000, chunk: 100 });
    expect(o.jobs).toEqual({ timeoutMs: 60_000, retries: 3, priority: 5 });
    expect(o.degradation?.queueDepth).toEqual({ normal: 50, degraded: 100, critical: 500 });
    expect(resolveOptions({ degradation: false }).degradation).toBeUndefined();
  });

  it("refuses values that would stall or loop the engine, naming the option", () => {
    expect(() => resolveOptions({ tick: { perScheduleLimit: 0 } })).toThrow(
      /tick\.perScheduleLimit/,
    );
    expect(() => resolveOptions({ tick: { chunk: 1.5 } })).toThrow(/tick\.chunk/);
    expect(() => resolveOptions({ tick: { horizonMs: -1 } })).toThrow(/tick\.horizonMs/);
    expect(() => resolveOptions({ jobs: { priority: 11 } })).toThrow(/jobs\.priority/);
    expect(() =>
      resolveOptions({ degradation: { queueDepth: { normal: 10, degraded: 5, critical: 20 } } }),
    ).toThrow(/degradation\.queueDepth/);
    // Below the recover grace, every accepted message would be re-published on every tick.
    expect(() => resolveOptions({ reapAfterMs: 0 })).toThrow(/reapAfterMs/);
    expect(() => resolveOptions({ reapAfterMs: 29_999 })).toThrow(/reapAfterMs/);
    expect(resolveOptions({ reapAfterMs: 30_000 }).reapAfterMs).toBe(30_000);
    expect(resolveOptions().reapAfterMs).toBe(3_600_000);
    // No schedule would fit below what an occurrence adds; NaN would compare false and admit all.
    for (const maxJobBytes of [0, 2_048, Number.NaN, 1.5e5 + 0.5, -Infinity]) {
      expect(() => resolveOptions({ maxJobBytes })).toThrow(/maxJobBytes/);
    }
    expect(resolveOptions().maxJobBytes).toBe(Number.POSITIVE_INFINITY);
    expect(resolveOptions({ maxJobBytes: 2_049 }).maxJobBytes).toBe(2_049);
    // A degradation delay past a submit's longest delay (a year) would move runAt past year 9999.
    for (const key of ["degradedDelayMs", "criticalDelayMs", "retryAfterMs"]) {
      expect(() => resolveOptions({ degradation: { [key]: Number.MAX_SAFE_INTEGER } })).toThrow(
        new RegExp(`degradation\\.${key}`),
      );
      const accepted: unknown = resolveOptions({
        degradation: { [key]: 365 * 86_400_000 },
      }).degradation;
      expect((accepted as Record<string, number>)[key]).toBe(365 * 86_400_000);
    }
  });

  it("refuses a cancelCheckMs past Node's timer limit, which polled every millisecond", () => {
    // setTimeout(poll, 2^31) fires after 1 ms: each running job polled again every millisecond,
    // with a TimeoutOverflowWarning on stderr each time.
    for (const cancelCheckMs of [2 ** 31, 1e10, Number.MAX_SAFE_INTEGER]) {
      expect(() => resolveOptions({ cancelCheckMs })).toThrow(/cancelCheckMs/);
    }
    expect(resolveOptions({ cancelCheckMs: 2 ** 31 - 1 }).cancelCheckMs).toBe(2 ** 31 - 1);
    expect(resolveOptions({ cancelCheckMs: 0 }).cancelCheckMs).toBe(0);
  });

  it("accepts every in-range tick setting", () => {
    fc.assert(
      fc.property(
        fc.record({
          leaseMs: fc.integer({ min: 1, max: 1e7 }),
          chunk: fc.integer({ min: 1, max: 1e4 }),
          horizonMs: fc.integer({ min: 0, max: 1e7 }),
          budgetMs: fc.integer({ min: 0, max: 1e7 }),
        }),
        (tick) => {
          expect(resolveOptions({ tick }).tick).toMatchObject(tick);
        },
      ),
    );
  });
});
