/**
 * @module
 * The deployment resolver: what every platform entry — Node's `startServer`, Cloudflare's
 * `createTickwork` (and `createWorker` through it), Vercel's `createVercelApp` — needs worked out
 * before it builds anything, worked out once: the public URL (normalised) and the queue's
 * delivery URLs, the API keys, the configuration, the roles, the base path, the tick route and the
 * engine's look-ahead. It builds nothing: it returns the options of `createEngine` and
 * `createApp`, or throws a {@link TickworkConfigError} naming the variable and field at fault.
 *
 * Platform settings (which store, which QStash credentials, the port) stay with each platform.
 * No Node modules: Workers run this too.
 */

import {
  type Config,
  ConfigValidationError,
  hasKeys,
  parseConfig,
  type RetentionConfig,
} from "../config/index.ts";
import { TickworkConfigError } from "../core/errors.ts";
import { type EngineOptions, lookAheadFor } from "../engine/options.ts";
import { type AppOptions, normalizeBasePath, type Platform } from "../http/options.ts";
import {
  normalizeRoles,
  parseRoles,
  ROLES,
  type Role,
  type RouteSet,
  routeSet,
} from "../http/roles.ts";
import type { StoreRetention } from "../store/port.ts";

/** The settings every platform has; each names the environment variable it usually comes from. */
export interface DeploymentSettings {
  /**
   * Development mode: no API key needed, `/v1/tick` open without `tickSecret`.
   * @default false
   */
  dev?: boolean | undefined;
  /**
   * `TICKWORK_ROLES`: the route sets served, as a list or as the variable's comma-separated text
   * (blank text is the default).
   * @default ["all"]
   */
  roles?: readonly Role[] | string | undefined;
  /**
   * `TICKWORK_PUBLIC_URL`: where the queue delivers (`/v1/worker`, `/v1/dead`) and what delivery
   * signatures name. Blank is unset. Trailing slashes are dropped.
   * @example "https://jobs.example.com/api/tickwork"
   */
  publicUrl?: string | undefined;
  /**
   * Require `publicUrl` whatever the roles (Workers and Vercel: QStash must always reach the app).
   * Otherwise it is required only when QStash delivers to or for this server.
   * @default false
   */
  requirePublicUrl?: boolean | undefined;
  /**
   * How jobs travel: through QStash (which needs `publicUrl`), the local in-process queue (which
   * delivers to `publicUrl`, else to this server, and then needs this server's `worker` role), or
   * Redis Streams (the servers with the worker role pull: no URL, no signing key), or Cloudflare
   * Queues (the Worker's own `queue()` handler consumes: no URL, no signing key either).
   */
  queue: "qstash" | "local" | "streams" | "cloudflare-queues";
  /**
   * `TICKWORK_SIGNING_KEY`: the local queue's signing key, shared by every server. Required when
   * its deliveries go to `publicUrl` (possibly another server).
   */
  signingKey?: string | undefined;
  /** `TICKWORK_BASE_PATH`: serve every route under this path. Blank is the root. @default "/" */
  basePath?: string | undefined;
  /**
   * `TICKWORK_API_KEY`: plain API keys, as a list or as the variable's comma-separated text;
   * blanks are dropped. Outside dev the API routes need these or tenant keys in `config`.
   */
  apiKeys?: readonly string[] | string | undefined;
  /**
   * `TICKWORK_CONFIG`: tenants, CORS, degradation — a configuration (`defineConfig(…)`, checked
   * again here) or its JSON text.
   */
  config?: Config | string | undefined;
  /**
   * `CRON_SECRET`: required as `Authorization: Bearer <tickSecret>` on `/v1/tick`. Without it,
   * `/v1/tick` is not served over HTTP (in dev it is open).
   */
  tickSecret?: string | undefined;
  /** Engine settings; `config.degradation` applies unless they name `degradation`. */
  engine?: EngineOptions | undefined;
  /**
   * The period of whatever calls the tick (60 s for a once-a-minute platform cron, the timer's
   * period on Node): the tick looks ahead `lookAheadFor` of it (src/engine/options.ts) unless
   * `engine.tick.horizonMs` is given.
   */
  horizonMs: number;
  /**
   * The platform entry resolving this (`node`, `cloudflare`, `vercel`), passed on to the app
   * (`AppOptions.platform`): `GET /v1/nodes` reports it, and lists no nodes on a serverless one.
   * @default "custom"
   */
  platform?: Platform | undefined;
}

