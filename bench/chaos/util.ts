/**
 * @module
 * Small helpers the fault suite's phases share: sleeping, random draws from a seeded stream,
 * bounded concurrency, rounding.
 */
import type { Prng } from "../../test/support/prng.ts";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A whole number in `[lo, hi]`, from `rng`. */
export const between = (rng: Prng, [lo, hi]: number[]) => lo! + rng.int(hi! - lo! + 1);

/** An exponentially distributed wait of mean `mean`, from `rng`. */
export const exponential = (rng: Prng, mean: number) => -Math.log(1 - rng.next()) * mean;

/** Run `work` over `items`, at most `limit` at once. */
export async function pool<T>(
  items: T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  });
  await Promise.all(workers);
}

/** The key whose cumulative weight first exceeds `u`, if any. */
export function pickCumulative<K extends string>(
  weights: Record<K, number>,
  u: number,
): K | undefined {
  let sum = 0;
  for (const [key, weight] of Object.entries(weights) as [K, number][]) {
    sum += weight;
    if (u < sum) return key;
  }
  return undefined;
}

export function round(n: number): number {
  return Math.round(n * 10) / 10;
}
