/**
 * @module
 * Engine settings with their defaults, resolved once.
 */

import { MAX_TIMER_MS } from "../core/duration.ts";
import { type NodeIdentity, nodeIdentityProblem } from "../core/placement.ts";
import { MAX_DELAY_MS, MAX_TIMEOUT_MS, MIN_TIMEOUT_MS } from "../core/schemas.ts";
import {
  type Admission,
  DEFAULT_REAP_AFTER_MS,
  type DegradationPolicy,
  type Thresholds,
} from "../store/port.ts";
import { OCCURRENCE_ALLOWANCE_BYTES } from "./admission.ts";
import type { Logger } from "./logger.ts";
import { jsonLogger } from "./logger.ts";

/**
 * Largest job or schedule input by default (as JSON, in UTF-8 bytes): 960 KiB, QStash's 1 MB
 * message limit less room for the rest of the message (the job's id, handler, tags,
 * idempotency key: a few KiB at most).
 */
export const DEFAULT_MAX_INPUT_BYTES = 960 * 1024;

/** Tick settings. */
export interface TickOptions {
  /** Tick lease time to live; renewed on every chunk. @default 30_000 */
  leaseMs?: number | undefined;
  /**
   * Look-ahead: occurrences due within this window are dispatched now with `notBefore = fireAt`.
   * Set it a little beyond the period of whatever calls the tick — {@link lookAheadFor} of that
   * period — so an occurrence due exactly one period ahead is dispatched ahead too, not by the
   * next tick once it is already due (a tick, and a platform's cron, can run late).
   * @default 65_000 (`lookAheadFor(60_000)`: a once-a-minute platform cron)
   */
  horizonMs?: number | undefined;
  /** Schedules read per chunk. @default 100 */
  chunk?: number | undefined;
  /**
   * Occurrences planned per schedule per chunk. A schedule with more occurrences than this inside
   * the look-ahead gets this many in a tick and the rest in later ticks, so keep it above what
   * your densest schedule has in one look-ahead (a `1s` schedule: 65 on a once-a-minute cron).
   * @default 1_000
   */
  perScheduleLimit?: number | undefined;
  /** An occurrence older than `now - misfireGraceMs` counts as missed. @default 120_000 */
  misfireGraceMs?: number | undefined;
  /** Misfire `all` replays at most this many missed occurrences. @default 100 */
  catchUpLimit?: number | undefined;
  /** Outbox messages not acknowledged after this long are re-published. @default 30_000 */
  recoverGraceMs?: number | undefined;
  /** Outbox messages re-published per tick. @default 500 */
  recoverLimit?: number | undefined;
  /** Stop taking new chunks after this long. @default 20_000 */
  budgetMs?: number | undefined;
  /** Messages per publish call (QStash batch size). @default 100 */
  publishBatch?: number | undefined;
  /**
   * Most bytes of occurrence messages in one commit request (a chunk's commit is split, and a
   * schedule with a large input plans fewer occurrences per chunk), under the request size
   * limits of Redis REST services. @default 4_000_000
   */
  maxCommitBytes?: number | undefined;
}

/** Defaults for jobs whose handler and request say nothing. */
export interface JobDefaults {
  /** From 1_000 to 900_000 (1 s – 15 min, as a request's `timeout`). @default 60_000 */
  timeoutMs?: number | undefined;
  /** @default 3 */
  retries?: number | undefined;
  /** @default 5 */
  priority?: number | undefined;
}

/**
 * The degradation controller (docs/architecture.md, "Admission control"). Thresholds: enter a
 * level at or above it, return to normal only below `normal` (hysteresis); a change must hold for
 * `debounceMs`.
 */
