/**
 * @module
 * The values the HTTP fuzz (`fuzz.test.ts`) builds its requests from, aimed at the classes of the
 * input-bounds review: numeric extremes, names every object inherits, ids shaped like other store
 * keys, and malformed Unicode — alongside values close to valid.
 */
import fc from "fast-check";

/** Names every plain object inherits, and `prototype`. */
export const INHERITED = [
  "constructor",
  "__proto__",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "prototype",
  "isPrototypeOf",
  "__defineGetter__",
];

/** Numbers at and past the edges: a `Date`'s range, safe integers, doubles. */
export const extremeNumber = fc.constantFrom(
  1e300,
  -1e300,
  -0,
  8_640_000_000_000_000,
  8_640_000_000_000_001,
  8_639_999_999_999_999,
  -8_640_000_000_000_001,
  Number.MAX_SAFE_INTEGER + 2,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  253_402_300_800_000, // year 10000
  2 ** 31,
  2 ** 31 - 1,
  999,
  900_001,
);

/** Strings that parse to nothing, to something huge, or to a time no `Date` holds. */
export const extremeString = fc.constantFrom(
  "NaN",
  "Infinity",
  "-Infinity",
  "1e309",
  "0x10",
  "1e3s",
  "100000000d",
  `${"9".repeat(400)}d`,
  "25d",
  "366d",
  "16m",
  "900001ms",
  "0.0001s",
  "1e300",
  "+275760-09-13T00:00:00.000Z",
  "+275760-09-13T00:00:00.001Z",
  "-271821-04-20T00:00:00.000Z",
  "9999-12-31T23:59:59.999Z",
  "+010000-01-01T00:00:00Z",
);

/** Ids shaped like other store keys or paths. */
export const keyShaped = fc.constantFrom(
  "x:running",
  "s1:running",
  "a@1",
  "s1@1700000000000",
  "acme:s1@1700000000000",
  "{tw}:s:x",
  "{tw}:j:x",
  "../",
  "..",
  "%2e%2e",
  "a/b",
  "x".repeat(129),
  "x".repeat(3_000),
);

/** Lone surrogates alone or inside otherwise good text. */
export const loneSurrogate = fc
  .tuple(
    fc.string({ maxLength: 8 }),
    fc.constantFrom("\ud800", "\udbff", "\udc00", "\udfff", "\ud83d"),
    fc.string({ maxLength: 8 }),
  )
  .map(([a, s, b]) => `${a}${s}${b}`);

/** Values that are close to valid as often as they are far from it. */
export const value = fc.oneof(
  extremeNumber,
  extremeString,
  fc.constantFrom(...INHERITED),
  keyShaped,
  loneSurrogate,
  fc.array(fc.oneof(loneSurrogate, fc.constantFrom(...INHERITED), keyShaped), {
    minLength: 1,
    maxLength: 3,
  }),
  fc.constantFrom(
    "echo",
    "hold",
    "flaky",
    "nope",
    "61 * * * *",
    "*/5 * * * *",
    "1h",
    "30s",
    "0s",
    "-1",
    "Europe/Berlin",
    "Mars/Olympus",
    "skip",
    "once",
    "all",
    "allow",
    "2026-01-01T00:00:00Z",
    "not a date",
    "",
    "\u0000",
    "😀",
    "__proto__",
  ),
  fc.integer({ min: -1_000, max: 1_000 }),
  fc.constantFrom(0, 1, 5, 10, 11, 1e21, -0, 2 ** 53, Number.MAX_SAFE_INTEGER),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 40 }),
  fc.array(fc.string({ maxLength: 70 }), { maxLength: 25 }),
  fc.jsonValue({ maxDepth: 3 }),
);

/** A value at an edge of the review's classes. */
export const extreme = fc.oneof(
  extremeNumber,
  extremeString,
  fc.constantFrom(...INHERITED),
  keyShaped,
  loneSurrogate,
);
