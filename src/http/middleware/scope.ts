/**
 * @module
 * Route → scope: each API route names the scope it needs, checked against the actor that
 * `authorize` set. An actor without scopes (auth off, or a custom `authorize` without them) may
 * do everything.
 *
 * | routes | scope |
 * |---|---|
 * | every `GET` of `/v1/jobs`, `/v1/schedules`, `/v1/dlq` | `read` |
 * | `POST /v1/jobs`, `DELETE /v1/jobs/:id` | `jobs:write` |
 * | `POST`, `PATCH`, `DELETE` of `/v1/schedules…`, pause, resume | `schedules:write` |
 * | `POST /v1/dlq/:id/retry`, `DELETE /v1/dlq/:id` | `admin` |
 *
 * `admin` implies every scope.
 */
import type { MiddlewareHandler } from "hono";
import { ForbiddenError } from "../../core/errors.ts";
import type { JobRecord } from "../../core/model.ts";
import { hasScope, type Scope } from "../../core/scopes.ts";
import type { JobSummary } from "../../core/wire.ts";
import type { Actor } from "../../engine/actor.ts";
import type { AppEnv } from "../options.ts";
import { jobSummary } from "../serialize.ts";

/**
 * 403 (with an RFC 6750 `insufficient_scope` challenge) unless the actor's key has `scope`.
 * Mount it after `authorizeRequest`.
 *
 * @example
 * routes.post("/", requireScope("jobs:write"), async (c) => …);
 */
export function requireScope(scope: Scope): MiddlewareHandler<AppEnv> {
  return async function requireScope(c, next) {
    checkActorScope(c.get("actor"), scope, c);
    await next();
  };
}

/**
 * What {@link requireScope} checks, for an `actor` at hand: inside a handler, one middleware layer
 * less on a hot route (the submit, `../routes/submit.ts`). Throws the same 403; the challenge goes
 * on `answer` (a Hono `Context`, or the submit's exchange).
 *
 * @example
 * checkActorScope(actor, "jobs:write", c);
 */
export function checkActorScope(
  actor: Actor | undefined,
  scope: Scope,
  answer: { header(name: string, value: string): unknown },
): void {
  if (hasScope(actor?.scopes, scope)) return;
  answer.header(
    "WWW-Authenticate",
    `Bearer realm="tickwork", error="insufficient_scope", scope="${scope}"`,
  );
  throw new ForbiddenError(
    "insufficient_scope",
    `this API key lacks the "${scope}" scope (it has: ${actor?.scopes?.join(", ") || "none"})`,
  );
}

/**
 * `resource` as a write answers it to `actor`: whole to a key that may read, without its `input`
 * to one that may not. A write that changes nothing (cancelling a running job again, pausing a
 * paused schedule, an empty PATCH) would otherwise read any record's input, where secrets live.
 *
 * @example
 * return c.json(forWriter(c.get("actor"), scheduleResource(schedule)));
 */
export function forWriter<T extends { input?: unknown }>(
  actor: Actor | undefined,
  resource: T,
): T | Omit<T, "input"> {
  if (hasScope(actor?.scopes, "read")) return resource;
  const { input: _input, ...withoutInput } = resource;
  return withoutInput;
}

/**
 * A submitted job as it is answered to `actor` (`POST /v1/jobs`, a batch's items, a flow's jobs):
 * whole to a key that may read; to one that may not, without `status` and `attempts` when they
 * tell more than the write itself did. That is so for a replay (the job may have run since, and a
 * replay changes nothing: a key that may only write would read how any job ended whose
 * idempotency key it knows) and for a job with dependencies (`queued`, `waiting` or `cancelled`
 * says whether the jobs it names have finished, and how: a flow's parent names its children).
 *
 * @example
 * return c.json(submittedForWriter(actor, job, replayed));
 */
export function submittedForWriter(
  actor: Actor | undefined,
  job: JobRecord,
  replayed: boolean,
): JobSummary {
  const summary = jobSummary(job);
  if (!replayed && !job.after?.length) return summary;
  if (hasScope(actor?.scopes, "read")) return summary;
  const { status: _status, attempts: _attempts, ...withoutOutcome } = summary;
  return withoutOutcome;
}
