/**
 * @module
 * Engine settings with their defaults, resolved once.
 */
import type { Logger } from "./logger.ts";
import { jsonLogger } from "./logger.ts";

/** Tick settings. */
export interface TickOptions {
  /** Tick lease time to live; renewed on every chunk. @default 30_000 */
  leaseMs?: number;
  /**
   * Look-ahead: occurrences due within this window are dispatched now with `notBefore = fireAt`.
   * Set it to the period of whatever calls the tick (60 s for a once-a-minute platform cron).
   * @default 60_000
   */
  horizonMs?: number;
  /** Schedules read per chunk. @default 100 */
  chunk?: number;
  /** Occurrences planned per schedule per chunk. @default 1_000 */
  perScheduleLimit?: number;
  /** An occurrence older than `now - misfireGraceMs` counts as missed. @default 120_000 */
  misfireGraceMs?: number;
  /** Misfire `all` replays at most this many missed occurrences. @default 100 */
  catchUpLimit?: number;
  /** Outbox messages not acknowledged after this long are re-published. @default 30_000 */
  recoverGraceMs?: number;
  /** Outbox messages re-published per tick. @default 500 */
  recoverLimit?: number;
  /** Stop taking new chunks after this long. @default 20_000 */
  budgetMs?: number;
  /** Messages per publish call (QStash batch size). @default 100 */
  publishBatch?: number;
}

/** Defaults for jobs whose handler and request say nothing. */
export interface JobDefaults {
  /** @default 60_000 */
  timeoutMs?: number;
  /** @default 3 */
  retries?: number;
  /** @default 5 */
  priority?: number;
}

/** Options shared by the broker, ticker and runner. */
export interface EngineOptions {
  tick?: TickOptions;
  jobs?: JobDefaults;
  /** Added to a job's timeout to form its run lease. @default 5_000 */
  leaseGraceMs?: number;
  logger?: Logger;
}

/** Fully resolved options. */
export interface ResolvedOptions {
  tick: Required<TickOptions>;
  jobs: Required<JobDefaults>;
  leaseGraceMs: number;
  logger: Logger;
}

/** Fill in defaults. */
export function resolveOptions(opts: EngineOptions = {}): ResolvedOptions {
  return {
    tick: {
      leaseMs: 30_000,
      horizonMs: 60_000,
      chunk: 100,
      perScheduleLimit: 1_000,
      misfireGraceMs: 120_000,
      catchUpLimit: 100,
      recoverGraceMs: 30_000,
      recoverLimit: 500,
      budgetMs: 20_000,
      publishBatch: 100,
      ...opts.tick,
    },
    jobs: { timeoutMs: 60_000, retries: 3, priority: 5, ...opts.jobs },
    leaseGraceMs: opts.leaseGraceMs ?? 5_000,
    logger: opts.logger ?? jsonLogger(),
  };
}
