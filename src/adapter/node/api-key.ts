/**
 * @module
 * The simplest authorization outside dev: one or more static API keys, all acting as the
 * `default` tenant. (Tenants with hashed keys, scopes and manifests are DESIGN §6.)
 */
import { timingSafeEqual } from "hono/utils/buffer";
import { TickworkError } from "../../core/errors.ts";
import type { Authorize } from "../../http/index.ts";

/**
 * Accept `Authorization: Bearer <key>` for any of `keys` (compared in constant time); 401 with
 * `WWW-Authenticate` otherwise.
 *
 * @example
 * const app = createApp({ engine, authorize: apiKeyAuthorize([process.env.TICKWORK_API_KEY!]) });
 */
export function apiKeyAuthorize(keys: readonly string[]): Authorize {
  const accepted = keys.filter((key) => key.length > 0);
  if (accepted.length === 0)
    throw new RangeError("apiKeyAuthorize needs at least one non-empty key");
  return async function apiKeyAuthorize(c) {
    const presented = /^Bearer +(\S+) *$/i.exec(c.req.header("authorization") ?? "")?.[1];
    if (presented !== undefined) {
      for (const key of accepted) {
        if (await timingSafeEqual(presented, key)) return { tenant: "default" };
      }
    }
    c.header("WWW-Authenticate", 'Bearer realm="tickwork"');
    throw new TickworkError(401, "unauthorized", "missing or invalid API key");
  };
}
