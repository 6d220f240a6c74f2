/**
 * @module
 * The tickwork app for Vercel, built from an environment: state in Upstash Redis (REST), jobs
 * delivered by QStash to `/v1/worker`, and `/v1/tick` called once a minute by Vercel Cron
 * (`vercel.json`) with `Authorization: Bearer $CRON_SECRET`.
 *
 * The environment (`process.env` on Vercel):
 *
 * - `UPSTASH_REDIS_REST_URL` + `UPSTASH_REDIS_REST_TOKEN` (or the Vercel Marketplace's
 *   `KV_REST_API_URL` + `KV_REST_API_TOKEN`) — required
 * - `QSTASH_TOKEN`, `QSTASH_CURRENT_SIGNING_KEY`, `QSTASH_NEXT_SIGNING_KEY` (+ `QSTASH_URL`) —
 *   required
 * - `TICKWORK_PUBLIC_URL` — where QStash delivers; default `https://$VERCEL_PROJECT_PRODUCTION_URL`
 *   followed by the base path
 * - `CRON_SECRET` — required: Vercel Cron sends it, `/v1/tick` checks it
 * - `TICKWORK_API_KEY` — API key(s) for the API routes, comma-separated, each an admin key; required
 *   unless `TICKWORK_CONFIG` has tenant keys
 * - `TICKWORK_CONFIG` — tenants with hashed keys, scopes and manifests, CORS, degradation: a JSON
 *   file shipped with the function, or the JSON itself (schema `schema/tickwork.config.schema.json`)
 * - `TICKWORK_PREFIX` (default `tw`), `TICKWORK_ROLES` (default `all`), `TICKWORK_BASE_PATH`
 *   (default `/`: the routes' path when the app is served under one, e.g. `/api/tickwork`)
 */
import { Redis } from "@upstash/redis";
import { Hono } from "hono";
import { hasKeys } from "../../config/index.ts";
import { TickworkConfigError } from "../../core/errors.ts";
import type { Handlers } from "../../engine/handlers.ts";
import { createEngine } from "../../engine/index.ts";
import { type AppEnv, createApp, PROBLEM_JSON } from "../../http/index.ts";
import { normalizeBasePath } from "../../http/options.ts";
import { RedisStore } from "../../store/redis/index.ts";
import { QStashTransport } from "../../transport/qstash/index.ts";
import { resolveDeployment, splitApiKeys, upstashClient } from "../deployment.ts";
import { loadConfig } from "../node/config.ts";
import { type Env, selectQStash, selectStore } from "../node/env.ts";
import { ConfigError } from "../node/errors.ts";

/** Vercel Cron calls `/v1/tick` once a minute: dispatch a minute ahead, each at its time. */
const TICK_HORIZON_MS = 60_000;
/**
 * Vercel Cron fires anywhere within its minute, so two ticks can be nearly two minutes apart:
 * the look-ahead covers that (README, "Precision"), not only the 5 s margin `lookAheadFor` adds.
 */
const TICK_LOOK_AHEAD_MS = 120_000;

/** What {@link createVercelApp} needs besides the environment. */
export interface VercelAppOptions {
  /** The handlers jobs and schedules may name. */
  handlers: Handlers;
  /**
   * Serve every route under this path, e.g. from a Next.js route handler at
   * `app/api/tickwork/[...route]/route.ts` (`"/api/tickwork"`); `TICKWORK_PUBLIC_URL` then names
   * the same path. @default `TICKWORK_BASE_PATH`, else "/"
   */
  basePath?: string | undefined;
}

/**
 * The app for `env`. A configuration it cannot run with (a `TickworkConfigError`: a missing
 * variable, a malformed URL or base path, an invalid `TICKWORK_CONFIG`) gives an app that answers
 * every request with a 500 problem naming the variables to set (the values are never shown), and
 * logs it once.
 *
 * @example
 * // src/index.ts — Vercel runs a Hono app exported by default with zero configuration
 * import { createVercelApp } from "tickwork/vercel";
 * import { handlers } from "./tickwork/handlers";
 *
 * export default createVercelApp(process.env, { handlers });
 */
