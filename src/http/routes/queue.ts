/**
 * @module
 * The queue's side of the API: `/v1/tick` (the platform cron), `/v1/worker` (deliveries),
 * `/v1/dead` (the failure callback) and the dead-letter list `/v1/dlq`.
 */
import { type Context, Hono } from "hono";
import type { DeliveryOutcome } from "../../core/delivery.ts";
import { deliveryResponse, unavailableDelivery } from "../delivery.ts";
import { authorizeRequest, requireTickSecret } from "../middleware/auth.ts";
import { readText } from "../middleware/body.ts";
import { requireScope } from "../middleware/scope.ts";
import type { AppConfig, AppEnv } from "../options.ts";
import { jobPathId } from "../path-ids.ts";
import { pageQuery, parseQuery } from "../query.ts";
import { jobResource, jobSummary, pageResource, tickResource } from "../serialize.ts";
import { isStoreUnavailable } from "../unavailable.ts";

/**
 * The queue routes, to mount at `/v1`, as far as the roles serve them: `/v1/tick` (`tick`),
 * `/v1/worker` and `/v1/dead` (`worker`), the dead-letter list (read, and retry/delete to write).
 *
 * @example
 * app.route("/v1", queueRoutes(config));
 */
export function queueRoutes(config: AppConfig): Hono<AppEnv> {
  const { engine } = config;
  const routes = new Hono<AppEnv>();
  const authorize = authorizeRequest(config.authorize);

  /** The URL the queue delivered to: what the delivery signature's `sub` names. */
  function deliveredTo(c: Context<AppEnv>, route: string): string {
    if (config.publicUrl === undefined) return c.req.url;
    return `${config.publicUrl}${route}${new URL(c.req.url).search}`;
  }

  if (config.serves.tick && config.tickRoute) {
    routes.on(["GET", "POST"], "/tick", requireTickSecret(config.tickSecret), async (c) =>
      c.json(tickResource(await engine.ticker.tick(c.get("logger")))),
    );
  }

  if (config.serves.worker) {
    // The runner's outcome, answered in the queue's terms (200 done, 489 give up, 409 busy, else
    // retry): see ../delivery.ts.
    routes.post("/worker", async (c) => {
      const body = await readText(c, config.deliveryLimitBytes);
      return answerDelivery(() =>
        engine.runner.deliver(
          { url: deliveredTo(c, "/v1/worker"), headers: c.req.raw.headers, body },
          c.get("logger"),
        ),
      );
    });

    routes.post("/dead", async (c) => {
      const body = await readText(c, config.deliveryLimitBytes);
      return answerDelivery(() =>
        engine.runner.dead({ url: deliveredTo(c, "/v1/dead"), headers: c.req.raw.headers, body }),
      );
    });
  }

  if (config.serves.read) {
    routes.get("/dlq", authorize, requireScope("read"), async (c) => {
      const page = await engine.broker.listDead(parseQuery(c, pageQuery), c.get("actor"));
      return c.json(pageResource(page, jobResource));
    });
  }

  if (config.serves.write) {
    // Dead letters are an operator's tool: a retry re-runs a job outside the submit quota.
    routes.post("/dlq/:id/retry", authorize, requireScope("admin"), async (c) => {
      const job = await engine.broker.retryDead(
        jobPathId(c.req.param("id"), "dead job"),
        c.get("actor"),
      );
      return c.json(jobSummary(job), 202);
    });

    routes.delete("/dlq/:id", authorize, requireScope("admin"), async (c) => {
      const id = c.req.param("id");
      await engine.broker.deleteDead(jobPathId(id, "dead job"), c.get("actor"));
      return c.json({ id, status: "deleted" as const });
    });
  }

  return routes;
}

/**
 * The runner's outcome as the queue's answer; an unreachable store is a 503 the queue retries on
 * its own backoff (../delivery.ts `unavailableDelivery`), anything else goes to `onError`.
 */
async function answerDelivery(run: () => Promise<DeliveryOutcome>): Promise<Response> {
  try {
    return deliveryResponse(await run());
  } catch (error) {
    if (isStoreUnavailable(error)) return unavailableDelivery();
    throw error;
  }
}
