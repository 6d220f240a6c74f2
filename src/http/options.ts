/**
 * @module
 * Options of the HTTP app, their defaults, and the Hono `Env` every route shares.
 */
import type { Context } from "hono";
import { ConfigValidationError, parseConfig } from "../config/define.ts";
import type { CorsConfig, TenantConfig } from "../config/schema.ts";
import {
  resolveWebhooks,
  unregisteredHandlerIssues,
  type WebhookEndpoint,
  type WebhooksConfig,
} from "../config/webhooks.ts";
import type { Actor } from "../engine/broker.ts";
import type { Engine } from "../engine/index.ts";
import type { Logger } from "../engine/logger.ts";
import { readsHeadersOnly, tenantAuthorize } from "./middleware/auth.ts";
import { normalizeRoles, type Role, type RouteSet, routeSet } from "./roles.ts";
import { resolveStreamConfig, type StreamConfig, StreamSlots } from "./stream/sse.ts";

/** Values middleware puts on the context for the routes. */
export interface AppVariables {
  /** This request's id, echoed in the `x-request-id` response header. */
  requestId: string;
  /** The engine's logger with this request's `requestId`: log through it while handling it. */
  logger: Logger;
  /** Who is acting, as {@link AppOptions.authorize} decided. Set on the API routes only. */
  actor: Actor;
  /**
   * The path the app's routes hang off, as this request reached it: where the app is mounted
   * (`"/api/tickwork"` under `outer.route("/api/tickwork", app)`, `""` when served as it is)
   * followed by {@link AppOptions.basePath}. Paths the app writes into answers (`Location`) start
   * with it, e.g. `` `${c.get("appPath")}/v1/jobs/${id}` ``.
   */
  appPath: string;
}

/** The Hono environment of the app. */
export interface AppEnv {
  Variables: AppVariables;
}

/**
 * Decides who a request acts as. Throw a `TickworkError` with status 401 (no or bad credentials)
 * or 403 (not permitted) to refuse it; it is rendered as problem+json.
 *
 * @example
 * const authorize: Authorize = (c) => {
 *   const key = c.req.header("authorization")?.replace(/^Bearer /, "");
 *   if (key !== "secret") throw new TickworkError(401, "unauthorized", "missing or invalid API key");
 *   return { tenant: "acme" };
 * };
 */
export type Authorize = (c: Context<AppEnv>) => Actor | Promise<Actor>;

/**
 * Where the app runs, as `GET /v1/nodes` reports it (`deployment`): `node` (`startServer`, whose
 * processes register in the node registry), `cloudflare` (`createWorker`) and `vercel`
 * (`createVercelApp`), which are serverless, or `custom` (an app built with `createApp` directly).
 */
export type Platform = "node" | "cloudflare" | "vercel" | "custom";

/** Platforms with no long-lived process: nothing there registers as a node. */
export const SERVERLESS_PLATFORMS: readonly Platform[] = ["cloudflare", "vercel"];

