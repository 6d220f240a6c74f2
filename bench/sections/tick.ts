/**
 * @module
 * `tick`: one `engine.ticker.tick()`, in a process of its own (`servers/tick-engine.ts`),
 * dispatching 10,000 due occurrences to the QStash double (in its own process), with default tick settings but a raised time budget: round trips (counting
 * script client), billed commands (`INFO commandstats`) and requests at the double, and where the
 * time went (Redis script time, the engine's CPU, the double's CPU).
 */
import { startTsChild } from "../lib/children.ts";
import type { QueueTarget } from "../lib/engine.ts";
import {
  billedBetween,
  commandStats,
  commandsBetween,
  scriptUsec,
  startRedis,
} from "../lib/redis.ts";

export interface TickFigures {
  occurrences: number;
  ms: number;
  redis_round_trips: number;
  billed_commands: number;
  queue_requests: number;
  /** Schedules stored (each with one occurrence due). */
  schedules: number;
  /** Where the time went: Redis running the tick's scripts … */
  redis_ms: number;
  /** … CPU of the ticking process (plan, encode, publish) … */
  engine_cpu_ms: number;
  /** engine_cpu_ms per occurrence, in µs. */
  engine_cpu_us_per_occurrence: number;
  /** billed_commands / occurrences. */
  billed_per_occurrence: number;
  /** … and CPU of the QStash double accepting the batches (QStash's work, on this machine). */
  queue_cpu_ms: number;
  /** Billed commands by name. */
  commands: Record<string, number>;
  /** Tick settings used (defaults, but `budgetMs`). */
  settings: { chunk: number; publishBatch: number; budgetMs: number; horizonMs: number };
}

/** What the tick engine's process answers for one tick (bench/servers/tick-engine.ts). */
interface TickAnswer {
  ms: number;
  cpu_us: number;
  round_trips: number;
  dispatched: number;
  leader: boolean;
  settings: TickFigures["settings"];
}

const OCCURRENCES = 10_000;
const BUDGET_MS = 120_000;

export async function benchTick(log: (line: string) => void): Promise<TickFigures> {
  const redis = await startRedis();
  const double = await startTsChild<QueueTarget>("servers/qstash-double.ts");
  // The engine ticks in a process of its own; the budget (default 20 s) is raised so one tick
  // takes all 10,000 however loaded the machine is; every other tick setting is the default.
  const child = await startTsChild<unknown>("servers/tick-engine.ts", [], {
    REDIS_URL: redis.url,
    QSTASH_URL: double.ready.url,
    QSTASH_TOKEN: double.ready.token,
    QSTASH_CURRENT_SIGNING_KEY: double.ready.currentSigningKey,
    QSTASH_NEXT_SIGNING_KEY: double.ready.nextSigningKey,
    TICK_BUDGET_MS: String(BUDGET_MS),
  });
  try {
    // One occurrence each, 40 s ahead: inside the default 65 s look-ahead, so the tick
    // dispatches it now with notBefore = fireAt (the double holds it until then).
    await child.request("arm", { count: OCCURRENCES, aheadMs: 40_000 });
    const q0 = await double.request<{ publishRequests: number }>("counters");
    const c0 = await commandStats(redis.admin);
    const us0 = await scriptUsec(redis.admin);
    const q0cpu = await double.request<number>("cpu");
    const tick = await child.request<TickAnswer>("tick");
    const queueCpuMs = ((await double.request<number>("cpu")) - q0cpu) / 1000;
    const redisMs = ((await scriptUsec(redis.admin)) - us0) / 1000;
    const c1 = await commandStats(redis.admin);
    const q1 = await double.request<{ publishRequests: number; messages: number }>("counters");
    if (!tick.leader || tick.dispatched !== OCCURRENCES) {
      throw new Error(`tick: expected ${OCCURRENCES} dispatched, got ${JSON.stringify(tick)}`);
    }
    if (q1.messages !== OCCURRENCES) {
      throw new Error(`tick: the QStash double holds ${q1.messages} messages, not ${OCCURRENCES}`);
    }
    const { ms, cpu_us: cpuUs, round_trips: roundTrips } = tick;
    const t = tick.settings;
    const figures: TickFigures = {
      occurrences: tick.dispatched,
      ms: Math.round(ms),
      redis_round_trips: roundTrips,
      billed_commands: billedBetween(c0, c1),
      queue_requests: q1.publishRequests - q0.publishRequests,
      schedules: OCCURRENCES,
      redis_ms: Math.round(redisMs),
      engine_cpu_ms: Math.round(cpuUs / 1000),
      engine_cpu_us_per_occurrence: Math.round((cpuUs / tick.dispatched) * 10) / 10,
      billed_per_occurrence: Math.round((billedBetween(c0, c1) / tick.dispatched) * 100) / 100,
      queue_cpu_ms: Math.round(queueCpuMs),
      commands: commandsBetween(c0, c1),
      settings: {
        chunk: t.chunk,
        publishBatch: t.publishBatch,
        budgetMs: t.budgetMs,
        horizonMs: t.horizonMs,
      },
    };
    log(
      `tick: ${OCCURRENCES} schedules ("1h" interval, startAt 40 s ahead: one occurrence each inside the 65 s look-ahead), one tick, default settings (chunk ${t.chunk}, publish batch ${t.publishBatch}) but the budget, raised from 20 s to ${t.budgetMs / 1000} s`,
    );
    log(
      `  ${figures.occurrences} occurrences in ${figures.ms} ms, ${figures.redis_round_trips} round trips, ${figures.billed_commands} billed commands, ${figures.queue_requests} queue requests; Redis scripts ${figures.redis_ms} ms, engine CPU ${figures.engine_cpu_ms} ms, QStash double CPU ${figures.queue_cpu_ms} ms`,
    );
    return figures;
  } finally {
    await child.stop();
    await double.stop();
    await redis.stop();
  }
}
