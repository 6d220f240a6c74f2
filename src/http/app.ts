/**
 * @module
 * The HTTP app factory: the routes of docs/api.md over an engine, as one Hono app.
 */
import { Hono } from "hono";
import { attachDirectSubmit } from "./direct-submit.ts";
import { appPathResolver } from "./middleware/app-path.ts";
import { corsMiddleware } from "./middleware/cors.ts";
import { answerMethodNotAllowed } from "./middleware/method-not-allowed.ts";
import { requestId } from "./middleware/request-id.ts";
import { type AppEnv, type AppOptions, resolveAppOptions } from "./options.ts";
import { notFoundHandler, renderError } from "./problem.ts";
import { flowRoutes } from "./routes/flows.ts";
import { healthRoutes } from "./routes/health.ts";
import { hookIngestRoutes, hookListRoutes } from "./routes/hooks.ts";
import { jobRoutes } from "./routes/jobs.ts";
import { nodesRoutes } from "./routes/nodes.ts";
import { observabilityRoutes } from "./routes/observability.ts";
import { queueRoutes } from "./routes/queue.ts";
import { scheduleRoutes } from "./routes/schedules.ts";

/**
 * Build the tickwork HTTP app: jobs, schedules, tick, worker, dead letters and health, under
 * `basePath` — or only the route sets of `roles`. Every error is answered as
 * `application/problem+json`; every answer carries `x-request-id`. Serve it with any Hono
 * adapter, or call `app.fetch(request)`.
 *
 * @example
 * import { serve } from "@hono/node-server";
 * import { createEngine } from "tickwork";
 * import { createApp } from "tickwork/http";
 *
 * const engine = createEngine({ store, transport, handlers });
 * const app = createApp({
 *   engine,
 *   basePath: "/api/tickwork",
 *   tickSecret: process.env.CRON_SECRET,
 *   tenants: config.tenants, // defineConfig(…) from tickwork/config: hashed keys, scopes, manifests
 * });
 * serve({ fetch: app.fetch, port: 3000 });
 * // POST /api/tickwork/v1/jobs {"handler":"email.send","input":{"to":"a@b.c"}}
 * //   with Authorization: Bearer <key> → 202, Location: /api/tickwork/v1/jobs/<id>
 *
 * @example
 * // Inside an app of your own: no basePath needed, the answers follow the mount point.
 * const site = new Hono();
 * site.route("/api/tickwork", createApp({ engine, apiKeys: [process.env.TICKWORK_API_KEY!] }));
 * // POST /api/tickwork/v1/jobs → Location: /api/tickwork/v1/jobs/<id>
 *
 * @example
 * // A service that only runs what the queue delivers: /v1/worker, /v1/dead, /health, /ready.
 * const worker = createApp({ engine, roles: ["worker"], publicUrl: "https://worker.example.com" });
 */
export function createApp(options: AppOptions): Hono<AppEnv> {
  const config = resolveAppOptions(options);
  const { logger } = config.engine.options;

  // `root` serves every path (so answers outside the base path get a request id and a problem
  // body too); `app` shares its router and adds the base path to the routes it registers.
  const root = new Hono<AppEnv>();
  // On `root`, before the base path: its own route's base path is then where the app is mounted
  // (`c.get("appPath")`, see ./middleware/app-path.ts).
  root.use(requestId(logger, appPathResolver(config.pathPrefix)));
  if (config.cors) root.use(corsMiddleware(config.cors));
  const app = root.basePath(config.basePath);
  app.route("/", healthRoutes(config));
  // Not mounted at all outside the roles, so their auth middleware never turns a 404 into a 401.
  if (config.serves.read) {
    app.route("/v1/jobs", jobRoutes(config));
    app.route("/v1/schedules", scheduleRoutes(config));
    app.route("/", observabilityRoutes(config));
    app.route("/", nodesRoutes(config));
    app.route("/v1/hooks", hookListRoutes(config));
  }
  // Inbound webhooks: authenticated by their senders' signatures, served where writes are.
  if (config.serves.write) {
    app.route("/v1/hooks", hookIngestRoutes(config));
    app.route("/v1/flows", flowRoutes(config));
  }
  app.route("/v1", queueRoutes(config));
  const note = config.roles.includes("all")
    ? undefined
    : `roles served: ${config.roles.join(", ")}`;
  answerMethodNotAllowed(root, note);

  app.notFound(notFoundHandler(note));
  app.onError(renderError(logger));
  // `serve` in tickwork/node answers the submit route with it, without a web Request.
  attachDirectSubmit(app, config);
  return app;
}
