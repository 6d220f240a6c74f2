/**
 * @module
 * `POST /v1/jobs`, one job: the steps between an authorized request and its answer, written once
 * for the two ways a request reaches them. Hono's route (`./jobs.ts`) hands over its `Context`;
 * the direct route (`../direct-submit.ts`) hands over a request a server read without building a
 * web `Request`. Both answer the same bytes for the same request.
 */
import type { SubmitJobInput } from "../../core/schemas.ts";
import type { Actor } from "../../engine/actor.ts";
import type { Submitted } from "../../engine/broker.ts";
import { traceHeaders } from "../../engine/tracing.ts";
import { jsonBody } from "../middleware/body.ts";
import {
  type HeaderSink,
  setRateLimitHeaders,
  setRefusalHeaders,
} from "../middleware/rate-limit.ts";
import { checkActorScope, submittedForWriter } from "../middleware/scope.ts";
import type { AppConfig } from "../options.ts";

/** A submit request as the steps read it, and where the headers of its answer go. */
export interface SubmitExchange extends HeaderSink {
  /** Who is acting, as `authorize` decided. */
  actor: Actor;
  /** Where the app's routes hang off, as the request reached it (`AppVariables.appPath`). */
  appPath: string;
  /** A request header by its lower-case name; several of one name joined with `", "`. */
  requestHeader(name: string): string | undefined;
  /** The request body: the bytes, or a 413 as soon as it is known to be longer than `maxBytes`. */
  body(maxBytes: number): Promise<Uint8Array>;
}

/** A JSON answer: its status, its text, and headers besides `content-type` and `x-request-id`. */
export interface SubmitAnswer {
  status: number;
  text: string;
  headers: Record<string, string>;
}

/**
 * Submit the job a request carries: the `jobs:write` scope (403), the JSON body (415, 413, 400),
 * the W3C trace context of its headers, then the broker (400, 422, 429, 503). Throws what the
 * app's error handler renders; headers that belong to such an answer (a challenge, `RateLimit-*`)
 * are set on `x` first.
 *
 * @example
 * const answer = await submitJob(config, exchange);
 * // { status: 202, text: '{"id":"…","status":"queued",…}', headers: { location: "/v1/jobs/…" } }
 */
export async function submitJob(config: AppConfig, x: SubmitExchange): Promise<SubmitAnswer> {
  checkActorScope(x.actor, "jobs:write", x);
  const body = await jsonBody(
    (name) => x.requestHeader(name),
    (max) => x.body(max),
    config.bodyLimitBytes,
  );
  // W3C trace context: stored with the job when valid, ignored when not (src/engine/tracing.ts).
  const trace = traceHeaders({ get: (name) => x.requestHeader(name) ?? null });
  let submitted: Submitted;
  try {
    submitted = await config.engine.broker.submit(
      body as SubmitJobInput,
      x.actor,
      trace && { trace },
    );
  } catch (error) {
    setRefusalHeaders(x, error);
    throw error;
  }
  const { job, replayed, quota } = submitted;
  const headers: Record<string, string> = {
    location: `${x.appPath}/v1/jobs/${encodeURIComponent(job.id)}`,
  };
  if (quota) setRateLimitHeaders({ header: (name, value) => (headers[name] = value) }, quota);
  if (replayed) headers["Idempotent-Replayed"] = "true";
  const summary = submittedForWriter(x.actor, job, replayed);
  return { status: replayed ? 200 : 202, text: JSON.stringify(summary), headers };
}