/** Where the queue delivers: the worker route and the failure callback. */
export interface DeliveryUrls {
  /** `<publicUrl>/v1/worker` */
  workerUrl: string;
  /** `<publicUrl>/v1/dead` */
  failureCallbackUrl: string;
}

/** What to build: checked, normalised settings, and the options of the engine and the app. */
export interface Deployment {
  dev: boolean;
  /** Normalised (`["all"]` by default). */
  roles: Role[];
  /** What the roles serve. */
  serves: RouteSet;
  /** Without trailing slashes; `undefined` when not set (Node: the server's own URL). */
  publicUrl: string | undefined;
  /** The delivery URLs under `publicUrl`, when it is set. */
  delivery: DeliveryUrls | undefined;
  /** Trimmed, blanks dropped. */
  apiKeys: string[];
  /** The configuration, validated. */
  config: Config | undefined;
  /** Whether any API key exists: `apiKeys`, or a tenant's. */
  keyed: boolean;
  /** Spread into `createEngine` with the store, transport and handlers. */
  engine: EngineOptions;
  /** Spread into `createApp` with the engine. */
  app: Omit<AppOptions, "engine">;
  /** The store's retention from `config.retention` (the store's defaults where left out). */
  retention: Partial<StoreRetention> | undefined;
}

/** A {@link Deployment} whose public URL is known. */
export type PublicDeployment = Deployment & { publicUrl: string; delivery: DeliveryUrls };

/** Where each setting comes from in the environment, for the errors. */
const VARIABLES = {
  roles: "TICKWORK_ROLES",
  publicUrl: "TICKWORK_PUBLIC_URL",
  signingKey: "TICKWORK_SIGNING_KEY",
  basePath: "TICKWORK_BASE_PATH",
  apiKeys: "TICKWORK_API_KEY",
  config: "TICKWORK_CONFIG",
  tickSecret: "CRON_SECRET",
} as const;

function configError(setting: keyof typeof VARIABLES, message: string, cause?: unknown) {
  return new TickworkConfigError(message, { variable: VARIABLES[setting], field: setting, cause });
}

/**
 * Check `settings` and work out what to build.
 * @throws TickworkConfigError (a `ConfigValidationError` for an invalid configuration) naming the
 * variable and field at fault.
 *
 * @example
 * const deployment = resolveDeployment({
 *   publicUrl: env.TICKWORK_PUBLIC_URL,
 *   requirePublicUrl: true,
 *   queue: "qstash",
 *   apiKeys: env.TICKWORK_API_KEY,
 *   tickSecret: env.CRON_SECRET,
 *   horizonMs: 60_000,
 * });
 * const engine = createEngine({
 *   ...deployment.engine,
 *   store,
 *   transport: new QStashTransport({ ...credentials, ...deployment.delivery }),
 *   handlers,
 * });
 * const app = createApp({ ...deployment.app, engine });
 */
