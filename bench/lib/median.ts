/**
 * @module
 * Medians of repeated rounds, figure by figure.
 */

/** Each numeric field's median over `all` (the mean of the middle two for an even count). */
export function medians<T extends { [K in keyof T]: number }>(all: T[]): T {
  const out = { ...all[0]! };
  for (const key of Object.keys(out) as (keyof T)[]) {
    const sorted = all.map((f) => f[key]).sort((x, y) => x - y);
    const mid = sorted.length >> 1;
    out[key] = (
      sorted.length % 2
        ? sorted[mid]
        : Math.round(((sorted[mid - 1]! + sorted[mid]!) / 2) * 10) / 10
    ) as T[keyof T];
  }
  return out;
}
