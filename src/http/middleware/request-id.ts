/**
 * @module
 * Every answer carries `x-request-id`: the caller's own when it looks like an id, else a fresh one.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../options.ts";

const HEADER = "x-request-id";
/** What we accept from a caller: short, and safe to log and echo. */
const SANE_ID = /^[A-Za-z0-9._:=-]{1,128}$/;

/**
 * Sets `c.get("requestId")` and the `x-request-id` header of the answer — also of answers a
 * route passes through as they are (the worker's).
 *
 * @example
 * app.use(requestId());
 */
export function requestId(): MiddlewareHandler<AppEnv> {
  return async function requestId(c, next) {
    const incoming = c.req.header(HEADER);
    const id = incoming !== undefined && SANE_ID.test(incoming) ? incoming : crypto.randomUUID();
    c.set("requestId", id);
    c.header(HEADER, id);
    await next();
    if (c.res.headers.get(HEADER) === id) return;
    try {
      c.res.headers.set(HEADER, id);
    } catch {
      // Immutable headers (a Response from fetch): copy it.
      c.res = new Response(c.res.body, c.res);
      c.res.headers.set(HEADER, id);
    }
  };
}
