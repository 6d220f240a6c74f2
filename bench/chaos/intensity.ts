/**
 * @module
 * How hard the fault suite hits (the same in `--quick` and full runs; the modes differ in size),
 * and the limits that make a run valid.
 */
import type { PublishFaultKind } from "./qstash-faults.ts";
import type { RedisFaultKind } from "./redis-proxy.ts";

/** Above this event-loop stall of the orchestrator, a run is reported as not valid. */
export const MAX_VALID_LAG_MS = 3_000;
/** Key prefix of the system under test (the ledger has its own). */
export const PREFIX = "chaos";

/** How hard the faults hit (the same in both modes; the modes differ in size). */
export const INTENSITY = {
  /** Mean time between Redis faults (exponential). */
  redisFaultEveryMs: 1_000,
  /** Weights of the Redis fault kinds. */
  redisWeights: { drop: 25, reset: 20, stall: 25, reply_lost: 28, outage: 2 } as Record<
    RedisFaultKind,
    number
  >,
  stallMs: [100, 1_000],
  outageMs: [300, 1_500],
  /** Mean time between SIGKILLs of an app process running handlers. */
  workerKillEveryMs: 10_000,
  /**
   * Streams runs only: mean time between stalls (SIGSTOP … SIGCONT) of an app process running
   * handlers (one at a time), and how long one lasts — always past the run lease (timeout 5 s +
   * grace 5 s), from under `claimIdleMs` (30 s: nobody takes its deliveries over; the late
   * attempt finds its lease lapsed) to over it (another worker takes them over and runs them
   * while it sleeps).
   */
  workerStallEveryMs: 20_000,
  workerStallMs: [11_000, 40_000],
  /** Mean time between SIGKILLs of a tick process. */
  tickerKillEveryMs: 15_000,
  /** Probability that a completed run kills its process before `finishRun`. */
  afterCompletionCrashRate: 0.002,
  /** Probability of each publish fault, per publish request. */
  publishFaults: {
    publish_5xx: 0.03,
    accepted_reported_failed: 0.03,
    publish_timeout_accepted: 0.02,
    publish_timeout_lost: 0.02,
  } as Record<PublishFaultKind, number>,
  /** Probability that a delivery's answer is held past the queue's timeout. */
  deliveryTimeout: 0.01,
  /** Mean time between switches of the double's duplicate and reorder faults. */
  doubleSwitchEveryMs: 2_000,
  /** Share of time the double duplicates every first delivery. */
  duplicateShare: 0.3,
  /** Share of time the double holds first deliveries back a random 0–`reorderMs`. */
  reorderShare: 0.5,
  reorderMs: 500,
  /** A restarted process comes back after this long (a cold start). */
  restartMs: [100, 500],
};
