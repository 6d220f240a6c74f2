/**
 * @module
 * What the input-bounds tests share (`bounds*.test.ts`): the limits as docs/api.md states them,
 * and the names every object inherits.
 */

export const DAY = 86_400_000;
/** The largest timeout (15 min), as docs/api.md states it. */
export const MAX_TIMEOUT_MS = 900_000;
export const INHERITED = [
  "constructor",
  "toString",
  "__proto__",
  "hasOwnProperty",
  "valueOf",
  "isPrototypeOf",
  "toLocaleString",
  "propertyIsEnumerable",
];
