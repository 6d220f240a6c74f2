/**
 * @module
 * `POST /v1/flows` (`jobs:write`): children, then a parent that waits for them all
 * (src/engine/flows.ts). Answers 202 `{ parent, children }` as job summaries — 200 with
 * `Idempotent-Replayed: true` when the whole flow was stored before.
 */
import { Hono } from "hono";
import { jsonDepth, MAX_JSON_DEPTH } from "../../core/schemas.ts";
import { traceHeaders } from "../../engine/tracing.ts";
import { authorizeRequest } from "../middleware/auth.ts";
import { readJson, tooDeep } from "../middleware/body.ts";
import { setRateLimitHeaders, withRateLimitHeaders } from "../middleware/rate-limit.ts";
import { requireScope, submittedForWriter } from "../middleware/scope.ts";
import type { AppConfig, AppEnv } from "../options.ts";

/**
 * The flow route, to mount at `/v1/flows` where writes are served.
 *
 * @example
 * app.route("/v1/flows", flowRoutes(config));
 */
export function flowRoutes(config: AppConfig): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  routes.use(authorizeRequest(config.authorize));
  routes.post("/", requireScope("jobs:write"), async (c) => {
    // `{"children":[job]}`: two levels around each child; the parent, one level down, is checked
    // on its own.
    const body = await readJson(c, config.bodyLimitBytes, 2);
    refuseDeepParent(body);
    // Each job of the flow stores the request's W3C trace context (src/engine/tracing.ts).
    const trace = traceHeaders(c.req.raw.headers);
    const flow = await withRateLimitHeaders(c, () =>
      config.engine.broker.submitFlow(body as never, c.get("actor"), trace),
    );
    if (flow.quota) setRateLimitHeaders(c, flow.quota);
    if (flow.replayed) c.header("Idempotent-Replayed", "true");
    c.header("Location", `${c.get("appPath")}/v1/jobs/${encodeURIComponent(flow.parent.id)}`);
    // Jobs stored before (a flow sent again, or children that name their own keys) answer as
    // they are now, and the parent's status says how its children ended: a key that may only
    // write reads neither.
    const actor = c.get("actor");
    return c.json(
      {
        parent: submittedForWriter(actor, flow.parent, flow.replays.parent),
        children: flow.children.map((job, i) =>
          submittedForWriter(actor, job, flow.replays.children[i] ?? true),
        ),
      },
      flow.replayed ? 200 : 202,
    );
  });
  return routes;
}

/** A flow's parent nests no deeper than one `POST /v1/jobs` body may (the body allowed it one more). */
function refuseDeepParent(body: unknown): void {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return;
  const parent = (body as { parent?: unknown }).parent;
  if (typeof parent !== "object" || parent === null) return;
  if (jsonDepth(JSON.stringify(parent), MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw tooDeep("a job of the request body", "parent", MAX_JSON_DEPTH);
  }
}
