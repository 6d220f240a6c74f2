/**
 * @module
 * Medians of repeated rounds, figure by figure, and ratios taken round by round.
 */

/** The median of `xs` (the mean of the middle two for an even count, to one decimal). */
export function median(xs: number[]): number {
  const sorted = [...xs].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2
    ? sorted[mid]!
    : Math.round(((sorted[mid - 1]! + sorted[mid]!) / 2) * 10) / 10;
}

/** Each numeric field's median over `all`. */
export function medians<T extends { [K in keyof T]: number }>(all: T[]): T {
  const out = { ...all[0]! };
  for (const key of Object.keys(out) as (keyof T)[]) {
    out[key] = median(all.map((f) => f[key])) as T[keyof T];
  }
  return out;
}

/**
 * A ratio of two contenders taken within each round (`a[i] / b[i]`, two decimals) and the median
 * of those ratios. The two ran minutes apart at most, one after the other, so a round's ratio
 * shares the host's state of the moment; a ratio of the two medians can set one contender's
 * round on a fast stretch of the host against the other's on a slow one (docs/benchmarks.md,
 * "How a ratio is judged").
 */
export interface PairedRatio {
  /** Each round's ratio, to two decimals. */
  by_round: number[];
  /** Their median, to two decimals. */
  median: number;
  /** The median of the unrounded ratios: what a target compares (1.004 is over 1.0). */
  value: number;
}

export function pairedRatio(a: number[], b: number[]): PairedRatio {
  if (a.length !== b.length || a.length === 0) {
    throw new Error(`pairedRatio: ${a.length} rounds against ${b.length}`);
  }
  const exact = a.map((x, i) => x / b[i]!);
  const sorted = [...exact].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  const m = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return {
    by_round: exact.map((r) => Math.round(r * 100) / 100),
    median: Math.round(m * 100) / 100,
    value: m,
  };
}