/** Options of {@link createApp}. */
export interface AppOptions {
  /** The engine the routes drive. */
  engine: Engine;
  /**
   * Mount every route (health included) under this path. Not needed to mount the app inside
   * another Hono app: `outer.route("/api/tickwork", app)` works as it is, and paths the app writes
   * into answers (`Location`) follow the mount point either way (both add up).
   * @default "/"
   * @example "/api/tickwork"
   */
  basePath?: string | undefined;
  /**
   * Development mode (`npm run dev`): the API needs no key and `/v1/tick` no secret. Outside dev,
   * `createApp` refuses to build an app whose API routes have no `tenants`, `apiKeys` or
   * `authorize`, or whose `/v1/tick` has no `tickSecret`.
   * @default false
   */
  dev?: boolean | undefined;
  /**
   * The public URL of the app's base path, as the queue delivers to it. Delivery signatures are
   * checked against `publicUrl + "/v1/worker"` (and `/v1/dead`). Set it behind proxies and rewrites,
   * where the URL the function sees differs from the one the queue called.
   * @default the request's own URL
   * @example "https://app.example.com/api/tickwork"
   */
  publicUrl?: string | undefined;
  /**
   * Largest JSON request body, in bytes; bigger ones get 413. Queue deliveries (`/v1/worker`,
   * `/v1/dead`) may be 4× this: they wrap a job's input (the failure callback in base64, twice).
   * @default 1_048_576
   */
  bodyLimitBytes?: number | undefined;
  /**
   * `/v1/tick` needs `Authorization: Bearer <tickSecret>` (Vercel sends `CRON_SECRET` this way);
   * 401 otherwise. Required outside dev when the roles serve the tick, unless `false`: then
   * `/v1/tick` is not served over HTTP at all (a Node server's own timer still ticks).
   */
  tickSecret?: string | false | undefined;
  /**
   * Tenants with hashed API keys, scopes and manifests (`tickwork/config`). A request to the API
   * routes must present a key (`Authorization: Bearer <key>` or `X-Api-Key: <key>`): 401 without
   * one, 403 when its scopes do not cover the route. A tenant sees only its own jobs and
   * schedules. Exclusive with `authorize`.
   */
  tenants?: readonly TenantConfig[] | undefined;
  /**
   * Plain API keys (e.g. `TICKWORK_API_KEY`), each an `admin` key of the tenant `"default"`
   * (with that tenant's manifest when `tenants` has one). Hashed at start; compared like
   * `tenants` keys. Exclusive with `authorize`.
   */
  apiKeys?: readonly string[] | undefined;
  /**
   * Who a request to the API routes (jobs, schedules, dead letters) acts as — a custom scheme
   * instead of `tenants`/`apiKeys`. An actor without `scopes` may do everything.
   * @default () => ({ tenant: "default" }) in dev
   */
  authorize?: Authorize | undefined;
  /**
   * Cross-origin requests from browsers (CORS). Off unless set: browsers on other origins then
   * cannot call the API.
   * @example { origins: ["https://app.example.com"] }
   */
  cors?: CorsConfig | undefined;
  /**
   * Inbound webhook endpoints of the tenant `"default"` (`POST /v1/hooks/:name`,
   * docs/webhooks.md), as `config.webhooks` holds them; each tenant of `tenants` brings its own.
   * Names are unique across tenants. Served where writes are (`config.serves.write`).
   */
  webhooks?: WebhooksConfig | undefined;
  /**
   * Cap of `GET /v1/jobs/:id?wait=`: longer waits are cut to this.
   * @default 30_000
   */
  maxWaitMs?: number | undefined;
  /**
   * The realtime streams (`GET /v1/jobs/:id/stream`, `GET /v1/schedules/:id/stream`): how long
   * one lives (`maxMs`, keep it under the platform's limit on a response), the heartbeat, the
   * poll cadence and the `retry:` hint, in ms, and how many one API key (or, without keys, one
   * tenant) may hold open at once in this process, `maxPerKey` (docs/api.md "Realtime updates").
   * @default { maxMs: 240_000, heartbeatMs: 15_000, pollMs: 1_000, retryMs: 1_000, maxPerKey: 32 }
   */
  stream?: Partial<StreamConfig> | undefined;
  /**
   * The route sets to serve (see {@link Role}); `/health` and `/ready` are always served. A path
   * outside them answers 404, and a method of a path they serve only in part (`POST /v1/jobs` for
   * an `observer`) answers 405 with `Allow`, both as problem+json.
   * @default ["all"]
   * @example ["api", "worker"] // no /v1/tick: the tick runs elsewhere
   */
  roles?: readonly Role[] | undefined;
  /**
   * Where the app runs (see {@link Platform}); the platform entries set it. On a serverless one
   * `GET /v1/nodes` answers an empty list with a note, and `/metrics` has no `tickwork_nodes`.
   * @default "custom"
   */
  platform?: Platform | undefined;
}

/** Options with defaults applied; what the route factories receive. */
export interface AppConfig {
  engine: Engine;
  /** Normalised: `"/"` or `"/a/b"`. */
  basePath: string;
  /**
   * `basePath` without a trailing `/` (`""` at the root). Routes build paths from
   * `c.get("appPath")`, which adds the mount point to it.
   */
  pathPrefix: string;
  dev: boolean;
  publicUrl: string | undefined;
  bodyLimitBytes: number;
  deliveryLimitBytes: number;
  tickSecret: string | undefined;
  /** False when `/v1/tick` is not served over HTTP (`tickSecret: false`). */
  tickRoute: boolean;
  authorize: Authorize;
  /** How requests are authenticated: by key (`tenants`/`apiKeys`), custom, or not at all (dev). */
  auth: "keys" | "custom" | "none";
  cors: CorsConfig | undefined;
  maxWaitMs: number;
  /** The realtime streams' settings, defaults applied. */
  stream: StreamConfig;
  /** The streams each caller holds open, against `stream.maxPerKey`. */
  streamSlots: StreamSlots;
  /** Normalised roles (`["all"]` by default). */
  roles: Role[];
  /** Which groups of routes the roles serve. */
  serves: RouteSet;
  /** Where the app runs (`"custom"` by default). */
  platform: Platform;
  /** Every tenant's webhook endpoints by name (docs/webhooks.md). */
  webhooks: Map<string, WebhookEndpoint>;
}

