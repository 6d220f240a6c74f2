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
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  let rand = "";
  for (const b of bytes) rand += ALPHABET[b % 36];
  return `j_${now.toString(36).padStart(9, "0")}${rand}`;
}
