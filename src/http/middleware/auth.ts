/**
 * @module
 * Who may call what: the API routes ask {@link Authorize} for an actor — by default
 * {@link tenantAuthorize}, which finds the tenant of a presented API key by its hash — and each
 * route then checks the actor's scope (`./scope.ts`); the tick route checks a shared secret
 * (Vercel Cron sends `Authorization: Bearer $CRON_SECRET`). The worker and dead-letter callback
 * routes are authenticated by the queue's delivery signature, inside the runner.
 */
import type { MiddlewareHandler } from "hono";
import { timingSafeEqual } from "hono/utils/buffer";
import { hashKey, KeyRing } from "../../config/keys.ts";
import type { TenantConfig } from "../../config/schema.ts";
import { TickworkError } from "../../core/errors.ts";
import type { Actor } from "../../engine/broker.ts";
import type { AppEnv, Authorize } from "../options.ts";

/**
 * The part of a request an authorizer of this module reads and writes: request headers, and
 * headers of the answer (the 401's challenge). A Hono `Context` is one; so is the exchange of the
 * direct submit route (`../direct-submit.ts`), which is why these authorizers can serve it.
 */
export interface HeaderExchange {
  req: { header(name: string): string | undefined };
  header(name: string, value: string): void;
}

/** Authorizers that read only a {@link HeaderExchange}: the built-in ones (see {@link headerOnly}). */
const HEADER_ONLY = new WeakSet<Authorize>();

/**
 * `authorize` when it reads nothing of a request but its headers (the built-in authorizers):
 * typed for a {@link HeaderExchange}. `undefined` for a custom `Authorize`, which may read
 * anything of Hono's `Context`.
 */
export function headerOnly(
  authorize: Authorize,
): ((x: HeaderExchange) => Actor | Promise<Actor>) | undefined {
  return HEADER_ONLY.has(authorize) ? (authorize as (x: HeaderExchange) => Actor) : undefined;
}

/** Mark `authorize` as reading only a {@link HeaderExchange}; returns it. */
export function readsHeadersOnly(
  authorize: (x: HeaderExchange) => Actor | Promise<Actor>,
): Authorize {
  HEADER_ONLY.add(authorize);
  return authorize;
}

/** The `WWW-Authenticate` challenge of a 401 (RFC 6750). */
const REALM = 'Bearer realm="tickwork"';

/**
 * Authenticate API keys: `Authorization: Bearer <key>` or `X-Api-Key: <key>`. The key is hashed
 * (SHA-256) and compared with every configured hash in constant time (see `KeyRing`); the actor
 * is the key's tenant, its scopes and the tenant's manifest. `apiKeys` are plain keys (such as
 * `TICKWORK_API_KEY`), each an `admin` key of the tenant `"default"`. 401 with
 * `WWW-Authenticate` when no key is presented or it matches none. Neither the key nor its hash
 * is ever logged or echoed.
 *
 * @example
 * const authorize = tenantAuthorize([
 *   { id: "acme", keys: [{ hash: "sha256:…", scopes: ["jobs:write", "read"] }] },
 * ]);
 * const app = createApp({ engine, authorize }); // or createApp({ engine, tenants })
 */
export function tenantAuthorize(
  tenants: readonly TenantConfig[],
  options: { apiKeys?: readonly string[] } = {},
): Authorize {
  const plain = [...new Set((options.apiKeys ?? []).map((key) => key.trim()).filter(Boolean))];
  const defaultTenant = tenants.find((tenant) => tenant.id === "default");
  const entries = tenants.flatMap((tenant) =>
    tenant.keys.map((key) => ({ hash: key.hash, value: actorOf(tenant, key.scopes, key.id) })),
  );
  // Plain keys are hashed once, before the first request is answered (Web Crypto is async).
  const ring = Promise.all(plain.map(hashKey)).then(
    (hashes) =>
      new KeyRing([
        ...entries,
        ...hashes.map((hash, i) => ({
          hash,
          value: actorOf(
            defaultTenant ?? { id: "default" },
            ["admin"],
            `TICKWORK_API_KEY#${i + 1}`,
          ),
        })),
      ]),
  );
  // Once hashed, a request reads the ring without waiting for the promise again.
  let ready: KeyRing<Actor> | undefined;
  void ring.then(
    (r) => {
      ready = r;
    },
    () => {},
  );
  // Not async: the actor of a key that matched before is found at once, no promise per request.
  return readsHeadersOnly(function tenantAuthorize(c) {
    const presented = presentedKey(c);
    if (presented === undefined) {
      throw unauthorized(
        c,
        REALM,
        "missing API key: send Authorization: Bearer <key> (or X-Api-Key: <key>)",
      );
    }
    const actor = ready ? ready.lookup(presented) : ring.then((r) => r.find(presented));
    return actor instanceof Promise ? actor.then((a) => matched(c, a)) : matched(c, actor);
  });
}

/** The actor of a presented key; 401 when the key matched none. */
function matched(c: HeaderExchange, actor: Actor | undefined): Actor {
  if (!actor) throw unauthorized(c, `${REALM}, error="invalid_token"`, "invalid API key");
  return actor;
}

/** The key a request presents, if any: the bearer token, else `X-Api-Key`. */
function presentedKey(c: HeaderExchange): string | undefined {
  const authorization = c.req.header("authorization");
  if (authorization !== undefined && authorization.trim() !== "") {
    // A malformed Authorization header presents an empty key: it matches nothing (401).
    return /^Bearer +(\S+) *$/i.exec(authorization)?.[1] ?? "";
  }
  const header = c.req.header("x-api-key")?.trim();
  return header ? header : undefined;
}

function actorOf(
  tenant: Pick<TenantConfig, "id" | "manifest">,
  scopes: Actor["scopes"],
  keyId: string | undefined,
): Actor {
  return Object.freeze({
    tenant: tenant.id,
    scopes: Object.freeze([...(scopes ?? [])]),
    ...(tenant.manifest ? { manifest: tenant.manifest } : {}),
    ...(keyId !== undefined ? { keyId } : {}),
  });
}

function unauthorized(c: HeaderExchange, challenge: string, message: string): TickworkError {
  c.header("WWW-Authenticate", challenge);
  return new TickworkError(401, "unauthorized", message);
}

/**
 * Sets `c.get("actor")` from `authorize`, which may throw a 401 or 403 `TickworkError`.
 *
 * @example
 * app.use("/v1/jobs/*", authorizeRequest(() => ({ tenant: "default" })));
 */
export function authorizeRequest(authorize: Authorize): MiddlewareHandler<AppEnv> {
  return async function authorizeRequest(c, next) {
    // Awaited only when it is a promise (a known key's actor is found at once).
    const actor = authorize(c);
    c.set("actor", actor instanceof Promise ? await actor : actor);
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
        throw unauthorized(c, REALM, "missing or invalid tick secret");
      }
    }
    await next();
  };
}
