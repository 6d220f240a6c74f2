/**
 * @module
 * Work spread over a few concurrent loops, as the benchmark's submitters run.
 */

/**
 * Calls `work(i)` for each `i` from `from` to `from + count - 1`, each call after the one before
 * it in its loop, with `loops` loops taking the next `i` as they go.
 */
export async function inLoops(
  count: number,
  loops: number,
  work: (i: number) => Promise<unknown>,
  from = 0,
): Promise<void> {
  let next = from;
  const end = from + count;
  const loop = async () => {
    while (next < end) await work(next++);
  };
  await Promise.all(Array.from({ length: loops }, loop));
}
