/**
 * @module
 * `scale`: tick time with N schedules stored and 100 of them due, for growing N (full: 1k, 100k,
 * 1M; quick: 1k, 10k, 100k). Each N on a fresh private Redis; the far schedules are copies of
 * one written through the store API, made with raw pipelined writes of exactly what it wrote and
 * read back through `getSchedule` to check (see `cloneFar`); the 100 due ones are re-armed through the broker before each tick. Median of 7 ticks, after
 * one untimed warm-up tick.
 */
import { keys } from "../../src/store/redis/keys.ts";
import { startTsChild } from "../lib/children.ts";
import { armDue, benchEngine, cloneFar, farTemplate, type QueueTarget } from "../lib/engine.ts";
import { scriptUsec, startRedis } from "../lib/redis.ts";

export interface ScaleFigures {
  /** `ms_<size>` for each size measured, e.g. `ms_1k`, `ms_100k`, `ms_1m`. */
  [field: `ms_${string}`]: number;
  sizes: number[];
  due: number;
  /** ms of the largest size / ms of the smallest. */
  ratio_largest_smallest: number;
  /** Round trips of each measured tick, per size (they should not grow with N). */
  round_trips: Record<string, number[]>;
  /** Every measured tick, per size. */
  samples_ms: Record<string, number[]>;
  /** Median time Redis spent running the tick's scripts, per size (the store's share). */
  redis_ms: Record<string, number>;
  /** Seconds spent storing the schedules, per size. */
  seed_s: Record<string, number>;
}

const DUE = 100;
const TICKS = 7;

export function sizeLabel(n: number): string {
  return n >= 1_000_000 ? `${n / 1_000_000}m` : `${n / 1_000}k`;
}

async function measureSize(
  size: number,
  queue: QueueTarget,
  log: (line: string) => void,
): Promise<{ samples: number[]; redisSamples: number[]; roundTrips: number[]; seedS: number }> {
  const redis = await startRedis();
  const bench = await benchEngine(redis.url, queue);
  try {
    const { engine, store, counter } = bench;
    const s0 = performance.now();
    const template = await farTemplate(engine, await store.now());
    await cloneFar(bench, template, size - DUE - 1);
    const seedS = (performance.now() - s0) / 1000;
    const stored = await redis.admin.zcard(keys().schedules("default"));
    if (stored !== size - DUE)
      throw new Error(`scale: ${stored} schedules stored, not ${size - DUE}`);
    const samples: number[] = [];
    const redisSamples: number[] = [];
    const roundTrips: number[] = [];
    for (let round = 0; round <= TICKS; round++) {
      await armDue(engine, "due-", DUE, (await store.now()) + 30_000);
      const rt0 = counter.roundTrips;
      const us0 = await scriptUsec(redis.admin);
      const t0 = performance.now();
      const result = await engine.ticker.tick();
      const ms = performance.now() - t0;
      const redisMs = ((await scriptUsec(redis.admin)) - us0) / 1000;
      if (!result.leader || result.dispatched !== DUE || result.due !== DUE) {
        throw new Error(
          `scale ${size}: expected ${DUE} due and dispatched, got ${JSON.stringify(result)}`,
        );
      }
      if (round === 0) continue; // warm-up
      samples.push(ms);
      redisSamples.push(redisMs);
      roundTrips.push(counter.roundTrips - rt0);
    }
    const total = await redis.admin.zcard(keys().schedules("default"));
    log(
      `  ${sizeLabel(size).padStart(5)} stored (seeded in ${seedS.toFixed(1)} s, ${total} in the index): ticks ${samples.map((s) => s.toFixed(1)).join(", ")} ms (Redis script time ${redisSamples.map((s) => s.toFixed(1)).join(", ")} ms), round trips ${roundTrips.join(", ")}`,
    );
    return { samples, redisSamples, roundTrips, seedS };
  } finally {
    bench.close();
    await redis.stop();
  }
}

export async function benchScale(
  quick: boolean,
  log: (line: string) => void,
): Promise<ScaleFigures> {
  const sizes = quick ? [1_000, 10_000, 100_000] : [1_000, 100_000, 1_000_000];
  log(
    `scale: tick time with ${sizes.map(sizeLabel).join(" / ")} schedules stored, ${DUE} due each tick, median of ${TICKS}`,
  );
  const double = await startTsChild<QueueTarget>("servers/qstash-double.ts");
  try {
    const figures = {
      sizes,
      due: DUE,
      round_trips: {},
      samples_ms: {},
      redis_ms: {},
      seed_s: {},
    } as unknown as ScaleFigures;
    const medians: number[] = [];
    for (const size of sizes) {
      const { samples, redisSamples, roundTrips, seedS } = await measureSize(
        size,
        double.ready,
        log,
      );
      const label = sizeLabel(size);
      const med = median(samples);
      medians.push(med);
      figures[`ms_${label}`] = round1(med);
      figures.samples_ms[label] = samples.map(round1);
      figures.redis_ms[label] = round1(median(redisSamples));
      figures.round_trips[label] = roundTrips;
      figures.seed_s[label] = round1(seedS);
    }
    figures.ratio_largest_smallest = Math.round((medians.at(-1)! / medians[0]!) * 100) / 100;
    return figures;
  } finally {
    await double.stop();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}