const DEFAULT_ACTOR: Actor = { tenant: "default" };

/**
 * Apply defaults; throws `RangeError` for a bad base path, limit or role, `TypeError` for a bad
 * URL, `ConfigValidationError` for bad tenants, CORS or webhooks (a webhook's handler the engine
 * does not have included).
 */
export function resolveAppOptions(options: AppOptions): AppConfig {
  const roles = normalizeRoles(options.roles ?? ["all"]);
  const basePath = normalizeBasePath(options.basePath ?? "/");
  const bodyLimitBytes = options.bodyLimitBytes ?? 1_048_576;
  const maxWaitMs = options.maxWaitMs ?? 30_000;
  if (!Number.isInteger(bodyLimitBytes) || bodyLimitBytes <= 0) {
    throw new RangeError("bodyLimitBytes must be a positive integer");
  }
  if (!Number.isFinite(maxWaitMs) || maxWaitMs < 0) throw new RangeError("maxWaitMs must be ≥ 0");
  const publicUrl =
    options.publicUrl === undefined
      ? undefined
      : new URL(options.publicUrl).href.replace(/\/+$/, "");
  const dev = options.dev ?? false;
  const serves = routeSet(roles);
  const tenants = options.tenants ?? [];
  const apiKeys = (options.apiKeys ?? []).map((key) => key.trim()).filter(Boolean);
  const keyed = tenants.length > 0 || apiKeys.length > 0;
  if (keyed && options.authorize) {
    throw new RangeError("pass tenants/apiKeys or authorize, not both");
  }
  if (tenants.length > 0 || options.cors || options.webhooks) {
    // Throws ConfigValidationError naming every problem (bad hash, duplicate key, bad origin,
    // a webhook name used twice or a webhook handler outside its tenant's manifest).
    parseConfig({
      tenants: [...tenants],
      ...(options.cors ? { cors: options.cors } : {}),
      ...(options.webhooks ? { webhooks: options.webhooks } : {}),
    });
    // An endpoint whose handler the engine lacks would answer every delivery 422: fail now.
    const unregistered = unregisteredHandlerIssues(
      { tenants, webhooks: options.webhooks },
      (name) => Object.hasOwn(options.engine.handlers, name),
    );
    if (unregistered.length > 0) {
      throw new ConfigValidationError(
        "createApp()",
        unregistered.map((i) => ({ path: i.path.join("."), message: i.message })),
      );
    }
  }
  if (!dev && serves.read && !keyed && !options.authorize) {
    throw new RangeError(
      "no API key configured: outside dev every API request needs one. Pass tenants (hashed keys " +
        "with scopes; generate one with `npx tickwork hash-key`) or apiKeys, or authorize for a " +
        "scheme of your own; or dev: true for local use.",
    );
  }
  const tickSecret = options.tickSecret === false ? undefined : options.tickSecret || undefined;
  const tickRoute = options.tickSecret !== false;
  if (!dev && serves.tick && tickRoute && tickSecret === undefined) {
    throw new RangeError(
      "no tickSecret: outside dev /v1/tick needs one (set CRON_SECRET, e.g. to the output of " +
        "`openssl rand -hex 24`, and pass it as tickSecret), or pass tickSecret: false to serve " +
        "no tick route over HTTP.",
    );
  }
  const stream = resolveStreamConfig(options.stream);
  return {
    engine: options.engine,
    basePath,
    pathPrefix: basePath === "/" ? "" : basePath,
    dev,
    publicUrl,
    bodyLimitBytes,
    deliveryLimitBytes: bodyLimitBytes * 4,
    tickSecret,
    tickRoute,
    authorize:
      options.authorize ??
      (keyed ? tenantAuthorize(tenants, { apiKeys }) : readsHeadersOnly(() => DEFAULT_ACTOR)),
    auth: options.authorize ? "custom" : keyed ? "keys" : "none",
    cors: options.cors,
    maxWaitMs,
    stream,
    streamSlots: new StreamSlots(stream.maxPerKey, stream.maxMs),
    roles,
    serves,
    platform: options.platform ?? "custom",
    webhooks: resolveWebhooks({ tenants, webhooks: options.webhooks }),
  };
}

/**
 * `path` as `"/"` or `"/a/b"` (no trailing slash).
 * @throws RangeError unless it is a plain URL path.
 */
export function normalizeBasePath(path: string): string {
  const trimmed = `/${path.trim().replace(/^\/+|\/+$/g, "")}`;
  if (!/^\/[A-Za-z0-9._~\-/]*$/.test(trimmed) || trimmed.includes("//")) {
    throw new RangeError(`basePath must be a plain URL path, got ${JSON.stringify(path)}`);
  }
  return trimmed;
}