export function resolveDeployment(
  settings: DeploymentSettings & { requirePublicUrl: true },
): PublicDeployment;
export function resolveDeployment(settings: DeploymentSettings): Deployment;
export function resolveDeployment(settings: DeploymentSettings): Deployment {
  const dev = settings.dev ?? false;
  const roles = resolveRoles(settings.roles);
  const serves = routeSet(roles);
  const config = resolveConfig(settings.config);
  const apiKeys = splitApiKeys(settings.apiKeys);
  // As with CRON_SECRET below: a key with a space inside cannot be sent as one `Bearer` token
  // (the banner's curl lines and every client would get 401); only `X-Api-Key` carried it.
  if (apiKeys.some((key) => /\s/.test(key))) {
    throw configError(
      "apiKeys",
      "TICKWORK_API_KEY: each key must be one token without spaces or line breaks (it is sent as `Authorization: Bearer <key>`); separate several keys with commas",
    );
  }
  const keyed = apiKeys.length > 0 || hasKeys(config);
  if (!dev && serves.read && !keyed) {
    throw configError(
      "apiKeys",
      "no API key configured: outside dev every API request needs one. Set TICKWORK_API_KEY " +
        "(one admin key; or pass apiKeys), or TICKWORK_CONFIG with tenants whose keys are stored " +
        "as hashes (or pass config); generate a key and its hash with `npx tickwork hash-key`.",
    );
  }
  const publicUrl = normalizePublicUrl(settings.publicUrl);
  checkDeliveries(settings, serves, publicUrl);
  const basePath = resolveBasePath(settings.basePath);
  // A secret with a space inside can never be sent as one `Bearer` token: every tick would be a
  // 401 and the cron would stop without a word. (Blank ones and surrounding space are trimmed
  // by each platform's entry.)
  if (typeof settings.tickSecret === "string" && /\s/.test(settings.tickSecret)) {
    throw configError(
      "tickSecret",
      "CRON_SECRET must be one token without spaces or line breaks (it is sent as `Authorization: Bearer <secret>`)",
    );
  }

  const engine: EngineOptions = {
    ...(config?.degradation !== undefined ? { degradation: config.degradation } : {}),
    ...settings.engine,
    tick: {
      ...settings.engine?.tick,
      horizonMs: settings.engine?.tick?.horizonMs ?? lookAheadFor(settings.horizonMs),
    },
  };
  const app: Omit<AppOptions, "engine"> = {
    dev,
    roles,
    ...(settings.platform !== undefined ? { platform: settings.platform } : {}),
    ...(publicUrl !== undefined ? { publicUrl } : {}),
    ...(basePath !== undefined ? { basePath } : {}),
    // Without a secret: open in dev; otherwise no HTTP tick route (a Node server's timer ticks).
    ...(settings.tickSecret
      ? { tickSecret: settings.tickSecret }
      : dev
        ? {}
        : { tickSecret: false as const }),
    ...(apiKeys.length > 0 ? { apiKeys } : {}),
    ...(config?.tenants?.length ? { tenants: config.tenants } : {}),
    ...(config?.cors ? { cors: config.cors } : {}),
    ...(config?.webhooks ? { webhooks: config.webhooks } : {}),
  };
  return {
    dev,
    roles,
    serves,
    publicUrl,
    delivery: publicUrl === undefined ? undefined : deliveryUrls(publicUrl),
    apiKeys,
    config,
    keyed,
    engine,
    app,
    retention: storeRetention(config?.retention),
  };
}

/** `config.retention` as the stores take it: the settings it names, no others. */
function storeRetention(
  retention: RetentionConfig | undefined,
): Partial<StoreRetention> | undefined {
  if (!retention) return undefined;
  const out: Partial<StoreRetention> = {};
  if (retention.jobMs !== undefined) out.jobMs = retention.jobMs;
  if (retention.idempotencyMs !== undefined) out.idempotencyMs = retention.idempotencyMs;
  if (retention.maxFinishedJobs !== undefined) out.maxFinishedJobs = retention.maxFinishedJobs;
  if (retention.maxRunsPerSchedule !== undefined) {
    out.maxRunsPerSchedule = retention.maxRunsPerSchedule;
  }
  return out;
}

/**
 * The queue's delivery URLs under `base` (a public URL without trailing slash).
 *
 * @example
 * deliveryUrls("https://jobs.example.com");
 * // { workerUrl: "https://jobs.example.com/v1/worker", failureCallbackUrl: "https://jobs.example.com/v1/dead" }
 */
export function deliveryUrls(base: string): DeliveryUrls {
  return { workerUrl: `${base}/v1/worker`, failureCallbackUrl: `${base}/v1/dead` };
}

/**
 * API keys from a list or from `TICKWORK_API_KEY`'s comma-separated text: trimmed, blanks dropped.
 *
 * @example
 * splitApiKeys(" a, ,b "); // ["a", "b"]
 */
export function splitApiKeys(keys: readonly string[] | string | undefined): string[] {
  const list = typeof keys === "string" ? keys.split(",") : (keys ?? []);
  return list.map((key) => key.trim()).filter(Boolean);
}

/**
 * A public URL without trailing slashes; `undefined` for none (blank).
 * @throws TickworkConfigError naming `TICKWORK_PUBLIC_URL` when it is not a URL.
 */
