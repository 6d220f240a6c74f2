/**
 * @module
 * The engine: broker, ticker and runner composed from a store, a transport and handlers.
 */
import type { DegradationState } from "../core/admission.ts";
import type { Store, StoreStats } from "../store/port.ts";
import type { QueueStats, Transport } from "../transport/port.ts";
import { Broker } from "./broker.ts";
import { type Handlers, validateHandlers } from "./handlers.ts";
import { type EngineOptions, type ResolvedOptions, resolveOptions } from "./options.ts";
import { Runner } from "./runner.ts";
import { Ticker } from "./ticker.ts";

/** What {@link createEngine} needs. */
export interface EngineConfig<H extends Handlers = Handlers> extends EngineOptions {
  store: Store;
  transport: Transport;
  /** The handlers: a map made with `defineHandlers` also types `broker.submit` and friends. */
  handlers: H;
  /** Hands background work to the platform (`ctx.waitUntil`); by default it is awaited. */
  defer?: ((work: Promise<unknown>) => void) | undefined;
  /**
   * For long-lived processes (a Node server): answer a submit as soon as the store has written
   * it, and publish in the background. Publishes of concurrent submits still share queue
   * requests, and a message waits up to 10 ms for others to share its request; a failed one is
   * logged and leaves the job in the outbox for the tick's recover step, as when the submit waits.
   * Await `engine.broker.settled()` before the process exits. Not for platforms that freeze a
   * function once it has answered (Vercel, Lambda): there pass `defer` (`waitUntil`), or leave
   * this off. Ignored with `defer`.
   * @default false
   */
  backgroundPublish?: boolean | undefined;
}

/** The composed engine. */
export interface Engine<H extends Handlers = Handlers> {
  broker: Broker<H>;
  ticker: Ticker;
  runner: Runner;
  store: Store;
  transport: Transport;
  handlers: H;
  options: ResolvedOptions;
  /**
   * Every counter, gauge and histogram of the store, the leader and the degradation state (one
   * store round trip; the degradation controller is evaluated with {@link EngineOptions.degradation}).
   */
  stats(): Promise<StoreStats>;
  /**
   * What the transport's queue holds now (length, pending, oldest pending age, delayed, consumers,
   * claims), or `undefined` when the transport does not report it (QStash, the local transport):
   * {@link Transport.queueStats}. One round trip to the queue, apart from {@link Engine.stats}'s.
   */
  queueStats(): Promise<QueueStats | undefined>;
}

/** The degradation state `stats` reports while the controller is off (`degradation: false`). */
const CONTROLLER_OFF: DegradationState = {
  level: "normal",
  since: 0,
  signals: { queueDepth: 0, lagMs: 0, failureRate: 0 },
};

/**
 * Compose the engine.
 *
 * @throws RangeError naming an option out of range; TypeError or RangeError naming a handler
 * whose definition is not usable (no `run`, a `timeout` outside 1 s – 15 min, bad `retries`).
 *
 * @example
 * const engine = createEngine({ store: new MemoryStore(), transport, handlers });
 * await engine.broker.submit({ handler: "echo", input: { hi: 1 } });
 * await engine.ticker.tick();
 */
export function createEngine<H extends Handlers>(config: EngineConfig<H>): Engine<H> {
  const options = resolveOptions(config);
  const { store, transport, handlers } = config;
  validateHandlers(handlers);
  const broker = new Broker<H>({
    store,
    transport,
    handlers,
    options,
    ...(config.defer ? { defer: config.defer } : {}),
    ...(config.backgroundPublish ? { backgroundPublish: true } : {}),
  });
  const ticker = new Ticker({ store, transport, options });
  const runner = new Runner({ store, transport, handlers, options, broker });
  const stats = async () => {
    const { degradation, localSignals } = options;
    if (!degradation) {
      // The controller is off here: its level reads as never evaluated, not as whatever a run
      // with it on stored (which nothing would evaluate again).
      const stats = await store.stats();
      return { ...stats, degradation: CONTROLLER_OFF };
    }
    const local = localSignals?.();
    return store.stats(local ? { ...degradation, local } : degradation);
  };
  const queueStats = async (): Promise<QueueStats | undefined> => transport.queueStats?.();
  return { broker, ticker, runner, store, transport, handlers, options, stats, queueStats };
}

export type { DeliveryOutcome } from "../core/delivery.ts";
export {
  type Actor,
  type BatchJobRequest,
  type BatchOutcome,
  type BatchSubmitted,
  BatchTooLargeError,
  Broker,
  type QuotaReport,
  type ScheduleChanged,
  type ScheduleWritten,
  type Scope,
  type Submitted,
  sees,
} from "./broker.ts";
export type { ConcurrencyOption } from "./concurrency.ts";
export type { HandlerContext, HandlerDefinition, Handlers, SubmitJob } from "./handlers.ts";
export { defineHandler, defineHandlers } from "./handlers.ts";
export type { Logger } from "./logger.ts";
export { jsonLogger, silentLogger } from "./logger.ts";
export type { EngineOptions, JobDefaults, TickOptions } from "./options.ts";
export { lookAheadFor } from "./options.ts";
export { PullWorker, type PullWorkerOptions, type PullWorkerStats } from "./pull-worker.ts";
export type { RateLimitOption } from "./rate-limit.ts";
export { Runner } from "./runner.ts";
export type { TickResult } from "./ticker.ts";
export { Ticker } from "./ticker.ts";
export { type IncomingTrace, TRACER_NAME } from "./tracing.ts";
