/**
 * @module
 * `POST /v1/jobs/batch` (docs/api.md, "Batch submit"; docs/adr/0020-batch-submit.md): up to
 * 1,000 jobs in one request, each checked and admitted on its own as `POST /v1/jobs` would. The
 * answer is 200 with one outcome per job, in order — `accepted`, `replayed`, or `failed` with
 * the job's problem document — whenever the request itself is sound; a request that is not
 * (auth, media type, size, a body without a `jobs` array, over 1,000 jobs, a reserved key
 * anywhere) is one problem+json answer and writes nothing.
 */
import type { Handler } from "hono";
import type { BatchItemResource, BatchResource } from "../../core/batch.ts";
import { InvalidRequestError, QuotaExceededError } from "../../core/errors.ts";
import type { Actor } from "../../engine/actor.ts";
import type { BatchOutcome } from "../../engine/broker.ts";
import { traceHeaders } from "../../engine/tracing.ts";
import { readJson } from "../middleware/body.ts";
import { setRateLimitHeaders, setRefusalHeaders } from "../middleware/rate-limit.ts";
import { submittedForWriter } from "../middleware/scope.ts";
import type { AppConfig, AppEnv } from "../options.ts";
import { toProblem } from "../problem.ts";

/** How many times `bodyLimitBytes` a batch's body may be (8 MiB with the default 1 MiB). */
export const BATCH_BODY_FACTOR = 8;

/**
 * The handler of `POST /v1/jobs/batch` (mounted by `jobRoutes` with the `jobs:write` scope).
 *
 * @example
 * routes.post("/batch", requireScope("jobs:write"), batchSubmit(config));
 */
export function batchSubmit(config: AppConfig): Handler<AppEnv> {
  const { engine } = config;
  return async (c) => {
    // `{"jobs":[job]}`: two levels around each job.
    const body = await readJson(c, config.bodyLimitBytes * BATCH_BODY_FACTOR, 2);
    if (typeof body !== "object" || body === null || Array.isArray(body) || !("jobs" in body)) {
      throw new InvalidRequestError("invalid batch", [
        { path: "jobs", message: "expected an object with a non-empty array `jobs`" },
      ]);
    }
    // `jobs` only, as every other body refuses keys it does not know (a misspelt option would
    // otherwise be dropped without a word).
    const extra = Object.keys(body).filter((key) => key !== "jobs");
    if (extra.length > 0) {
      throw new InvalidRequestError(
        "invalid batch",
        extra.slice(0, 10).map((key) => ({ path: key, message: "not a field of a batch" })),
      );
    }
    // W3C trace context: stored with each job when valid, ignored when not (src/engine/tracing.ts).
    const trace = traceHeaders(c.req.raw.headers);
    const { items, quota } = await engine.broker.submitMany(
      (body as { jobs: never }).jobs,
      c.get("actor"),
      trace,
    );
    if (quota) setRateLimitHeaders(c, quota);
    else {
      // Nothing admitted: where the quota stands, from the first refusal (as a single 429 says).
      const refused = items.find(
        (item) => item.outcome === "failed" && item.error instanceof QuotaExceededError,
      );
      if (refused?.outcome === "failed") setRefusalHeaders(c, refused.error);
    }
    const answer: BatchResource = { items: [], accepted: 0, replayed: 0, failed: 0 };
    // A store failure is shared by the rest of the batch: logged once.
    const logged = new Set<unknown>();
    for (const item of items) {
      const resource = itemResource(item, c.get("actor"), (error) => {
        const { body, internal } = toProblem(error);
        if ((internal || body.status >= 500) && !logged.has(error)) {
          logged.add(error);
          c.get("logger")[internal ? "error" : "warn"]("batch job not stored", {
            status: body.status,
            error: error instanceof Error ? (error.stack ?? error.message) : String(error),
          });
        }
        return body;
      });
      answer[resource.outcome] += 1;
      answer.items.push(resource);
    }
    return c.json(answer, 200);
  };
}

function itemResource(
  item: BatchOutcome,
  actor: Actor | undefined,
  problemOf: (error: unknown) => ReturnType<typeof toProblem>["body"],
): BatchItemResource {
  if (item.outcome === "accepted") {
    return { outcome: "accepted", status: 202, job: submittedForWriter(actor, item.job, false) };
  }
  if (item.outcome === "replayed") {
    return { outcome: "replayed", status: 200, job: submittedForWriter(actor, item.job, true) };
  }
  const problem = problemOf(item.error);
  return { outcome: "failed", status: problem.status, problem };
}
