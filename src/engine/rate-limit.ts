/**
 * @module
 * Rate limits of handlers: a handler's `rateLimit` option, checked when the engine is created,
 * and the {@link RateLimit} the runner hands to `beginRun` for each delivery of one of its jobs —
 * the store lets at most `limit` runs of one key BEGIN in any sliding window of `period`, across
 * every worker (docs/adr/0013-concurrency-limits.md, "Rate limits").
 *
 * The key of a job is derived exactly as a concurrency limit's (`limitKeyOf` and `parsePath` of
 * `src/engine/concurrency.ts`): the handler's name without `key`, else
 * `<handler>=<n>:<tenant>:<value>`. Rate windows and concurrency slots live apart in the store,
 * so one handler may have both, with the same key path or different ones.
 */
import { type Duration, parseDuration } from "../core/duration.ts";
import { MAX_RATE_LIMIT, MAX_RATE_PERIOD_MS, type RateLimit } from "../store/port.ts";
import { limitKeyOf, parsePath } from "./concurrency.ts";
import type { HandlerDefinition } from "./handlers.ts";

/**
 * A handler's `rateLimit` option: at most `limit` runs begin in any sliding `period` — per
 * handler, or per value of an input field with `key`.
 */
export interface RateLimitOption {
  /** Runs that may begin in one window: a whole number from 1 to 100,000. */
  limit: number;
  /** The sliding window: a duration from 1 s to 24 h (`"1m"`, `"30s"`, or ms). */
  period: Duration;
  /** A dotted path into the input (`"customerId"`, `"input.account.id"`): one window per value. */
  key?: string;
}

/** Shortest `period` of a handler's `rateLimit`. */
export const MIN_RATE_PERIOD_MS = 1_000;

/**
 * Check a handler's `rateLimit` option as `validateHandlers` does.
 *
 * @param at - the option's name in messages, e.g. `handlers["email.send"].rateLimit`.
 * @throws TypeError or RangeError naming it, e.g.
 * `handlers["email.send"].rateLimit.period must be a duration from 1s to 24h, got "2d"`.
 */
export function validateRateLimit(at: string, option: unknown): void {
  if (typeof option !== "object" || option === null || Array.isArray(option)) {
    throw new TypeError(`${at} must be { limit, period, key? }, got ${show(option)}`);
  }
  const { limit, period, key, ...rest } = option as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) {
    throw new TypeError(`${at} has an unknown option ${JSON.stringify(unknown[0])}`);
  }
  if (!(Number.isInteger(limit) && (limit as number) >= 1 && (limit as number) <= MAX_RATE_LIMIT)) {
    throw new RangeError(
      `${at}.limit must be a whole number from 1 to ${MAX_RATE_LIMIT}, got ${show(limit)}`,
    );
  }
  if (periodMsOf(period) === undefined) {
    throw new RangeError(
      `${at}.period must be a duration from 1s to 24h (e.g. "1m", or ms), got ${show(period)}`,
    );
  }
  if (key !== undefined && (typeof key !== "string" || parsePath(key) === undefined)) {
    throw new TypeError(
      `${at}.key must be a dotted path into the input (e.g. "customerId" or "account.id", segments of A-Z a-z 0-9 _ $ -, at most 8), got ${show(key)}`,
    );
  }
}

/** The period in ms if it is a duration from 1 s to 24 h, else `undefined`. */
function periodMsOf(period: unknown): number | undefined {
  if (typeof period !== "number" && typeof period !== "string") return undefined;
  const ms = parseDuration(period);
  if (ms === undefined || ms < MIN_RATE_PERIOD_MS || ms > MAX_RATE_PERIOD_MS) return undefined;
  return ms;
}

/** A value as an error message shows it: numbers as JS prints them, the rest as JSON if it can. */
function show(value: unknown): string {
  if (typeof value === "number") return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * The rate limit of a job of handler `name` (defined by `definition`) with `input`, owned by
 * `tenant`; `undefined` for a handler without `rateLimit` (or none found): such a job costs the
 * store nothing extra. The definition is expected to have passed {@link validateRateLimit}.
 *
 * @example
 * await rateLimitOf("report", { rateLimit: { limit: 10, period: "1m" }, run }, "default", {});
 * // { key: "report", limit: 10, periodMs: 60000 }
 * await rateLimitOf("sync", { rateLimit: { limit: 1, period: "1s", key: "account.id" }, run }, "acme", { account: { id: 7 } });
 * // { key: "sync=4:acme:7", limit: 1, periodMs: 1000 }
 */
export async function rateLimitOf(
  name: string,
  definition: HandlerDefinition | undefined,
  tenant: string,
  input: unknown,
): Promise<RateLimit | undefined> {
  const option = definition?.rateLimit;
  if (option === undefined) return undefined;
  const periodMs = periodMsOf(option.period);
  if (periodMs === undefined) return undefined; // refused by validateHandlers
  const path = option.key === undefined ? undefined : parsePath(option.key);
  return { key: await limitKeyOf(name, path, tenant, input), limit: option.limit, periodMs };
}
