/**
 * @module
 * The simplest authorization outside dev: one or more plain API keys (`TICKWORK_API_KEY`), each
 * an `admin` key of the tenant `"default"`. Kept for compatibility; tenants with hashed keys,
 * scopes and manifests are configured with `tenants` (see `tickwork/config`).
 */
import type { Authorize } from "../../http/index.ts";
import { tenantAuthorize } from "../../http/middleware/auth.ts";

/**
 * Accept `Authorization: Bearer <key>` (or `X-Api-Key: <key>`) for any of `keys`: hashed at
 * start, compared in constant time; 401 with `WWW-Authenticate` otherwise.
 *
 * @example
 * const app = createApp({ engine, authorize: apiKeyAuthorize([process.env.TICKWORK_API_KEY!]) });
 * // the same as createApp({ engine, apiKeys: [process.env.TICKWORK_API_KEY!] })
 */
export function apiKeyAuthorize(keys: readonly string[]): Authorize {
  const accepted = keys.map((key) => key.trim()).filter((key) => key.length > 0);
  if (accepted.length === 0)
    throw new RangeError("apiKeyAuthorize needs at least one non-empty key");
  return tenantAuthorize([], { apiKeys: accepted });
}
