/**
 * @module
 * What JSON would not keep of a value: keys refused anywhere (prototype pollution) and numbers
 * JSON cannot carry. No dependencies, so the HTTP client checks what it sends with the same rule
 * the server reads bodies with.
 */

/** One refused part of a value: where (`a.b.0`, `""` for the value itself) and why. */
export interface ValueIssue {
  path: string;
  message: string;
}

/**
 * Keys refused anywhere in a request body: harmless to `JSON.parse`, but dangerous to any code
 * that later merges the value into an object (prototype pollution).
 */
export const FORBIDDEN_KEYS: readonly string[] = ["__proto__", "constructor", "prototype"];

/** Options of {@link bodyIssues}. */
export interface BodyIssuesOptions {
  /** The most issues to report. @default 10 */
  max?: number;
  /**
   * The value comes from `JSON.parse` (a request body): it has no `toJSON` methods, and no object
   * in it is reached twice, so the walk need not remember where it has been. A value built in
   * process may refer to itself: without this, the walk remembers the objects it went into.
   * @default false
   */
  parsed?: boolean;
}

/**
 * Where `value` holds a {@link FORBIDDEN_KEYS} key, a number JSON cannot carry, or (built in
 * process) an invalid `Date`, as field issues. `JSON.parse` reads `1e400` as `Infinity`, and
 * `JSON.stringify` writes `Infinity`, `NaN` and an invalid `Date` as `null`: each would be stored
 * as `null` without a word.
 *
 * It walks what `JSON.stringify` writes: an object with a `toJSON` method (a `Date`, a class
 * instance) as that method's answer. Iteratively, so any depth is safe; and, unless `parsed`, it
 * remembers the objects it went into once there are many, so a value that refers to itself ends
 * the walk (`JSON.stringify` then refuses it).
 *
 * @example
 * bodyIssues(JSON.parse('{"input":{"__proto__":{"admin":true},"amount":1e400}}'), { parsed: true });
 * // [{ path: "input.__proto__", message: 'the key "__proto__" is not allowed' },
 * //  { path: "input.amount", message: "a number out of range (at most ±1.7976931348623157e308)" }]
 */
export function bodyIssues(value: unknown, options: BodyIssuesOptions = {}): ValueIssue[] {
  const issues: ValueIssue[] = [];
  const parsed = options.parsed === true;
  // Nearly every body has none: found out without building a path for every key.
  if (!hasRefusedPart(value, parsed)) return issues;
  const max = options.max ?? 10;
  // Remembered from the first (unless parsed): only a value that holds an issue gets here, and an
  // object reached twice would report its issues twice.
  const visits = newVisits(parsed, 0);
  // `path` undefined: the value itself (a key may be "", so "" cannot mark it).
  const stack: { value: unknown; path: string | undefined; key: string }[] = [
    { value, path: undefined, key: "" },
  ];
  while (stack.length > 0 && issues.length < max) {
    const next = stack.pop()!;
    const path = next.path;
    const current = written(next.value, next.key, parsed);
    if (typeof current === "number" && !Number.isFinite(current)) {
      issues.push({ path: path ?? "", message: numberIssue(current) });
      continue;
    }
    if (current === null && !parsed && isInvalidDate(next.value)) {
      issues.push({ path: path ?? "", message: "an invalid Date (JSON writes it as null)" });
      continue;
    }
    if (!entered(current, visits)) continue;
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) {
        const at = path === undefined ? String(i) : `${path}.${i}`;
        stack.push({ value: current[i], path: at, key: String(i) });
      }
      continue;
    }
    const keys = Object.keys(current);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      const at = path === undefined ? key : `${path}.${key}`;
      if (FORBIDDEN_KEYS.includes(key)) {
        if (!keeps(current, key, parsed)) continue;
        issues.push({ path: at, message: `the key "${key}" is not allowed` });
        if (issues.length >= max) break;
      } else {
        stack.push({ value: (current as Record<string, unknown>)[key], path: at, key });
      }
    }
  }
  return issues;
}

function numberIssue(n: number): string {
  return Number.isNaN(n)
    ? "NaN is not a JSON number"
    : `a number out of range (at most ±${Number.MAX_VALUE})`;
}

/**
 * Whether any object in `value` (at any depth) has a key of {@link FORBIDDEN_KEYS}, any number is
 * not finite, or (built in process) any `Date` is invalid.
 */
