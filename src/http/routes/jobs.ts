/**
 * @module
 * `/v1/jobs`: submit, read (with long-poll), cancel, list.
 */
import { Hono } from "hono";
import { NotFoundError } from "../../core/errors.ts";
import type { SubmitJobInput } from "../../core/schemas.ts";
import { waitForFinal } from "../long-poll.ts";
import { authorizeRequest } from "../middleware/auth.ts";
import { readJson } from "../middleware/body.ts";
import type { AppConfig, AppEnv } from "../options.ts";
import { listJobsQuery, parseQuery, waitQuery } from "../query.ts";
import { jobResource, jobSummary, pageResource } from "../serialize.ts";

/**
 * The job routes, to mount at `/v1/jobs` when the roles read: the reads, and submit and cancel
 * when they also write (`config.serves.write`).
 *
 * @example
 * app.route("/v1/jobs", jobRoutes(config));
 */
export function jobRoutes(config: AppConfig): Hono<AppEnv> {
  const { engine } = config;
  const routes = new Hono<AppEnv>();
  routes.use(authorizeRequest(config.authorize));

  routes.get("/", async (c) => {
    const query = parseQuery(c, listJobsQuery);
    const page = await engine.store.listJobs(query);
    return c.json(pageResource(page, jobResource));
  });

  routes.get("/:id", async (c) => {
    const id = c.req.param("id");
    const { wait } = parseQuery(c, waitQuery);
    const job = wait
      ? await waitForFinal(engine.store, id, Math.min(wait, config.maxWaitMs), c.req.raw.signal)
      : await engine.store.getJob(id);
    if (!job) throw new NotFoundError("job", id);
    return c.json(jobResource(job));
  });

  if (config.serves.write) {
    routes.post("/", async (c) => {
      const body = await readJson(c, config.bodyLimitBytes);
      const { job, replayed } = await engine.broker.submit(body as SubmitJobInput, c.get("actor"));
      if (replayed) c.header("Idempotent-Replayed", "true");
      c.header("Location", `${config.pathPrefix}/v1/jobs/${encodeURIComponent(job.id)}`);
      return c.json(jobSummary(job), replayed ? 200 : 202);
    });

    routes.delete("/:id", async (c) => {
      const job = await engine.broker.cancel(c.req.param("id"));
      return c.json({ id: job.id, status: job.status });
    });
  }

  return routes;
}
