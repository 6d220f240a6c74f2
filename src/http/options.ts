/**
 * @module
 * Options of the HTTP app, their defaults, and the Hono `Env` every route shares.
 */
import type { Context } from "hono";
import type { Actor } from "../engine/broker.ts";
import type { Engine } from "../engine/index.ts";
import { normalizeRoles, type Role, type RouteSet, routeSet } from "./roles.ts";

/** Values middleware puts on the context for the routes. */
export interface AppVariables {
  /** This request's id, echoed in the `x-request-id` response header. */
  requestId: string;
  /** Who is acting, as {@link AppOptions.authorize} decided. Set on the API routes only. */
  actor: Actor;
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

/** Options of {@link createApp}. */
export interface AppOptions {
  /** The engine the routes drive. */
  engine: Engine;
  /**
   * Mount every route (health included) under this path.
   * @default "/"
   * @example "/api/tickwork"
   */
  basePath?: string;
  /**
   * Development mode (`npm run dev`): a missing `tickSecret` is expected, not warned about.
   * @default false
   */
  dev?: boolean;
  /**
   * The public URL of the app's base path, as the queue delivers to it. Delivery signatures are
   * checked against `publicUrl + "/v1/worker"` (and `/v1/dead`). Set it behind proxies and rewrites,
   * where the URL the function sees differs from the one the queue called.
   * @default the request's own URL
   * @example "https://app.example.com/api/tickwork"
   */
  publicUrl?: string;
  /**
   * Largest JSON request body, in bytes; bigger ones get 413. Queue deliveries (`/v1/worker`,
   * `/v1/dead`) may be 4× this: they wrap a job's input (the failure callback in base64, twice).
   * @default 1_048_576
   */
  bodyLimitBytes?: number;
  /**
   * When set, `/v1/tick` needs `Authorization: Bearer <tickSecret>` (Vercel sends `CRON_SECRET`
   * this way); 401 otherwise.
   */
  tickSecret?: string;
  /**
   * Who a request to the API routes (jobs, schedules, dead letters) acts as.
   * @default () => ({ tenant: "default" })
   */
  authorize?: Authorize;
  /**
   * Cap of `GET /v1/jobs/:id?wait=`: longer waits are cut to this.
   * @default 30_000
   */
  maxWaitMs?: number;
  /**
   * The route sets to serve (see {@link Role}); `/health` and `/ready` are always served. A path
   * outside them answers 404, and a method of a path they serve only in part (`POST /v1/jobs` for
   * an `observer`) answers 405 with `Allow`, both as problem+json.
   * @default ["all"]
   * @example ["api", "worker"] // no /v1/tick: the tick runs elsewhere
   */
  roles?: readonly Role[];
}

/** Options with defaults applied; what the route factories receive. */
export interface AppConfig {
  engine: Engine;
  /** Normalised: `"/"` or `"/a/b"`. */
  basePath: string;
  /** `basePath` without a trailing `/` (`""` at the root): prepend it to build paths for `Location`. */
  pathPrefix: string;
  dev: boolean;
  publicUrl: string | undefined;
  bodyLimitBytes: number;
  deliveryLimitBytes: number;
  tickSecret: string | undefined;
  authorize: Authorize;
  maxWaitMs: number;
  /** Normalised roles (`["all"]` by default). */
  roles: Role[];
  /** Which groups of routes the roles serve. */
  serves: RouteSet;
}

const DEFAULT_ACTOR: Actor = { tenant: "default" };

/**
 * Apply defaults; throws `RangeError` for a bad base path, limit or role, `TypeError` for a bad
 * URL.
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
  return {
    engine: options.engine,
    basePath,
    pathPrefix: basePath === "/" ? "" : basePath,
    dev: options.dev ?? false,
    publicUrl:
      options.publicUrl === undefined
        ? undefined
        : new URL(options.publicUrl).href.replace(/\/+$/, ""),
    bodyLimitBytes,
    deliveryLimitBytes: bodyLimitBytes * 4,
    tickSecret: options.tickSecret || undefined,
    authorize: options.authorize ?? (() => DEFAULT_ACTOR),
    maxWaitMs,
    roles,
    serves: routeSet(roles),
  };
}

function normalizeBasePath(path: string): string {
  const trimmed = `/${path.trim().replace(/^\/+|\/+$/g, "")}`;
  if (!/^\/[A-Za-z0-9._~\-/]*$/.test(trimmed) || trimmed.includes("//")) {
    throw new RangeError(`basePath must be a plain URL path, got ${JSON.stringify(path)}`);
  }
  return trimmed;
}
