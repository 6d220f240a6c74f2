/**
 * @module
 * Query parameters of the listings and the long-poll, validated: anything malformed is a 400 with
 * `errors[]`, never a 500. Unknown parameters are ignored; a known one given more than once is a
 * 400 too (reading its first value, as before, answered `?status=dead&status=queued` with the dead
 * jobs alone, and a proxy that reads the last value saw another request than the server did).
 */
import type { Context } from "hono";
import * as z from "zod";
import { parseDuration } from "../core/duration.ts";
import { InvalidRequestError } from "../core/errors.ts";
import type { JobStatus } from "../core/model.ts";
import { handlerName, parseOrThrow, userId, wellFormed } from "../core/schemas.ts";
import type { AppEnv } from "./options.ts";
import { JOB_RESOURCE_FIELDS, type JobResourceField } from "./serialize.ts";

/** Page size when `limit` is not given. */
export const DEFAULT_LIMIT = 20;
/** Largest page. */
export const MAX_LIMIT = 100;

const JOB_STATUSES = [
  "waiting",
  "queued",
  "running",
  "succeeded",
  "failed",
  "dead",
  "cancelled",
  "skipped",
] as const satisfies readonly JobStatus[];

const limit = z
  .string()
  .regex(/^\d{1,6}$/, "must be a whole number")
  .transform(Number)
  .pipe(z.number().int().min(1).max(MAX_LIMIT))
  .default(DEFAULT_LIMIT);

const cursor = wellFormed(z.string().min(1).max(1024)).optional();

/** `?limit=&cursor=` */
export const pageQuery = z.object({ limit, cursor });

/** `GET /v1/jobs?status=&handler=&scheduleId=&fields=&limit=&cursor=` */
export const listJobsQuery = pageQuery.extend({
  status: z.enum(JOB_STATUSES).optional(),
  handler: handlerName.optional(),
  /** The tenant's own schedule id, as a create accepts it. */
  scheduleId: userId.optional(),
  /** A comma list of the job members to show (`id` always), e.g. `status,attempts`. */
  fields: z
    .string()
    .max(1_000)
    .transform((value, ctx) => {
      const names = [...new Set(value.split(",").map((name) => name.trim()))].filter(Boolean);
      const unknown = names.filter(
        (name) => !(JOB_RESOURCE_FIELDS as readonly string[]).includes(name),
      );
      if (names.length === 0 || unknown.length > 0) {
        ctx.addIssue({
          code: "custom",
          message: `unknown job field${unknown.length === 1 ? "" : "s"} ${unknown.map((name) => JSON.stringify(name)).join(", ") || '""'}; any of ${JOB_RESOURCE_FIELDS.join(", ")}`,
        });
        return z.NEVER;
      }
      return new Set(names as JobResourceField[]);
    })
    .optional(),
});

/** `GET /v1/jobs/:id/logs?limit=&cursor=`: the cursor is a log position the store gave. */
export const logsQuery = z.object({
  limit,
  cursor: z
    .string()
    .regex(/^[1-9]\d{0,14}$/, "not a cursor this listing gave")
    .optional(),
});

/** `GET /v1/schedules?status=&handler=&limit=&cursor=` */
export const listSchedulesQuery = pageQuery.extend({
  status: z.enum(["active", "paused", "completed"]).optional(),
  handler: handlerName.optional(),
});

/** `GET /v1/jobs/:id?wait=`: a duration (`"10s"`, or ms), parsed to ms. */
export const waitQuery = z.object({
  wait: z
    .string()
    .transform((v, ctx) => {
      const ms = parseDuration(/^\d+$/.test(v) ? Number(v) : v);
      if (ms === undefined) {
        ctx.addIssue({
          code: "custom",
          message: `not a duration: ${JSON.stringify(v)} (e.g. "10s")`,
        });
        return z.NEVER;
      }
      return ms;
    })
    .optional(),
});

/**
 * The request's query parsed with `schema`; 400 listing every bad parameter.
 *
 * @example
 * const { limit, cursor } = parseQuery(c, pageQuery);
 */
export function parseQuery<S extends z.ZodType>(c: Context<AppEnv>, schema: S): z.output<S> {
  if (schema instanceof z.ZodObject) {
    const given = c.req.queries();
    const repeated = Object.keys(schema.shape).filter((name) => (given[name]?.length ?? 0) > 1);
    if (repeated.length > 0) {
      throw new InvalidRequestError(
        "invalid query",
        repeated.map((name) => ({
          path: name,
          message:
            name === "type"
              ? "given more than once: name several types in one, comma-separated"
              : "given more than once",
        })),
      );
    }
  }
  return parseOrThrow(schema, c.req.query(), "query");
}