export interface DegradationOptions {
  /** Due jobs not started. @default { normal: 50, degraded: 100, critical: 500 } */
  queueDepth?: Thresholds | undefined;
  /** Dispatch lag moving average. @default { normal: 10_000, degraded: 30_000, critical: 300_000 } */
  lagMs?: Thresholds | undefined;
  /**
   * Failure moving average (0–1). One broken handler should slow intake, not stop it, so by
   * default it can reach `degraded` only. @default { normal: 0.25, degraded: 0.5, critical: Infinity }
   */
  failureRate?: Thresholds | undefined;
  /** CPU percent, where the runtime exposes it. @default { normal: 50, degraded: 70, critical: 90 } */
  cpu?: Thresholds | undefined;
  /** Memory percent, where the runtime exposes it. @default { normal: 60, degraded: 75, critical: 90 } */
  memory?: Thresholds | undefined;
  /** @default 30_000 */
  debounceMs?: number | undefined;
  /** Added to a submit's run time while degraded. @default 1_000 */
  degradedDelayMs?: number | undefined;
  /** What a submit gets while critical. @default "reject" (503 + Retry-After) */
  critical?: "reject" | "delay" | undefined;
  /** Added to a submit's run time while critical with `critical: "delay"`. @default 5_000 */
  criticalDelayMs?: number | undefined;
  /** `Retry-After` of a critical rejection. @default 30_000 */
  retryAfterMs?: number | undefined;
  /**
   * A submit re-evaluates the controller only when the last evaluation (a submit's, the tick's or
   * `stats`') is older than this, and otherwise acts on the stored level: evaluating reads the
   * backlog and the averages and writes the state, about half a submit's Redis time. `0`:
   * every submit evaluates. Changes still need `debounceMs` to hold; this adds at most its own
   * length to how soon a submit sees them. @default 1_000
   */
  evaluateEveryMs?: number | undefined;
}

/** Options shared by the broker, ticker and runner. */
export interface EngineOptions {
  tick?: TickOptions | undefined;
  jobs?: JobDefaults | undefined;
  /** The degradation controller; `false` turns it off. @default on, with the defaults above */
  degradation?: DegradationOptions | false | undefined;
  /**
   * This instance's name in leader metrics, events and the node registry; a job's placement
   * `nodes` and `notNodes` name it (docs/adr/0017-placement.md). @default a random id
   */
  instanceId?: string | undefined;
  /**
   * The worker group this instance runs: only jobs placed in it (`placement.group`), none of the
   * default group's. @default none (the default group)
   */
  group?: string | undefined;
  /** Capabilities a job's `placement.capabilities` is matched against. @default none */
  capabilities?: Readonly<Record<string, string>> | undefined;
  /** Added to a job's timeout to form its run lease. @default 5_000 */
  leaseGraceMs?: number | undefined;
  /**
   * While a handler runs, how often the runner asks the store whether the job was cancelled (one
   * cheap read, `src/engine/attempt.ts`), counted from the last store answer it had (a progress
   * or log call also answers it). A cancel of a running job is seen within this. `0`: never poll
   * (a cancel is then seen only by a progress or log call, or at the attempt's end). At most
   * 2147483647 (a timer's longest delay).
   * @default 1_000
   */
  cancelCheckMs?: number | undefined;
  /**
   * The reaper: a started job that saw no delivery for this long after its run lease ended (or
   * after a failed attempt) — the queue gave up and its failure callback never arrived — is
   * re-dispatched by the tick (at most `maxReaps` times), or dead-lettered if its retries are
   * spent. Keep it
   * above the queue's longest retry backoff: QStash's default is `min(1 day, e^(2.5 n))` s (12 s,
   * 2.5 min, 30 min, 6 h, then a day), so 1 h covers `retries` ≤ 3; with more retries, set
   * 25 h. A reap while the queue still holds the job's next retry runs that retry early, on a
   * second delivery chain (more attempts than `retries`, never a second success). At least
   * `tick.recoverGraceMs`. @default 3_600_000
   */
  reapAfterMs?: number | undefined;
  /**
   * A watch re-dispatched this many times without its job making progress (a queue that never
   * reaches the worker: wrong signing keys, a dead route) is dead-lettered instead of re-sent
   * again. With the default `reapAfterMs`, a day. @default 24
   */
  maxReaps?: number | undefined;
  logger?: Logger | undefined;
  /**
   * Largest job or schedule input, as JSON in UTF-8 bytes (413 `input_too_large` above it), for
   * submits and schedule creates, replaces and patches. A tenant manifest's `maxInputBytes` still
   * applies when it is lower. A positive integer, or `Infinity` for no limit of the engine's own
   * (the HTTP body limit still bounds requests). @default 983_040 (960 KiB)
   */
  maxInputBytes?: number | undefined;
  /**
   * Largest job as its transport's message, the spec as UTF-8 JSON (input, tags, placement,
   * `after`, trace…), for submits (413 `input_too_large` above it) and schedule creates, replaces
   * and patches (413 when the schedule's definition and 2,048 bytes for what an occurrence adds
   * are over it). A transport whose messages are
   * bounded needs it: `createTickwork` on Cloudflare Queues sets 127,900 (a message holds 128 KB,
   * about 100 bytes of them metadata). A positive integer, or `Infinity`. @default Infinity
   */
  maxJobBytes?: number | undefined;
  /**
   * CPU and memory use of this process in percent, for the degradation controller, where the
   * runtime exposes them (the Node adapter passes one; Workers have none). Called on every submit:
   * keep it cheap (sample in the background, return the last sample).
   */
  localSignals?: () => { cpu?: number; memory?: number } | undefined;
}

