/**
 * @module
 * The memory store's admission and metrics arithmetic, as pure functions over plain state:
 * sliding-window quota buckets ({@link QuotaCheck}), the degradation controller
 * ({@link DegradationPolicy}), histograms and moving averages. The Redis store does the same
 * arithmetic in Lua; both pass the admission and observability contracts.
 */
import type {
  DegradationLevel,
  DegradationPolicy,
  DegradationState,
  Histogram,
  QuotaCheck,
  QuotaState,
  Thresholds,
} from "../port.ts";
import { HISTOGRAM_BOUNDS_MS } from "../port.ts";

// ── quotas ───────────────────────────────────────────────────────────────────

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

// ── degradation ──────────────────────────────────────────────────────────────

/** The controller's state before any evaluation. */
export function initialDegradation(): DegradationState {
  return { level: "normal", since: 0, signals: { queueDepth: 0, lagMs: 0, failureRate: 0 } };
}

/** The signals an evaluation reads from the store; cpu and memory come with the policy. */
export interface StoreSignals {
  queueDepth: number;
  lagMs: number;
  failureRate: number;
}

/**
 * The level the signals point to from `current` (hysteresis, no debounce), as the
 * {@link DegradationPolicy} doc says.
 */
export function targetLevel(
  current: DegradationLevel,
  signals: DegradationState["signals"],
  policy: DegradationPolicy,
): DegradationLevel {
  const pairs: [number, Thresholds][] = [
    [signals.queueDepth, policy.queueDepth],
    [signals.lagMs, policy.lagMs],
    [signals.failureRate, policy.failureRate],
  ];
  if (signals.cpu !== undefined && policy.cpu) pairs.push([signals.cpu, policy.cpu]);
  if (signals.memory !== undefined && policy.memory) pairs.push([signals.memory, policy.memory]);
  if (pairs.some(([v, t]) => v >= t.critical)) return "critical";
  if (current === "normal") return pairs.some(([v, t]) => v >= t.degraded) ? "degraded" : "normal";
  if (pairs.every(([v, t]) => v < t.normal)) return "normal";
  if (current === "critical" && pairs.every(([v, t]) => v < t.degraded)) return "degraded";
  return current;
}

/**
 * One evaluation at `now`: returns the next state and, when the level changed, the change.
 * `state` is not modified.
 */
export function evaluateDegradation(
  state: DegradationState,
  policy: DegradationPolicy,
  measured: StoreSignals,
  now: number,
): { state: DegradationState; changed?: { from: DegradationLevel; to: DegradationLevel } } {
  const signals: DegradationState["signals"] = { ...measured };
  if (policy.local?.cpu !== undefined && policy.cpu) signals.cpu = policy.local.cpu;
  if (policy.local?.memory !== undefined && policy.memory) signals.memory = policy.local.memory;
  const target = targetLevel(state.level, signals, policy);
  if (target === state.level) return { state: { level: state.level, since: state.since, signals } };
  const pending =
    state.pending && state.pending.level === target ? state.pending : { level: target, since: now };
  if (now - pending.since >= policy.debounceMs) {
    return {
      state: { level: target, since: now, signals },
      changed: { from: state.level, to: target },
    };
  }
  return { state: { level: state.level, since: state.since, pending: { ...pending }, signals } };
}

// ── histograms and averages ──────────────────────────────────────────────────

/** An empty histogram over {@link HISTOGRAM_BOUNDS_MS}. */
export function emptyHistogram(): Histogram {
  return {
    bounds: HISTOGRAM_BOUNDS_MS,
    counts: new Array<number>(HISTOGRAM_BOUNDS_MS.length + 1).fill(0),
    sum: 0,
    count: 0,
  };
}

/** Adds one observation (non-cumulative bucket: the first bound `>= value`, else `+Inf`). */
export function observe(histogram: Histogram, value: number): void {
  let i = histogram.bounds.findIndex((bound) => value <= bound);
  if (i < 0) i = histogram.bounds.length;
  histogram.counts[i] = (histogram.counts[i] ?? 0) + 1;
  histogram.sum += value;
  histogram.count += 1;
}

/** The moving-average step of the port: `avg + 0.1 * (x - avg)`. */
export function movingAverage(avg: number, x: number): number {
  return avg + 0.1 * (x - avg);
}
