/**
 * @module
 * Ids in request paths, checked before any store call: an id that a create could never have made
 * (`report:running`, `{tw}:s:x`, `../`, an inherited property name, text that is not well-formed)
 * names nothing, and is answered exactly like an unknown id — 404 `not_found` — without asking
 * the store. Otherwise such an id could reach a store key of another kind and be read as a
 * schedule or job hash (WRONGTYPE: a 500 that tells something about another tenant's records).
 */
import { NotFoundError } from "../core/errors.ts";
import { isJobId, isScheduleId } from "../core/schemas.ts";

/**
 * `id` when it can name a job (`j_…`, or an occurrence `[<tenant>:]<scheduleId>@<fireAtMs>`);
 * else 404, as for an unknown job.
 *
 * @example
 * jobPathId(c.req.param("id"));             // the id, or throws NotFoundError("job", id)
 * jobPathId(c.req.param("id"), "dead job"); // for the dead-letter routes
 */
export function jobPathId(id: string | undefined, what: "job" | "dead job" = "job"): string {
  if (id === undefined || !isJobId(id)) throw new NotFoundError(what, id ?? "");
  return id;
}

/** `id` when it is a schedule id a create would accept; else 404, as for an unknown schedule. */
export function schedulePathId(id: string | undefined): string {
  if (id === undefined || !isScheduleId(id)) throw new NotFoundError("schedule", id ?? "");
  return id;
}
