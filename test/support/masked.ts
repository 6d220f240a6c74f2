/**
 * @module
 * Store answers and records compared across two stores that run a few milliseconds apart: the
 * numbers under time-like keys masked, anywhere in the value.
 */

/** `value` with every number under one of `timeKeys` replaced by `"<time>"`, at any depth. */
export function maskTimes(value: unknown, timeKeys: ReadonlySet<string>): unknown {
  if (Array.isArray(value)) return value.map((v) => maskTimes(v, timeKeys));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      out[key] = timeKeys.has(key) && typeof v === "number" ? "<time>" : maskTimes(v, timeKeys);
    }
    return out;
  }
  return value;
}
