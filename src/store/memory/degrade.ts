/**
 * @module
 * The memory store's degradation controller ({@link DegradationPolicy}), as include "degrade"
 * runs it on Redis: the target level from the signals (with hysteresis), then the debounce. Pure
 * functions over the state, plus the evaluation on the store's own signals (the due backlog and
 * the moving averages), which writes a `degradation.changed` event when the level changes.
 */
import type { DegradationLevel, DegradationPolicy, DegradationState, Thresholds } from "../port.ts";
import type { MemoryState } from "./state.ts";

/** The controller's state before any evaluation. */
export function initialDegradation(): DegradationState {
  return { level: "normal", since: 0, signals: { queueDepth: 0, lagMs: 0, failureRate: 0 } };
}

/** The signals an evaluation reads from the store; cpu and memory come with the policy. */
export interface StoreSignals {
  queueDepth: number;
  lagMs: number;
  failureRate: number;
  /** Jobs running now (not a signal: with `queueDepth` 0, none means the averages cannot move). */
  running?: number;
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
  // With nothing due or running the averages cannot move (no job starts or finishes): judged 0
  // (DegradationPolicy).
  const { queueDepth, lagMs, failureRate } = measured;
  const idle = queueDepth === 0 && (measured.running ?? 0) <= 0;
  const signals: DegradationState["signals"] = idle
    ? { queueDepth: 0, lagMs: 0, failureRate: 0 }
    : { queueDepth, lagMs, failureRate };
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

/**
 * The level a submit acts on: the stored one while the last evaluation is younger than
 * `evaluateEveryMs`, else a new evaluation's.
 */
export function levelForSubmit(
  s: MemoryState,
  policy: DegradationPolicy & { evaluateEveryMs?: number },
  now: number,
): DegradationLevel {
  const every = policy.evaluateEveryMs ?? 0;
  if (every > 0 && now - s.degradationEvaluatedAt < every) return s.degradation.level;
  return evaluate(s, policy, now);
}

/** Evaluates the controller at `now` on the store's signals; returns the level after it. */
export function evaluate(s: MemoryState, policy: DegradationPolicy, now: number): DegradationLevel {
  const { state, changed } = evaluateDegradation(
    s.degradation,
    policy,
    {
      queueDepth: s.metrics.backlog(now),
      lagMs: s.metrics.averages.lagMs,
      failureRate: s.metrics.averages.failureRate,
      running: s.metrics.gauges.running,
    },
    now,
  );
  s.degradation = state;
  s.degradationEvaluatedAt = now;
  if (changed) s.events.emit(now, { type: "degradation.changed", ...changed });
  return state.level;
}