function hasRefusedPart(value: unknown, parsed: boolean): boolean {
  const visits = newVisits(parsed, TRACK_AFTER);
  const stack: { value: unknown; key: string }[] = [{ value, key: "" }];
  while (stack.length > 0) {
    const next = stack.pop()!;
    const current = written(next.value, next.key, parsed);
    if (typeof current === "number") {
      if (!Number.isFinite(current)) return true;
      continue;
    }
    if (current === null && !parsed && isInvalidDate(next.value)) return true;
    if (!entered(current, visits)) continue;
    if (Array.isArray(current)) {
      for (let i = 0; i < current.length; i++) {
        const item: unknown = current[i];
        if (walked(item, parsed)) stack.push({ value: item, key: String(i) });
        else if (typeof item === "number" && !Number.isFinite(item)) return true;
      }
      continue;
    }
    for (const key of Object.keys(current)) {
      if (FORBIDDEN_KEYS.includes(key)) {
        if (keeps(current, key, parsed)) return true;
        continue;
      }
      const child = (current as Record<string, unknown>)[key];
      if (walked(child, parsed)) stack.push({ value: child, key });
      else if (typeof child === "number" && !Number.isFinite(child)) return true;
    }
  }
  return false;
}

/**
 * Whether the walk goes into `value`: an object, or (built in process) a function, which
 * `JSON.stringify` writes as its `toJSON` method's answer when it has one.
 */
function walked(value: unknown, parsed: boolean): boolean {
  return (typeof value === "object" && value !== null) || (!parsed && typeof value === "function");
}

/**
 * Whether `JSON.stringify` may write `object`'s own `key`: it leaves out a key whose value (after
 * `toJSON`) is `undefined`, a function or a symbol, so `{ constructor: undefined }` sends nothing
 * to refuse. Only a plain data property is judged so: a getter may answer otherwise when
 * `JSON.stringify` reads it again, so it is kept (refused). A parsed value holds none of those.
 */
function keeps(object: object, key: string, parsed: boolean): boolean {
  if (parsed) return true;
  const own = Object.getOwnPropertyDescriptor(object, key);
  if (!own || !("value" in own)) return true;
  const value = written(own.value, key, false);
  return value !== undefined && typeof value !== "function" && typeof value !== "symbol";
}

/**
 * Whether `value` is a `Date` whose time is not a number (`new Date("x")`, one past year 275760):
 * its `toJSON` answers `null`, so a `runAt` or an input field would be sent as `null` without a
 * word. Told by its internal slot, so a `Date` of another realm counts too.
 */
function isInvalidDate(value: unknown): boolean {
  return (
    Object.prototype.toString.call(value) === "[object Date]" &&
    Number.isNaN(Date.prototype.getTime.call(value))
  );
}

/**
 * What `JSON.stringify` writes for `value` under `key`: a `toJSON` method's answer, if it has one
 * (an object's or a function's: it asks both).
 */
function written(value: unknown, key: string, parsed: boolean): unknown {
  if (parsed || (typeof value !== "object" && typeof value !== "function") || value === null) {
    return value;
  }
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  return typeof toJSON === "function" ? toJSON.call(value, key) : value;
}

/**
 * The objects one walk has gone into: counted, and remembered once the count passes zero (a
 * walk that starts the count below zero remembers only past that many; one that starts at
 * `-Infinity`, never).
 */
interface Visits {
  count: number;
  seen?: WeakSet<object>;
}

/**
 * Objects the walk that finds nothing goes into before it starts remembering them: nearly every
 * input is smaller, and its walk never builds the set (which made a walk of thousands of objects
 * three times slower); a value that refers to itself is still found out within a few milliseconds.
 */
const TRACK_AFTER = 10_000;

/** Visits of a walk that remembers objects past the first `after` (never, for a parsed value). */
function newVisits(parsed: boolean, after: number): Visits {
  return { count: parsed ? Number.NEGATIVE_INFINITY : -after };
}

/** Whether the walk goes into `value`: an object, and not one it has gone into before. */
function entered(value: unknown, visits: Visits): value is object {
  if (typeof value !== "object" || value === null) return false;
  if (++visits.count > 0) {
    visits.seen ??= new WeakSet();
    if (visits.seen.has(value)) return false;
    visits.seen.add(value);
  }
  return true;
}

/**
 * Whether JSON `text` (already parsed) has an integer literal (no fraction, no exponent) that
 * does not read back as written: `JSON.parse` rounds it to a double that writes another number
 * (most past ±2^53), or one past 10^21 that writes with an exponent.
 */
export function hasUnsafeInteger(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: skip to its closing quote, past escapes.
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let end = c === 0x2d ? i + 1 : i;
      const digitsFrom = end;
      while (end < text.length && isDigit(text.charCodeAt(end))) end++;
      const after = text.charCodeAt(end);
      const integer = after !== 0x2e && after !== 0x65 && after !== 0x45;
      // Up to 15 digits every integer reads back as written; past that, one the double it
      // reads as does not write back the same (820982911946154508 → 820982911946154500).
      if (integer && end - digitsFrom > 15) {
        const literal = text.slice(i, end);
        if (String(Number(literal)) !== literal) return true;
      }
      // The rest of the number (fraction, exponent).
      while (end < text.length && isNumberPart(text.charCodeAt(end))) end++;
      i = end - 1;
    }
  }
  return false;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** A digit, `.`, `e`, `E`, `+` or `-`. */
function isNumberPart(c: number): boolean {
  return isDigit(c) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;
}
