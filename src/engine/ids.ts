/**
 * @module
 * Job ids: time-ordered and random, so they sort roughly by creation and never collide.
 */

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/**
 * A new job id: `j_` + 9 chars of base-36 time + 12 random base-36 chars.
 *
 * @example
 * newJobId(); // "j_m3k9x2a1b4f8c0d7e2q9z"
 */
export function newJobId(now = Date.now()): string {
  if (offset + RANDOM_CHARS > pool.length) {
    crypto.getRandomValues(pool);
    offset = 0;
  }
  // The time part is the same for every id of one millisecond: formatted once for them all.
  if (now !== prefixAt) {
    prefix = `j_${now.toString(36).padStart(9, "0")}`;
    prefixAt = now;
  }
  let rand = "";
  for (let i = 0; i < RANDOM_CHARS; i++) rand += ALPHABET[(pool[offset++] as number) % 36];
  return prefix + rand;
}

/** The `j_` + time part of the last id, and the millisecond it is of. */
let prefix = "";
let prefixAt = Number.NaN;

const RANDOM_CHARS = 12;
/** Random bytes drawn in bulk: one `getRandomValues` per 341 ids instead of one per id. */
const pool = new Uint8Array(4_096);
let offset = pool.length;
