/**
 * @module
 * The memory store's rate limits, as `beginRun-7.lua` keeps them on Redis: one window per rate
 * key holding the start times of the runs that began in the last `periodMs`, a start dropped once
 * it is `periodMs` old, a run admitted only while fewer than `limit` starts are in the window, the
 * window gone `periodMs` after its newest start.
 */
import { LIMITED_MIN_RETRY_MS, type RateLimit } from "../port.ts";
import type { MemoryState } from "./state.ts";

/**
 * Whether a run may begin under `rate` now: `undefined` if it may (fewer than `rate.limit` starts
 * in the window), else the wait until enough starts have left the window for one more (at least
 * {@link LIMITED_MIN_RETRY_MS}). Starts that left the window are dropped first.
 */
export function rateLimitedFor(s: MemoryState, rate: RateLimit, now: number): number | undefined {
  const window = s.rates.get(rate.key);
  if (!window) return undefined;
  const from = now - rate.periodMs;
  let old = 0;
  while (old < window.starts.length && (window.starts[old] as number) <= from) old++;
  if (old > 0) window.starts.splice(0, old);
  if (window.starts.length === 0) {
    s.rates.delete(rate.key);
    return undefined;
  }
  if (window.starts.length < rate.limit) return undefined;
  // The start whose leaving brings the window below the limit (the oldest, at exactly `limit`).
  const leaving = window.starts[window.starts.length - rate.limit] as number;
  return Math.max(LIMITED_MIN_RETRY_MS, leaving + rate.periodMs - now);
}

/** A run begins under `rate` at `now`: its start is counted in the window. */
export function countStart(s: MemoryState, rate: RateLimit, now: number): void {
  const window = s.rates.get(rate.key) ?? { starts: [], expiresAt: 0 };
  window.starts.push(now);
  // Ascending, as the window's trimming needs (an injected clock may step back).
  const n = window.starts.length;
  if (n > 1 && (window.starts[n - 2] as number) > now) window.starts.sort((a, b) => a - b);
  window.expiresAt = now + rate.periodMs;
  s.rates.set(rate.key, window);
  s.expiresAt(window.expiresAt);
}
