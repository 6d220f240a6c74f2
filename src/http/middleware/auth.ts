/**
 * @module
 * Who may call what: the API routes ask {@link Authorize} for an actor; the tick route checks a
 * shared secret (Vercel Cron sends `Authorization: Bearer $CRON_SECRET`). The worker and dead-letter
 * callback routes are authenticated by the queue's delivery signature, inside the runner.
 */
import type { MiddlewareHandler } from "hono";
import { timingSafeEqual } from "hono/utils/buffer";
import { TickworkError } from "../../core/errors.ts";
import type { AppEnv, Authorize } from "../options.ts";

/**
 * Sets `c.get("actor")` from `authorize`, which may throw a 401 or 403 `TickworkError`.
 *
 * @example
 * app.use("/v1/jobs/*", authorizeRequest(() => ({ tenant: "default" })));
 */
export function authorizeRequest(authorize: Authorize): MiddlewareHandler<AppEnv> {
  return async function authorizeRequest(c, next) {
    c.set("actor", await authorize(c));
    await next();
  };
}

/**
 * When `secret` is set, requires `Authorization: Bearer <secret>` (compared in constant time);
 * 401 with `WWW-Authenticate` otherwise. Without a secret, lets everything through.
 *
 * @example
 * app.post("/v1/tick", requireTickSecret(process.env.CRON_SECRET), handler);
 */
export function requireTickSecret(secret: string | undefined): MiddlewareHandler<AppEnv> {
  return async function requireTickSecret(c, next) {
    if (secret !== undefined) {
      const presented = /^Bearer +(\S+) *$/i.exec(c.req.header("authorization") ?? "")?.[1];
      if (presented === undefined || !(await timingSafeEqual(presented, secret))) {
        c.header("WWW-Authenticate", 'Bearer realm="tickwork"');
        throw new TickworkError(401, "unauthorized", "missing or invalid tick secret");
      }
    }
    await next();
  };
}
