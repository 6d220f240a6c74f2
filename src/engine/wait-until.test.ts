import { describe, expect, it } from "vitest";
import { type WaitClock, waitUntil } from "./wait-until.ts";

/**
 * A clock whose timer fires a millisecond early (never before a millisecond has passed), as the
 * platform's does now and then.
 */
function earlyTimers(start: number): WaitClock & { sleeps: number[] } {
  let now = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    sleep: async (ms) => {
      sleeps.push(ms);
      now += ms > 1 ? ms - 1 : ms;
    },
  };
}

describe("waitUntil", () => {
  it("waits again when the timer fired before the time", async () => {
    const clock = earlyTimers(1_000);
    await waitUntil(1_250, clock);
    expect(clock.now()).toBeGreaterThanOrEqual(1_250);
    expect(clock.sleeps).toEqual([250, 1]);
  });

  it("ends at once for a time already past, without a timer", async () => {
    const clock = earlyTimers(1_000);
    await waitUntil(999, clock);
    await waitUntil(1_000, clock);
    expect(clock.sleeps).toEqual([]);
  });

  it("with the real timers, never ends before Date.now() reaches the time (300 short waits)", async () => {
    let early = 0;
    for (let i = 0; i < 300; i++) {
      const at = Date.now() + 1 + (i % 3);
      await waitUntil(at);
      if (Date.now() < at) early++;
    }
    expect(early).toBe(0);
  });
});
