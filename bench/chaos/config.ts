/**
 * @module
 * What the orchestrator and its child processes share: the child's configuration, the engine and
 * transport settings every process uses, and the deterministic helpers the handler and the
 * expected-set computation agree on.
 */
import type { EngineOptions } from "../../src/index.ts";
import type { QStashTransportOptions } from "../../src/transport/qstash/index.ts";

/**
 * How jobs travel in a run: through the QStash double (push: deliveries over HTTP to the app
 * processes, the default), or on Redis Streams (pull: each app process runs a `PullWorker`, as
 * `tickwork start` does with `REDIS_URL` and no QStash).
 */
export type ChaosTransport = "qstash" | "streams";

/** Passed to a child in the `CHAOS_CHILD` environment variable (JSON). */
export interface ChildConfig {
  role: "app" | "tick";
  transport: ChaosTransport;
  slot: number;
  /** How many times this slot was (re)started before. */
  generation: number;
  /** Redis through the fault proxy (the system under test). */
  redisUrl: string;
  /** Redis directly (the ledger). */
  ledgerUrl: string;
  prefix: string;
  qstash: { url: string; token: string; currentSigningKey: string; nextSigningKey: string };
  /** The balancer's URL: where QStash delivers and the signature's `sub`. */
  publicUrl: string;
  /** Probability that a completed run kills its process before `finishRun`. */
  afterCompletionCrashRate: number;
  seed: number;
  tickEveryMs: number;
}

/** A threshold no signal reaches: the degradation controller runs but never changes level. */
const NEVER = { normal: 1e12, degraded: 1e12, critical: 1e12 };

/**
 * Engine settings of every process. Production defaults except:
 * - `tick.leaseMs` 5 s (30 s), so a killed ticker holds the lease briefly;
 * - `tick.horizonMs` 2 s, for a 500 ms tick timer (occurrences are published ahead with not-before);
 * - `tick.recoverGraceMs` 10 s (30 s), so the drain after the faults is shorter;
 * - `reapAfterMs` 20 s (1 h): the reaper's wait, shortened as the double shortens QStash's
 *   failure-callback backoff (it must outlast the queue's retries to mean "the queue gave up");
 * - `degradation` with thresholds nothing reaches: the suite pushes a deliberate backlog (hundreds
 *   of due runs a second while deliveries fail), and a `critical` level would reject submits and
 *   hold schedules by design, which is not what this suite measures. The controller's evaluation
 *   still runs inside every submit and leader tick.
 */
export const ENGINE_OPTIONS: EngineOptions = {
  tick: { leaseMs: 5_000, horizonMs: 2_000, recoverGraceMs: 10_000 },
  reapAfterMs: 20_000,
  degradation: { queueDepth: NEVER, lagMs: NEVER, failureRate: NEVER, cpu: NEVER, memory: NEVER },
};

/** Handler timeout: deliveries time out at the queue after this plus `responseGraceMs`. */
export const HANDLER_TIMEOUT_MS = 5_000;

/** A run's lease: the handler timeout plus the engine's `leaseGraceMs` (default 5 s). */
export const RUN_LEASE_MS = HANDLER_TIMEOUT_MS + 5_000;

/**
 * Streams: deliveries each app process's `PullWorker` runs at once — 3 × 16, the QStash runs'
 * flow-control parallelism of 48. `RedisStreams` keeps its production defaults (`claimIdleMs`
 * 30 s, `maintainEveryMs` 5 s), as `tickwork start` has no setting for them.
 */
export const STREAMS_CONCURRENCY = 16;

/** QStash transport settings (besides URLs and keys). */
export const TRANSPORT_OPTIONS: Pick<
  QStashTransportOptions,
  "retryDelay" | "responseGraceMs" | "publishTimeoutMs" | "flowControl"
> = {
  // At most 48 deliveries in flight to the workers, as a deployment protects its functions: a
  // storm of retries waits at the queue instead of piling onto three processes.
  flowControl: { work: { parallelism: 48 } },
  // QStash's default backoff (12 s, 2.5 min, …) made short; `Retry-After` (a busy job's run lease)
  // still wins, as at QStash.
  retryDelay: "250 * pow(2, retried)",
  responseGraceMs: 1_000,
  publishTimeoutMs: 5_000,
};

/** The queue's delivery timeout: `Upstash-Timeout`, whole seconds rounded up. */
export const DELIVERY_TIMEOUT_MS =
  Math.ceil((HANDLER_TIMEOUT_MS + (TRANSPORT_OPTIONS.responseGraceMs ?? 0)) / 1000) * 1000;

/** FNV-1a, for per-job decisions both sides can recompute. */
export function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** How long the handler works on a run: 20–219 ms. */
export function handlerMs(jobId: string, attempt: number): number {
  return 20 + (hash(`${jobId}#${attempt}`) % 200);
}

/** One run in ten fails its first attempt (a transient error: retried by the queue). */
export function transientFailure(jobId: string, attempt: number): boolean {
  return attempt === 1 && hash(jobId) % 10 === 0;
}