export function normalizePublicUrl(url: string | undefined): string | undefined {
  if (url === undefined || url.trim() === "") return undefined;
  try {
    return new URL(url).href.replace(/\/+$/, "");
  } catch (error) {
    // The value is not shown: a credential pasted into the wrong variable would be.
    throw configError(
      "publicUrl",
      `publicUrl (TICKWORK_PUBLIC_URL) is not a URL${url.includes("://") ? "" : " (it needs its scheme: https://…)"}`,
      error,
    );
  }
}

function resolveRoles(roles: DeploymentSettings["roles"]): Role[] {
  try {
    if (typeof roles !== "string") return normalizeRoles(roles ?? ["all"]);
    return roles.trim() === "" ? ["all"] : parseRoles(roles);
  } catch (error) {
    const message = (error as Error).message;
    // From the variable: named, its value not shown (Vercel answers configuration errors to any
    // request, and a credential pasted into the wrong variable would be in it).
    throw configError(
      "roles",
      typeof roles === "string"
        ? `TICKWORK_ROLES names no known role, or an unknown one (its value is not shown; roles: ${ROLES.join(", ")})`
        : message,
      error,
    );
  }
}

function resolveConfig(config: DeploymentSettings["config"]): Config | undefined {
  if (config === undefined) return undefined;
  // JSON text comes from the variable; an object was passed in code.
  const source = typeof config === "string" ? VARIABLES.config : "config";
  try {
    return parseConfig(config, source);
  } catch (error) {
    if (!(error instanceof ConfigValidationError)) throw error;
    throw new ConfigValidationError(source, error.issues, {
      variable: VARIABLES.config,
      cause: error,
    });
  }
}

function resolveBasePath(basePath: string | undefined): string | undefined {
  if (basePath === undefined || basePath.trim() === "") return undefined;
  try {
    return normalizeBasePath(basePath);
  } catch (error) {
    // Its value not shown, as for every variable (see resolveRoles).
    throw configError(
      "basePath",
      "basePath (TICKWORK_BASE_PATH) must be a plain URL path such as /api/tickwork (its value is not shown)",
      error,
    );
  }
}

/** Refuse a setup whose deliveries could not arrive, or could not be verified where they do. */
function checkDeliveries(
  settings: DeploymentSettings,
  serves: RouteSet,
  publicUrl: string | undefined,
): void {
  const needsQueue = serves.write || serves.tick || serves.worker;
  if (!publicUrl && (settings.requirePublicUrl || (needsQueue && settings.queue === "qstash"))) {
    throw configError(
      "publicUrl",
      "QStash needs the public URL of this app to deliver to: set TICKWORK_PUBLIC_URL (or " +
        "pass publicUrl), e.g. https://jobs.example.com",
    );
  }
  // An observer publishes nothing and receives nothing; Streams workers pull from Redis and a
  // Worker consumes its Cloudflare Queue (no delivery URL, nothing to sign).
  const pulled = settings.queue === "streams" || settings.queue === "cloudflare-queues";
  if (!needsQueue || settings.queue === "qstash" || pulled) return;
  if (!publicUrl && !serves.worker) {
    throw configError(
      "publicUrl",
      "the local queue delivers to /v1/worker, which this server does not serve (its roles lack " +
        "worker). Set TICKWORK_PUBLIC_URL to the URL of the servers with the worker role and the " +
        "same TICKWORK_SIGNING_KEY on all of them, or use QStash (QSTASH_TOKEN).",
    );
  }
  if (publicUrl && !settings.signingKey) {
    throw configError(
      "signingKey",
      `the local queue delivers to ${publicUrl}/v1/worker, which may be another server, and ` +
        "deliveries are checked with the receiver's signing key: set the same " +
        "TICKWORK_SIGNING_KEY (or signingKey) on every server, e.g. $(openssl rand -hex 32).",
    );
  }
}

/**
 * An Upstash client made by `make`; a URL the client refuses (`https:/host`, one slash, passes
 * `new URL`) is a `TickworkConfigError` naming `variable`, not a stack at import.
 *
 * @example
 * const redis = upstashClient(() => new Redis({ url, token }), "UPSTASH_REDIS_REST_URL");
 */
export function upstashClient<R>(make: () => R, variable: string): R {
  try {
    return make();
  } catch (error) {
    throw new TickworkConfigError(
      // Not the client's own message: it may quote the value.
      `tickwork: ${variable} is not an Upstash REST URL (https://<name>.upstash.io; its value is not shown)`,
      { variable, cause: error },
    );
  }
}
