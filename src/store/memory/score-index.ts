/**
 * @module
 * A sorted set of ids by score, like a Redis sorted set: the memory store's `{p}:pending` index,
 * so the backlog (`ZCOUNT pending -inf now`) is a binary search, not a scan of every queued job.
 */

/** Ids ordered by score (ties by id); `set`, `delete` and `countUpTo` in O(log n) + a move. */
export class ScoreIndex {
  readonly #scores = new Map<string, number>();
  readonly #sorted: { score: number; id: string }[] = [];

  get size(): number {
    return this.#scores.size;
  }

  has(id: string): boolean {
    return this.#scores.has(id);
  }

  /** Adds `id` with `score`, or moves it there. */
  set(id: string, score: number): void {
    this.delete(id);
    this.#scores.set(id, score);
    this.#sorted.splice(this.#lowerBound(score, id), 0, { score, id });
  }

  /** Removes `id`; true if it was there (as `ZREM`). */
  delete(id: string): boolean {
    const score = this.#scores.get(id);
    if (score === undefined) return false;
    this.#scores.delete(id);
    this.#sorted.splice(this.#lowerBound(score, id), 1);
    return true;
  }

  /** How many ids have a score `<= max` (as `ZCOUNT -inf max`). */
  countUpTo(max: number): number {
    let lo = 0;
    let hi = this.#sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.#sorted[mid] as { score: number }).score <= max) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The first position whose entry is not before `(score, id)`. */
  #lowerBound(score: number, id: string): number {
    let lo = 0;
    let hi = this.#sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const e = this.#sorted[mid] as { score: number; id: string };
      if (e.score < score || (e.score === score && e.id < id)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
