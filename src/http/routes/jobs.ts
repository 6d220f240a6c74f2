/**
 * @module
 * `/v1/jobs`: submit (one job, or a batch: ./batch.ts), read (with long-poll), the job's log,
 * its realtime stream, cancel, list. Reads need the `read` scope, submit and cancel `jobs:write`;
 * a tenant's key sees only its own jobs.
 */
import { Hono } from "hono";
import { NotFoundError } from "../../core/errors.ts";
import { FINAL_JOB_STATUSES } from "../../core/model.ts";
import type { SubmitJobInput } from "../../core/schemas.ts";
import { presentJob, type Submitted } from "../../engine/broker.ts";
import { traceHeaders } from "../../engine/tracing.ts";
import { waitForFinal } from "../long-poll.ts";
import { authorizeRequest } from "../middleware/auth.ts";
import { readJson } from "../middleware/body.ts";
import { setRateLimitHeaders, setRefusalHeaders } from "../middleware/rate-limit.ts";
import { jsonAnswer } from "../middleware/request-id.ts";
import { checkScope, requireScope } from "../middleware/scope.ts";
import type { AppConfig, AppEnv } from "../options.ts";
import { jobPathId } from "../path-ids.ts";
import { listJobsQuery, logsQuery, parseQuery, waitQuery } from "../query.ts";
import {
  type CancelResource,
  jobResource,
  jobSummary,
  logEntryResource,
  pageResource,
} from "../serialize.ts";
import { jobStreamHandler } from "../stream/routes.ts";
import { batchSubmit } from "./batch.ts";

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

  routes.get("/", requireScope("read"), async (c) => {
    const query = parseQuery(c, listJobsQuery);
    return c.json(pageResource(await engine.broker.listJobs(query, c.get("actor")), jobResource));
  });

  routes.get("/:id", requireScope("read"), async (c) => {
    const id = c.req.param("id");
    const { wait } = parseQuery(c, waitQuery);
    const actor = c.get("actor");
    // Read first, so a wait on another tenant's job answers 404 at once, like any unknown id.
    let job = await engine.broker.getJob(jobPathId(id), actor);
    if (wait && !FINAL_JOB_STATUSES.includes(job.status)) {
      const waited = await waitForFinal(
        engine.store,
        id,
        Math.min(wait, config.maxWaitMs),
        c.req.raw.signal,
      );
      if (!waited) throw new NotFoundError("job", id);
      job = presentJob(waited);
    }
    return c.json(jobResource(job));
  });

  // Server-Sent Events: status changes, progress and the final job (src/http/stream/).
  routes.get("/:id/stream", requireScope("read"), jobStreamHandler(config));

  routes.get("/:id/logs", requireScope("read"), async (c) => {
    const query = parseQuery(c, logsQuery);
    const page = await engine.broker.readLogs(jobPathId(c.req.param("id")), query, c.get("actor"));
    return c.json(pageResource(page, logEntryResource));
  });

  if (config.serves.write) {
    // The scope is checked inside: the most frequent request, one middleware layer less.
    routes.post("/", async (c) => {
      checkScope(c, "jobs:write");
      const body = await readJson(c, config.bodyLimitBytes);
      // W3C trace context: stored with the job when valid, ignored when not (src/engine/tracing.ts).
      const trace = traceHeaders(c.req.raw.headers);
      // As `withRateLimitHeaders`, without a closure and an async layer per submit.
      let submitted: Submitted;
      try {
        submitted = await engine.broker.submit(
          body as SubmitJobInput,
          c.get("actor"),
          trace && { trace },
        );
      } catch (error) {
        setRefusalHeaders(c, error);
        throw error;
      }
      const { job, replayed, quota } = submitted;
      const location = `${c.get("appPath")}/v1/jobs/${encodeURIComponent(job.id)}`;
      // The usual answer, its headers a plain object (see jsonAnswer).
      if (!quota && !replayed) {
        return jsonAnswer(c, JSON.stringify(jobSummary(job)), 202, { location });
      }
      if (quota) setRateLimitHeaders(c, quota);
      if (replayed) c.header("Idempotent-Replayed", "true");
      c.header("Location", location);
      return c.json(jobSummary(job), replayed ? 200 : 202);
    });

    routes.post("/batch", requireScope("jobs:write"), batchSubmit(config));

    routes.delete("/:id", requireScope("jobs:write"), async (c) => {
      const job = await engine.broker.cancel(jobPathId(c.req.param("id")), c.get("actor"));
      // Running: asked to stop; it ends `cancelled` once its runner sees the request.
      if (job.status !== "cancelled") return c.json(jobResource(job) as CancelResource, 202);
      return c.json({ id: job.id, status: job.status } as CancelResource);
    });
  }

  return routes;
}
