/**
 * @module
 * The tick timer of a Node process: an internal timer, every second (docs/architecture.md,
 * "Topologies and roles"). Every replica
 * may run one: the tick lease picks the leader, an idle tick costs one round trip.
 */

import { MAX_TIMER_MS } from "../../core/duration.ts";
import type { Engine } from "../../engine/index.ts";
import type { Logger } from "../../engine/logger.ts";

/** Options of {@link startTicker}. */
export interface TickerTimerOptions {
  /** Stops the timer when aborted (e.g. {@link NodeServer.signal}). */
  signal?: AbortSignal | undefined;
  /** Where failures go. @default engine.options.logger */
  logger?: Logger | undefined;
  /** A failing tick is logged once, then again at most this often while it keeps failing. @default 60_000 */
  repeatLogEveryMs?: number | undefined;
}

/** A running tick timer. */
export interface TickerTimer {
  /** Ticks that completed (with or without error). */
  readonly ticks: number;
  /** Stop ticking; resolves once a tick in flight has finished. */
  stop(): Promise<void>;
}

/**
 * Call `engine.ticker.tick()` every `everyMs`, start to start, never overlapping itself: a tick
 * that runs long delays the next one instead of racing it. Errors are logged (once, then at most
 * once a minute while they repeat), never thrown.
 *
 * @example
 * const server = await serve(app, { port: 8787 });
 * const timer = startTicker(engine, 1_000, { signal: server.signal });
 */
export function startTicker(
  engine: Pick<Engine, "ticker" | "options">,
  everyMs = 1_000,
  options: TickerTimerOptions = {},
): TickerTimer {
  // At most a timer's longest delay: past it the timer fires after 1 ms, a tick every millisecond.
  if (!(everyMs > 0 && everyMs <= MAX_TIMER_MS)) {
    throw new RangeError(
      `everyMs must be a positive number of ms up to ${MAX_TIMER_MS}, got ${everyMs}`,
    );
  }
  const logger = options.logger ?? engine.options.logger;
  const repeatEvery = options.repeatLogEveryMs ?? 60_000;
  let stopped = false;
  let ticks = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inFlight: Promise<void> | undefined;
  let failing: { message: string; count: number; loggedAt: number } | undefined;

  const onError = (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    const now = Date.now();
    if (failing?.message === message && now - failing.loggedAt < repeatEvery) {
      failing.count++;
      return;
    }
    const repeats = failing?.message === message ? failing.count : 0;
    logger.error("tick failed", {
      error: message,
      ...(repeats > 0 ? { repeatedSinceLastLog: repeats } : {}),
    });
    failing = { message, count: 0, loggedAt: now };
  };

  const run = async () => {
    const started = Date.now();
    try {
      await engine.ticker.tick();
      if (failing) logger.info("tick recovered", { after: failing.message });
      failing = undefined;
    } catch (error) {
      onError(error);
    }
    ticks++;
    if (!stopped) timer = setTimeout(loop, Math.max(0, everyMs - (Date.now() - started)));
  };
  const loop = () => {
    inFlight = run();
  };

  const stop = async () => {
    stopped = true;
    clearTimeout(timer);
    await inFlight;
  };
  options.signal?.addEventListener("abort", () => void stop(), { once: true });
  if (options.signal?.aborted) stopped = true;
  else loop();

  return {
    get ticks() {
      return ticks;
    },
    stop,
  };
}
