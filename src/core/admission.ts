/**
 * @module
 * Admission control in the domain's terms: quotas counted in sliding windows, the degradation
 * controller's levels and thresholds, and why a write was refused. Pure types; the stores
 * implement them (checked and counted inside the write they guard) and the broker asks for them.
 */

/** One sliding window of a quota: at most `limit` (≥ 1) writes in any `windowMs`. */
export interface QuotaWindow {
  windowMs: number;
  limit: number;
}

/**
 * A quota checked and counted inside the write that it guards (same script, same round trip).
 * `key` names the counter, e.g. `"submit:acme"`; windows are checked together (all must admit).
 *
 * Counting: each window is split into 60 buckets of `windowMs / 60` (rounded down, at least 1 ms);
 * a write falls in the bucket `floor(now / bucketMs)`. The count of a window is the sum of the
 * buckets whose start is `> now - windowMs` (the bucket holding `now - windowMs` has left it:
 * the window slides in bucket steps and never admits more than `limit` in any `windowMs` span
 * measured on bucket boundaries). A write is admitted when every window's count is `< limit`;
 * it then adds 1 to the current bucket of every window. Buckets older than the longest window are
 * dropped; the counter expires after the longest window.
 * A window's buckets are identified by (`key`, `windowMs`): changing a `limit` keeps the counts;
 * two windows of one check with the same `windowMs` share one counter (counted once).
 *
 * @example
 * // windowMs 60_000 → bucketMs 1_000; limit 5. Writes at 10_500 ×5 fill bucket 10_000.
 * // At 69_999 the count is still 5 (bucket 10_000 > 69_999 - 60_000): denied, resetMs 1.
 * // At 70_000 bucket 10_000 has left the window: count 0, admitted.
 */
export interface QuotaCheck {
  key: string;
  windows: QuotaWindow[];
}

/**
 * Where a quota stands, for the `RateLimit` and `Retry-After` headers. A bucket starting at `b`
 * counts until `b + windowMs`.
 * Admitted: the window with the fewest writes left after this one (`remaining = limit - count - 1`,
 * this write included; ties: the shortest window); `resetMs` = `b + windowMs - now` for its oldest
 * counted bucket `b` (this write's bucket included, so never 0).
 * Denied: of the windows that deny, the one with the largest `resetMs` = the smallest `d > 0`
 * such that at `now + d` its count is `< limit` (the `Retry-After`), i.e. `b + windowMs - now`
 * for the bucket `b` whose leaving (oldest first) brings the count below `limit`; `remaining` is 0
 * (ties: the longest window). The HTTP layer sends `Retry-After: ceil(resetMs / 1000)`.
 */
export interface QuotaState {
  limit: number;
  remaining: number;
  windowMs: number;
  resetMs: number;
}

export type DegradationLevel = "normal" | "degraded" | "critical";

/**
 * Enter a level at or above its threshold; leave back to normal only below `normal` (hysteresis).
 * `Infinity` means never (stores must keep it through their encoding, e.g. JSON `null` → never).
 */
export interface Thresholds {
  normal: number;
  degraded: number;
  critical: number;
}

/**
 * The degradation controller's settings, passed by the caller to every operation that evaluates
 * it (`submitJob`, `beginTick` when leader, `stats`). The state lives in the store and is shared.
 *
 * Signals: `queueDepth` = the store's backlog (`StoreStats.backlog`) (due jobs not started: delayed jobs do not
 * count until their run time);
 * `lagMs` = the dispatch-lag moving average; `failureRate` = the failure moving average (0–1);
 * both are judged 0 while `queueDepth` is 0 and no job runs: they move only when jobs start and
 * finish, so then they would hold the level they raised for ever (a critical level refuses the
 * submits that would move them);
 * `cpu`/`memory` = percentages the caller measured locally (optional: a signal takes part only
 * when both `local.<signal>` and its thresholds are given).
 * Target level from the current one: any signal ≥ its `critical` → critical; else, from normal,
 * any ≥ `degraded` → degraded; from degraded or critical, every signal < its `normal` → normal,
 * from critical, every signal < its `degraded` → degraded; otherwise stay.
 * Debounce, at evaluation time `now` with target `T`:
 * - `T` = the current level → the pending one (if any) is cleared;
 * - else if there is no pending, or its level differs from `T` → pending = `{ level: T, since: now }`;
 * - then, if pending.level = `T` and `now - pending.since >= debounceMs` → level = `T`,
 *   `since = now`, pending cleared, and a `degradation.changed` event `{ from, to }` is written.
 *   (So `debounceMs: 0` changes at once; otherwise a later evaluation must confirm it.)
 * Every evaluation stores its signals in `DegradationState.signals`. Levels may jump
 * (normal → critical) in one change.
 */
export interface DegradationPolicy {
  queueDepth: Thresholds;
  lagMs: Thresholds;
  failureRate: Thresholds;
  cpu?: Thresholds;
  memory?: Thresholds;
  debounceMs: number;
  /** Locally measured signals (percent), when the runtime exposes them. */
  local?: { cpu?: number; memory?: number };
}

/** The shared degradation state. */
export interface DegradationState {
  level: DegradationLevel;
  /** When the current level was entered (0 = never changed). */
  since: number;
  /** A different target seen and not yet confirmed by the debounce. */
  pending?: { level: DegradationLevel; since: number };
  /** The signals of the last evaluation. */
  signals: {
    queueDepth: number;
    lagMs: number;
    failureRate: number;
    cpu?: number;
    memory?: number;
  };
}

/** What a submit or schedule write should do about admission control. */
export interface Admission {
  quota?: QuotaCheck;
  /** Evaluate the controller (submit only), then: degraded → `runAt += degradedDelayMs`;
   * critical → `reject` (denied, nothing written) or `runAt += criticalDelayMs`. */
  degradation?: DegradationPolicy & {
    degradedDelayMs: number;
    critical: "reject" | "delay";
    criticalDelayMs: number;
    /** Retry-After of a critical rejection. */
    retryAfterMs: number;
    /**
     * A submit re-evaluates the controller only when its last evaluation (by any operation) is
     * older than this (ms); otherwise it acts on the stored level. `0` or absent: every submit
     * evaluates. The tick and `stats` always evaluate.
     */
    evaluateEveryMs?: number;
  };
}

/** Why a write was refused by admission control (nothing was written, nothing counted). */
export type Denied =
  | { kind: "quota"; quota: QuotaState }
  | { kind: "overloaded"; level: "critical"; retryAfterMs: number };