/** Every option of `T` present and defined. */
type Resolved<T> = { [K in keyof T]-?: Exclude<T[K], undefined> };

/** Fully resolved options. */
export interface ResolvedOptions {
  tick: Resolved<TickOptions>;
  jobs: Resolved<JobDefaults>;
  /** Undefined when turned off. */
  degradation: NonNullable<Admission["degradation"]> | undefined;
  instanceId: string;
  /** This instance as placement sees it: `instanceId`, `group`, `capabilities`. */
  node: NodeIdentity;
  leaseGraceMs: number;
  cancelCheckMs: number;
  reapAfterMs: number;
  maxReaps: number;
  maxInputBytes: number;
  maxJobBytes: number;
  logger: Logger;
  localSignals: (() => { cpu?: number; memory?: number } | undefined) | undefined;
}

/** Fill in defaults; throws `RangeError` naming the first option out of range. */
export function resolveOptions(opts: EngineOptions = {}): ResolvedOptions {
  const resolved = withDefaults(opts);
  validate(resolved);
  return resolved;
}

/** `options` without its `undefined` values, so spreading it over defaults keeps them. */
function defined<T extends object>(options: T | undefined): Partial<Resolved<T>> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options ?? {}))
    if (value !== undefined) out[key] = value;
  return out as Partial<Resolved<T>>;
}

/**
 * The tick look-ahead for a tick called every `periodMs`: the period and a margin of the same
 * again, at most 5 s (1 s → 2 s, 60 s → 65 s). With the look-ahead exactly the period, an
 * occurrence one period ahead fell just outside it and ran late by however late the next tick was.
 *
 * @example
 * createEngine({ store, transport, handlers, tick: { horizonMs: lookAheadFor(60_000) } });
 */
export function lookAheadFor(periodMs: number): number {
  return periodMs + Math.min(periodMs, 5_000);
}

function withDefaults(opts: EngineOptions): ResolvedOptions {
  const instanceId = opts.instanceId ?? `tw-${crypto.randomUUID().slice(0, 8)}`;
  return {
    tick: {
      leaseMs: 30_000,
      horizonMs: lookAheadFor(60_000),
      chunk: 100,
      perScheduleLimit: 1_000,
      misfireGraceMs: 120_000,
      catchUpLimit: 100,
      recoverGraceMs: 30_000,
      recoverLimit: 500,
      budgetMs: 20_000,
      publishBatch: 100,
      maxCommitBytes: 4_000_000,
      ...defined(opts.tick),
    },
    jobs: { timeoutMs: 60_000, retries: 3, priority: 5, ...defined(opts.jobs) },
    degradation: opts.degradation === false ? undefined : resolveDegradation(opts.degradation),
    instanceId,
    node: {
      id: instanceId,
      ...(opts.group ? { group: opts.group } : {}),
      ...(opts.capabilities ? { capabilities: opts.capabilities } : {}),
    },
    leaseGraceMs: opts.leaseGraceMs ?? 5_000,
    cancelCheckMs: opts.cancelCheckMs ?? 1_000,
    reapAfterMs: opts.reapAfterMs ?? DEFAULT_REAP_AFTER_MS,
    maxReaps: opts.maxReaps ?? 24,
    maxInputBytes: opts.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES,
    maxJobBytes: opts.maxJobBytes ?? Number.POSITIVE_INFINITY,
    logger: opts.logger ?? jsonLogger(),
    localSignals: opts.localSignals,
  };
}

