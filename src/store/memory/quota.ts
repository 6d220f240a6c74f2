/**
 * @module
 * The memory store's sliding-window quotas ({@link QuotaCheck}), as include "quota" keeps them on
 * Redis: each window counts writes in 60 buckets; a check counts the write only when every window
 * admits it. Pure arithmetic over plain counters, plus the table of counters by quota key (which
 * expire after the longest window). The Redis store does the same arithmetic in Lua; both pass
 * the admission contract.
 */
import type { QuotaCheck, QuotaState } from "../port.ts";
import type { MemoryState } from "./state.ts";

/** One window's buckets: bucket start (ms) → writes counted in it. */
export type Buckets = Map<number, number>;

/** The counters of one quota key: `windowMs` → its buckets. */
export type QuotaCounters = Map<number, Buckets>;

/** Outcome of {@link checkQuota}. */
export type QuotaVerdict =
  | { admitted: true; state: QuotaState }
  | { admitted: false; state: QuotaState };

/** A window's bucket width: `windowMs / 60` rounded down, at least 1 ms. */
export function bucketMs(windowMs: number): number {
  return Math.max(1, Math.floor(windowMs / 60));
}

/** The buckets of `buckets` still counted at `now` (start `> now - windowMs`), oldest first. */
function counted(buckets: Buckets | undefined, windowMs: number, now: number): [number, number][] {
  if (!buckets) return [];
  return [...buckets]
    .filter(([start, n]) => start > now - windowMs && n > 0)
    .sort((a, b) => a[0] - b[0]);
}

/**
 * Checks `check` against `counters` at `now` and, when every window admits, counts the write
 * (mutating `counters`). Buckets that left their window are dropped on the way.
 *
 * @example
 * const counters: QuotaCounters = new Map();
 * checkQuota(counters, { key: "submit:acme", windows: [{ windowMs: 60_000, limit: 5 }] }, now);
 */
export function checkQuota(counters: QuotaCounters, check: QuotaCheck, now: number): QuotaVerdict {
  const views = check.windows.map((w) => {
    const buckets = counters.get(w.windowMs);
    if (buckets) {
      for (const start of buckets.keys()) if (start <= now - w.windowMs) buckets.delete(start);
    }
    const live = counted(buckets, w.windowMs, now);
    const count = live.reduce((sum, [, n]) => sum + n, 0);
    return { ...w, live, count };
  });

  const denying = views.filter((v) => v.count >= v.limit);
  if (denying.length > 0) {
    let best: QuotaState | undefined;
    for (const v of denying) {
      // The bucket whose leaving (oldest first) brings the count below the limit.
      let left = v.count;
      let resetMs = v.windowMs;
      for (const [start, n] of v.live) {
        left -= n;
        if (left < v.limit) {
          resetMs = start + v.windowMs - now;
          break;
        }
      }
      const state: QuotaState = { limit: v.limit, remaining: 0, windowMs: v.windowMs, resetMs };
      if (
        !best ||
        state.resetMs > best.resetMs ||
        (state.resetMs === best.resetMs && state.windowMs > best.windowMs)
      ) {
        best = state;
      }
    }
    return { admitted: false, state: best as QuotaState };
  }

  const counters_ = new Set<number>();
  let best: QuotaState | undefined;
  for (const v of views) {
    const current = Math.floor(now / bucketMs(v.windowMs)) * bucketMs(v.windowMs);
    if (!counters_.has(v.windowMs)) {
      counters_.add(v.windowMs);
      let buckets = counters.get(v.windowMs);
      if (!buckets) {
        buckets = new Map();
        counters.set(v.windowMs, buckets);
      }
      buckets.set(current, (buckets.get(current) ?? 0) + 1);
    }
    const oldest = Math.min(current, v.live[0]?.[0] ?? current);
    const state: QuotaState = {
      limit: v.limit,
      remaining: v.limit - v.count - 1,
      windowMs: v.windowMs,
      resetMs: oldest + v.windowMs - now,
    };
    if (
      !best ||
      state.remaining < best.remaining ||
      (state.remaining === best.remaining && state.windowMs < best.windowMs)
    ) {
      best = state;
    }
  }
  return { admitted: true, state: best as QuotaState };
}

/**
 * Checks and (when admitted) counts `check` in the store's quota table; `undefined` without a
 * check. Admitted counters expire after the longest window of the check.
 */
export function quota(
  s: MemoryState,
  check: QuotaCheck | undefined,
  now: number,
): QuotaVerdict | undefined {
  if (!check) return undefined;
  const stored = s.quotas.get(check.key);
  const counters: QuotaCounters = stored?.counters ?? new Map();
  const verdict = checkQuota(counters, check, now);
  if (verdict.admitted) {
    const expiresAt = now + Math.max(...check.windows.map((w) => w.windowMs));
    s.quotas.set(check.key, {
      counters,
      expiresAt: Math.max(expiresAt, stored?.expiresAt ?? 0),
    });
    s.expiresAt(expiresAt);
  }
  return verdict;
}
