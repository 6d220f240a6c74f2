/**
 * @module
 * `/v1/jobs`: submit (one job, or a batch: ./batch.ts), read (with long-poll), the job's log,
 * its realtime stream, cancel, list. Reads need the `read` scope, submit and cancel `jobs:write`;
 * a tenant's key sees only its own jobs.
 */
import { Hono } from "hono";
import { ConflictError, NotFoundError } from "../../core/errors.ts";
import { FINAL_JOB_STATUSES } from "../../core/model.ts";
import { hasScope } from "../../core/scopes.ts";
import { presentJob } from "../../engine/broker.ts";
import { waitForFinal } from "../long-poll.ts";
import { authorizeRequest } from "../middleware/auth.ts";
import { readBytes } from "../middleware/body.ts";
import { jsonAnswer } from "../middleware/request-id.ts";
import { requireScope } from "../middleware/scope.ts";
import type { AppConfig, AppEnv } from "../options.ts";
import { jobPathId } from "../path-ids.ts";
import { listJobsQuery, logsQuery, parseQuery, waitQuery } from "../query.ts";
import {
  type CancelResource,
  jobFields,
  jobResource,
  logEntryResource,
  pageResource,
} from "../serialize.ts";
import { jobStreamHandler } from "../stream/routes.ts";
import { batchSubmit } from "./batch.ts";
import { submitJob } from "./submit.ts";

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
    const { fields, ...query } = parseQuery(c, listJobsQuery);
    const page = await engine.broker.listJobs(query, c.get("actor"));
    return c.json(pageResource(page, fields ? (job) => jobFields(job, fields) : jobResource));
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
    // The scope is checked inside: the most frequent request, one middleware layer less. The
    // same steps answer it outside Hono on Node (../direct-submit.ts).
    routes.post("/", async (c) => {
      const answer = await submitJob(config, {
        actor: c.get("actor"),
        appPath: c.get("appPath"),
        requestHeader: (name) => c.req.header(name),
        body: (maxBytes) => readBytes(c, maxBytes),
        header: (name, value) => c.header(name, value),
      });
      return jsonAnswer(c, answer.text, answer.status, answer.headers);
    });

    routes.post("/batch", requireScope("jobs:write"), batchSubmit(config));

    routes.delete("/:id", requireScope("jobs:write"), async (c) => {
      const actor = c.get("actor");
      // A key that may not read learns only whether the cancel took: not the job (cancelling a
      // running job again changes nothing, and answered its progress, last error, node and
      // tags), nor the status a finished job ended with.
      const reads = hasScope(actor?.scopes, "read");
      const id = jobPathId(c.req.param("id"));
      let job: Awaited<ReturnType<typeof engine.broker.cancel>>;
      try {
        job = await engine.broker.cancel(id, actor);
      } catch (error) {
        if (reads || !(error instanceof ConflictError)) throw error;
        throw new ConflictError(
          error.code,
          `job "${id}" cannot be cancelled: only queued, waiting and running jobs can be`,
        );
      }
      // Running: asked to stop; it ends `cancelled` once its runner sees the request.
      if (job.status !== "cancelled") {
        const answer: CancelResource = reads
          ? jobResource(job)
          : { id: job.id, status: "running", cancelRequested: true };
        return c.json(answer, 202);
      }
      return c.json({ id: job.id, status: job.status } as CancelResource);
    });
  }

  return routes;
}