export function createVercelApp(env: Env, options: VercelAppOptions): Hono<AppEnv> {
  try {
    return buildApp(env, options);
  } catch (error) {
    if (!(error instanceof TickworkConfigError)) throw error;
    console.error(`tickwork: ${error.message}`);
    return misconfigured(error.message);
  }
}

function buildApp(env: Env, { handlers, basePath }: VercelAppOptions): Hono<AppEnv> {
  const store = selectStore(env);
  const qstash = selectQStash(env);
  const production = env.VERCEL_PROJECT_PRODUCTION_URL;
  const base = basePath ?? env.TICKWORK_BASE_PATH;
  // The default names the base path too: the delivery routes are served under it.
  const publicUrl =
    env.TICKWORK_PUBLIC_URL ||
    (production ? `https://${production}${underBasePath(base)}` : undefined);
  // Trimmed, as the Node server reads it: `echo s | vercel env add` stores "s\n", and Vercel
  // Cron sends `Bearer s`; a blank one is none.
  const cronSecret = env.CRON_SECRET?.trim() || undefined;
  const apiKeys = splitApiKeys(env.TICKWORK_API_KEY);
  const config = env.TICKWORK_CONFIG ? loadConfig(env.TICKWORK_CONFIG) : undefined;
  const keyed = apiKeys.length > 0 || hasKeys(config);
  if (store.kind !== "upstash" || !qstash || !publicUrl || !cronSecret || !keyed) {
    const missing = [
      ...(store.kind === "upstash" ? [] : ["UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN"]),
      ...(qstash ? [] : ["QSTASH_TOKEN", "QSTASH_CURRENT_SIGNING_KEY", "QSTASH_NEXT_SIGNING_KEY"]),
      ...(publicUrl ? [] : ["TICKWORK_PUBLIC_URL"]),
      ...(cronSecret ? [] : ["CRON_SECRET"]),
      ...(keyed ? [] : ["TICKWORK_API_KEY (or TICKWORK_CONFIG with tenant keys)"]),
    ];
    throw new ConfigError(
      `tickwork on Vercel needs ${missing.join(", ")}: set them in the project's Environment ` +
        "Variables and redeploy." +
        (store.kind === "redis" ? " (REDIS_URL, Redis over TCP, is for Node servers.)" : ""),
      { variable: missing[0]?.split(" ")[0] },
    );
  }
  const deployment = resolveDeployment({
    publicUrl,
    requirePublicUrl: true,
    queue: "qstash",
    roles: env.TICKWORK_ROLES,
    basePath: base,
    apiKeys,
    config,
    tickSecret: cronSecret,
    horizonMs: TICK_HORIZON_MS,
    engine: { tick: { horizonMs: TICK_LOOK_AHEAD_MS } },
    platform: "vercel",
  });
  const engine = createEngine({
    ...deployment.engine,
    store: new RedisStore({
      client: upstashClient(
        () => new Redis({ url: store.url, token: store.token }),
        env.UPSTASH_REDIS_REST_URL?.trim() ? "UPSTASH_REDIS_REST_URL" : "KV_REST_API_URL",
      ),
      ...(env.TICKWORK_PREFIX ? { prefix: env.TICKWORK_PREFIX } : {}),
      ...(deployment.retention ? { retention: deployment.retention } : {}),
    }),
    transport: new QStashTransport({ ...qstash, ...deployment.delivery }),
    handlers,
  });
  return createApp({ ...deployment.app, engine });
}

/** The base path as a URL path suffix: `""` at the root, blank, or not a plain path (refused later). */
function underBasePath(basePath: string | undefined): string {
  if (basePath === undefined || basePath.trim() === "") return "";
  try {
    const path = normalizeBasePath(basePath);
    return path === "/" ? "" : path;
  } catch {
    return "";
  }
}

/** Every request: 500, with what to fix. */
function misconfigured(detail: string): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.all("*", (c) =>
    c.body(
      JSON.stringify({
        type: "urn:tickwork:problem:misconfigured",
        title: "Internal Server Error",
        status: 500,
        detail,
      }),
      500,
      { "Content-Type": PROBLEM_JSON },
    ),
  );
  return app;
}
