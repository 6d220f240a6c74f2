/**
 * @module
 * Small helpers every module of the memory store uses: the copy rule (records are deep-copied in
 * and out, so a caller can never reach the stored state), id order, and entries with a time to
 * live, judged lazily against the store's clock.
 */

/** A value with a time to live (a Redis key with a TTL). */
export interface Expiring<T> {
  value: T;
  expiresAt: number;
}

/** The entry under `key` if it has not expired (an expired one is dropped, as Redis would). */
export function live<T>(
  map: Map<string, Expiring<T>>,
  key: string,
  now: number,
): Expiring<T> | undefined {
  const entry = map.get(key);
  if (entry && entry.expiresAt <= now) {
    map.delete(key);
    return undefined;
  }
  return entry;
}

/** Id order, as a sorted set breaks ties. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A deep copy: what goes into the store and what comes out of it. */
export const clone: <T>(value: T) => T = structuredClone;
