/**
 * @module
 * Deterministic per-occurrence jitter: every tick that plans an occurrence computes the same delay,
 * so racing or repeated ticks publish identical messages.
 */

/**
 * Delay in `[0, jitterMs]` for the occurrence `(scheduleId, fireAt)`: a 32-bit FNV-1a hash of
 * `"<scheduleId>@<fireAt>"` with murmur3's finaliser for avalanche, scaled to the range.
 *
 * @example
 * const runAt = fireAt + occurrenceJitter("nightly-report", fireAt, 30_000);
 */
export function occurrenceJitter(scheduleId: string, fireAt: number, jitterMs: number): number {
  if (!(jitterMs > 0)) return 0;
  const span = Math.floor(jitterMs) + 1;
  return Math.floor((hash32(`${scheduleId}@${fireAt}`) / 2 ** 32) * span);
}

/** FNV-1a over UTF-16 code units, then murmur3 `fmix32`; an unsigned 32-bit integer. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
