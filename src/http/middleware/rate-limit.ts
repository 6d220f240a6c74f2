/**
 * @module
 * The `RateLimit` headers of a quota, as in the IETF draft "RateLimit header fields for HTTP"
 * (draft-ietf-httpapi-ratelimit-headers, the `RateLimit-Limit`/`-Remaining`/`-Reset` form):
 * sent on every write a quota covers, admitted (2xx) or refused (429, with `Retry-After`).
 *
 * - `RateLimit-Limit` — the limit of the window closest to running out;
 * - `RateLimit-Remaining` — writes left in it (0 on a 429);
 * - `RateLimit-Reset` — seconds until it has room again (rounded up);
 * - `RateLimit-Policy` — every window of the quota: `<limit>;w=<seconds>`, comma-separated.
 */
import type { Context } from "hono";
import { QuotaExceededError } from "../../core/errors.ts";
import type { AppEnv } from "../options.ts";

/** Where answer headers go: a Hono `Context`, or the submit route's exchange (`../routes/submit.ts`). */
export interface HeaderSink {
  header(name: string, value: string): unknown;
}

/** A quota's standing and its windows (the broker's `QuotaReport`, or a `QuotaExceededError`). */
export interface RateLimitInfo {
  limit: number;
  remaining: number;
  resetMs: number;
  policy: readonly { windowMs: number; limit: number }[];
}

/**
 * Set the `RateLimit-*` headers on the answer.
 *
 * @example
 * const { job, quota } = await engine.broker.submit(body, actor);
 * if (quota) setRateLimitHeaders(c, quota);
 */
export function setRateLimitHeaders(c: HeaderSink, info: RateLimitInfo): void {
  c.header("RateLimit-Limit", String(info.limit));
  c.header("RateLimit-Remaining", String(Math.max(0, info.remaining)));
  c.header("RateLimit-Reset", String(Math.max(0, Math.ceil(info.resetMs / 1000))));
  if (info.policy.length > 0) {
    c.header(
      "RateLimit-Policy",
      info.policy
        .map((w) => `${w.limit};w=${Math.max(1, Math.ceil(w.windowMs / 1000))}`)
        .join(", "),
    );
  }
}

/**
 * Run `write`; when a quota refuses it (`QuotaExceededError`), set the headers before the 429
 * is rendered.
 */
export async function withRateLimitHeaders<T>(
  c: Context<AppEnv>,
  write: () => Promise<T>,
): Promise<T> {
  try {
    return await write();
  } catch (error) {
    setRefusalHeaders(c, error);
    throw error;
  }
}

/**
 * When `error` is a quota's refusal (`QuotaExceededError`), set the headers of the 429 it is
 * rendered as; anything else is left alone. For a write that catches its error itself.
 */
export function setRefusalHeaders(c: HeaderSink, error: unknown): void {
  if (error instanceof QuotaExceededError) {
    setRateLimitHeaders(c, Object.assign({}, error.quota, { policy: error.policy }));
  }
}