function resolveDegradation(
  o: DegradationOptions = {},
): NonNullable<Admission["degradation"]> & DegradationPolicy {
  return {
    queueDepth: o.queueDepth ?? { normal: 50, degraded: 100, critical: 500 },
    lagMs: o.lagMs ?? { normal: 10_000, degraded: 30_000, critical: 300_000 },
    failureRate: o.failureRate ?? {
      normal: 0.25,
      degraded: 0.5,
      critical: Number.POSITIVE_INFINITY,
    },
    cpu: o.cpu ?? { normal: 50, degraded: 70, critical: 90 },
    memory: o.memory ?? { normal: 60, degraded: 75, critical: 90 },
    debounceMs: o.debounceMs ?? 30_000,
    degradedDelayMs: o.degradedDelayMs ?? 1_000,
    critical: o.critical ?? "reject",
    criticalDelayMs: o.criticalDelayMs ?? 5_000,
    retryAfterMs: o.retryAfterMs ?? 30_000,
    evaluateEveryMs: o.evaluateEveryMs ?? 1_000,
  };
}

/** Integer options that must be ≥ 1, and those that may be 0. */
const AT_LEAST_ONE = [
  "leaseMs",
  "chunk",
  "perScheduleLimit",
  "recoverLimit",
  "publishBatch",
  "maxCommitBytes",
] as const;
const AT_LEAST_ZERO = [
  "horizonMs",
  "misfireGraceMs",
  "catchUpLimit",
  "recoverGraceMs",
  "budgetMs",
] as const;

function validate(o: ResolvedOptions): void {
  const check = (name: string, value: number, min: number, max = Number.MAX_SAFE_INTEGER) => {
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new RangeError(`${name} must be an integer from ${min} to ${max}, got ${value}`);
    }
  };
  for (const key of AT_LEAST_ONE) check(`tick.${key}`, o.tick[key], 1);
  for (const key of AT_LEAST_ZERO) check(`tick.${key}`, o.tick[key], 0);
  check("jobs.timeoutMs", o.jobs.timeoutMs, MIN_TIMEOUT_MS, MAX_TIMEOUT_MS);
  check("jobs.retries", o.jobs.retries, 0);
  check("jobs.priority", o.jobs.priority, 1, 10);
  check("leaseGraceMs", o.leaseGraceMs, 0);
  // A timer's delay: past Node's limit the poll would run every millisecond.
  check("cancelCheckMs", o.cancelCheckMs, 0, MAX_TIMER_MS);
  // Below the recover grace, an accepted message would be re-published on every tick.
  check("reapAfterMs", o.reapAfterMs, Math.max(1, o.tick.recoverGraceMs));
  check("maxReaps", o.maxReaps, 1);
  if (o.maxInputBytes !== Number.POSITIVE_INFINITY) check("maxInputBytes", o.maxInputBytes, 1);
  // Below the allowance no schedule would fit.
  if (o.maxJobBytes !== Number.POSITIVE_INFINITY)
    check("maxJobBytes", o.maxJobBytes, OCCURRENCE_ALLOWANCE_BYTES + 1);
  const nodeProblem = nodeIdentityProblem(o.node);
  if (nodeProblem) throw new RangeError(nodeProblem);
  const d = o.degradation;
  if (!d) return;
  check("degradation.debounceMs", d.debounceMs, 0);
  // A delay no longer than a submit's own `delay` may be: past it a job's runAt could leave the
  // years the API writes (a delay of 2^53 ms put runAt in year 275760).
  check("degradation.degradedDelayMs", d.degradedDelayMs, 0, MAX_DELAY_MS);
  check("degradation.criticalDelayMs", d.criticalDelayMs, 0, MAX_DELAY_MS);
  check("degradation.retryAfterMs", d.retryAfterMs, 0, MAX_DELAY_MS);
  check("degradation.evaluateEveryMs", d.evaluateEveryMs ?? 0, 0);
  const signals = {
    queueDepth: d.queueDepth,
    lagMs: d.lagMs,
    failureRate: d.failureRate,
    cpu: d.cpu,
    memory: d.memory,
  };
  for (const [name, t] of Object.entries(signals)) {
    if (t && !(t.normal >= 0 && t.normal <= t.degraded && t.degraded <= t.critical)) {
      throw new RangeError(
        `degradation.${name} needs 0 <= normal <= degraded <= critical, got ${JSON.stringify(t)}`,
      );
    }
  }
}
