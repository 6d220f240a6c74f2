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

/**
 * Where `value` holds a {@link FORBIDDEN_KEYS} key, or a number JSON cannot carry, as field issues
 * (at most `max`). `JSON.parse` reads `1e400` as `Infinity`, and `JSON.stringify` writes
 * `Infinity` and `NaN` as `null`: such a number would be stored as `null` without a word.
 *
 * Walks iteratively, so any depth is safe, and remembers the objects it went into once there are
 * many, so a value built in process that refers to itself ends the walk (`JSON.stringify` then
 * refuses it). An object with a `toJSON`
 * method (a `Date`, say; never one `JSON.parse` made) is written as that method says, and is not
 * walked.
 *
 * @example
 * bodyIssues(JSON.parse('{"input":{"__proto__":{"admin":true},"amount":1e400}}'));
 * // [{ path: "input.__proto__", message: 'the key "__proto__" is not allowed' },
 * //  { path: "input.amount", message: "a number out of range (at most ±1.7976931348623157e308)" }]
 */
export function bodyIssues(value: unknown, max = 10): ValueIssue[] {
  const issues: ValueIssue[] = [];
  // Nearly every body has none: found out without building a path for every key.
  if (!hasRefusedPart(value)) return issues;
  // Remembered from the first: only a value that holds an issue gets here, and an object reached
  // twice would report its issues twice.
  const seen: Visits = { count: TRACK_AFTER };
  // `undefined`: the value itself (a key may be "", so "" cannot mark it).
  const stack: { value: unknown; path: string | undefined }[] = [{ value, path: undefined }];
  while (stack.length > 0 && issues.length < max) {
    const { value: current, path } = stack.pop()!;
    if (typeof current === "number" && !Number.isFinite(current)) {
      issues.push({
        path: path ?? "",
        message: Number.isNaN(current)
          ? "NaN is not a JSON number"
          : `a number out of range (at most ±${Number.MAX_VALUE})`,
      });
      continue;
    }
    if (!walked(current, seen)) continue;
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) {
        stack.push({ value: current[i], path: path === undefined ? String(i) : `${path}.${i}` });
      }
      continue;
    }
    const keys = Object.keys(current);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      const at = path === undefined ? key : `${path}.${key}`;
      if (FORBIDDEN_KEYS.includes(key)) {
        issues.push({ path: at, message: `the key "${key}" is not allowed` });
        if (issues.length >= max) break;
      } else {
        stack.push({ value: (current as Record<string, unknown>)[key], path: at });
      }
    }
  }
  return issues;
}

/**
 * Whether any object in `value` (at any depth) has a key of {@link FORBIDDEN_KEYS}, or any number
 * is not finite.
 */
function hasRefusedPart(value: unknown): boolean {
  if (typeof value === "number") return !Number.isFinite(value);
  const seen: Visits = { count: 0 };
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (!walked(current, seen)) continue;
    if (Array.isArray(current)) {
      for (const item of current) {
        if (typeof item === "object" && item !== null) stack.push(item);
        else if (typeof item === "number" && !Number.isFinite(item)) return true;
      }
      continue;
    }
    for (const key of Object.keys(current)) {
      if (FORBIDDEN_KEYS.includes(key)) return true;
      const child = (current as Record<string, unknown>)[key];
      if (typeof child === "object" && child !== null) stack.push(child);
      else if (typeof child === "number" && !Number.isFinite(child)) return true;
    }
  }
  return false;
}

/**
 * The objects one walk has gone into. Remembered only past the first {@link TRACK_AFTER}: a parsed
 * body never refers to itself, and most are small, so most walks never build the set.
 */
interface Visits {
  count: number;
  seen?: WeakSet<object>;
}

/** Objects a walk goes into before it starts remembering them (see {@link Visits}). */
const TRACK_AFTER = 64;

/** Whether the walk goes into `value`: an object not seen before, without a `toJSON` method. */
function walked(value: unknown, visits: Visits): value is object {
  if (typeof value !== "object" || value === null) return false;
  if (++visits.count > TRACK_AFTER) {
    visits.seen ??= new WeakSet();
    if (visits.seen.has(value)) return false;
    visits.seen.add(value);
  }
  return typeof (value as { toJSON?: unknown }).toJSON !== "function";
}
