/**
 * @module
 * The queue's HTTP answers: a delivery outcome of the runner ({@link DeliveryOutcome}) as the
 * response of `/v1/worker` or `/v1/dead`, in the terms of QStash (and of the local queue, which
 * speaks them too):
 *
 * - `done` → 200 `{ id, status }`;
 * - `retry` → 500 `{ id, status: "failed", error }`, with `Retry-After` (seconds) when the handler
 *   asked for a delay — any non-2xx but 489 is retried with the queue's backoff;
 * - `give-up` → 489 `{ id, status: "dead", error }` + `Upstash-NonRetryable-Error: true`: the queue
 *   stops retrying and calls the failure callback;
 * - `busy` → 409 problem (`attempt_running`, `concurrency_limited`, `placement_mismatch`, `lease_lapsed`) +
 *   `Retry-After`;
 * - `unauthorized` → 401 problem; `bad-request` → 489 `not_a_job` + non-retryable, on the worker
 *   route and for a failure callback alike: a body that is not a job (or a callback of one) never
 *   will be, and any other answer is retried (a 400 to the callback of a body that was no job
 *   came back once per retry).
 *
 * A store that cannot be reached is answered by {@link unavailableDelivery}.
 *
 * Problem bodies are built by `problem()` (src/http/problem.ts), like every other error answer.
 */
import type { DeliveryOutcome } from "../core/delivery.ts";
import { PROBLEM_JSON, problem } from "./problem.ts";

/** The header that tells QStash not to retry (with status 489). */
const NON_RETRYABLE = { "Upstash-NonRetryable-Error": "true" };

const BUSY = {
  "attempt-running": { code: "attempt_running", detail: "another attempt of this job is running" },
  limited: {
    code: "concurrency_limited",
    detail: "the handler's concurrency or rate limit is reached; not an attempt",
  },
  unplaced: {
    code: "placement_mismatch",
    detail: "this node may not run the job (its placement); not an attempt",
  },
  "unknown-handler": {
    code: "handler_unknown",
    detail: "this node has no handler of the job's name (another version may); not an attempt",
  },
  "lease-lapsed": {
    code: "lease_lapsed",
    detail: "the run lease ran out before the handler started",
  },
  "still-running": {
    code: "attempt_running",
    detail: "the reported job is still running under its lease",
  },
} as const;

/**
 * The HTTP answer to a delivery: what the worker route (`Runner.deliver`) and the failure-callback
 * route (`Runner.dead`) send back to the queue.
 *
 * @example
 * routes.post("/worker", async (c) =>
 *   deliveryResponse(await engine.runner.deliver({ url: c.req.url, headers: c.req.raw.headers, body })),
 * );
 */
export function deliveryResponse(outcome: DeliveryOutcome): Response {
  switch (outcome.kind) {
    case "done":
      return json(200, { id: outcome.id, status: outcome.status });
    case "retry": {
      const body = { id: outcome.id, status: "failed", error: outcome.error };
      if (outcome.retryAfterMs === undefined) return json(500, body);
      // Longer than a push queue waits (QStash ignores a Retry-After over a day and retries on
      // its backoff): acknowledged, and the job's watch (recoverAt = now + reapAfterMs +
      // retryAfterMs, written by finishRun) dispatches it again, never sooner than asked.
      if (outcome.retryAfterMs > MAX_RETRY_AFTER_MS) return json(200, body);
      return json(500, body, { "Retry-After": retryAfter(outcome.retryAfterMs) });
    }
    case "give-up":
      return json(489, { id: outcome.id, status: "dead", error: outcome.error }, NON_RETRYABLE);
    case "busy": {
      const { code, detail } = BUSY[outcome.reason];
      return problemAnswer(409, detail, code, { "Retry-After": retryAfter(outcome.retryAfterMs) });
    }
    case "unauthorized":
      return problemAnswer(401, "invalid or missing delivery signature", "unauthorized");
    case "bad-request":
      return problemAnswer(
        489,
        outcome.expected === "job"
          ? "delivery body is not a tickwork job"
          : "not a failure callback for a tickwork job",
        "not_a_job",
        NON_RETRYABLE,
      );
  }
}

/**
 * The answer to a delivery or failure callback the store could not take (unreachable): 503
 * `store_unavailable` without the `Retry-After` other routes send, so the queue retries on its own
 * backoff (QStash: about 12 s, 2.5 min, 30 min, …). QStash honours a `Retry-After` on any answer:
 * with the 5 s an API client is told, a job's retries were spent within about 20 s of an outage,
 * and its failure callback, once the store was back, dead-lettered a job that never ran.
 */
export function unavailableDelivery(): Response {
  return problemAnswer(
    503,
    "the store is unreachable; the queue's backoff retries this delivery",
    "store_unavailable",
  );
}

/** The longest `Retry-After` a push queue honours (QStash: one day). */
const MAX_RETRY_AFTER_MS = 86_400_000;

/** `Retry-After` in whole seconds, at least 1. */
function retryAfter(ms: number): string {
  return String(Math.max(1, Math.ceil(ms / 1000)));
}

function problemAnswer(
  status: number,
  detail: string,
  code: string,
  headers: Record<string, string> = {},
): Response {
  return answer(status, problem(status, detail, code), PROBLEM_JSON, headers);
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return answer(status, body, "application/json", headers);
}

function answer(
  status: number,
  body: unknown,
  contentType: string,
  headers: Record<string, string>,
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": contentType, ...headers },
  });
}
