/**
 * @module
 * Zod schemas of what users send: a job to submit, a schedule to create or change.
 * Shared by the engine (programmatic use) and the HTTP layer (request bodies).
 */
import * as z from "zod";
import { parseDuration } from "./duration.ts";
import { ValidationError } from "./errors.ts";

/** Handler names: dotted words, e.g. `email.send`. */
export const handlerName = z
  .string()
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/, "handler must match [A-Za-z0-9_.:-], 1–128 chars");

/** Ids users choose (schedules): URL-safe, no `@` (reserved for occurrence ids). */
export const userId = z
  .string()
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/, "id must match [A-Za-z0-9_.-], 1–128 chars");

/** A duration: ms or `"500ms" | "30s" | "5m" | "1h" | "1d"`, parsed to ms. */
export const duration = z.union([z.number(), z.string()]).transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === undefined) {
    ctx.addIssue({ code: "custom", message: `not a duration: ${JSON.stringify(v)}` });
    return z.NEVER;
  }
  return ms;
});

/** A point in time: epoch ms, ISO-8601 string or Date, parsed to epoch ms. */
export const instant = z.union([z.number(), z.string(), z.date()]).transform((v, ctx) => {
  const ms = typeof v === "number" ? v : typeof v === "string" ? Date.parse(v) : v.getTime();
  if (!Number.isFinite(ms) || ms < 0) {
    ctx.addIssue({ code: "custom", message: `not a time: ${JSON.stringify(v)}` });
    return z.NEVER;
  }
  return ms;
});

const priority = z.number().int().min(1).max(10);
const retries = z.number().int().min(0).max(100);
const tags = z.array(z.string().min(1).max(64)).max(20);

/** `POST /v1/jobs` body. */
export const submitJobSchema = z
  .object({
    handler: handlerName,
    input: z.unknown().optional(),
    priority: priority.optional(),
    delay: duration.optional(),
    runAt: instant.nullish(),
    timeout: duration.optional(),
    retries: retries.optional(),
    tags: tags.optional(),
    idempotencyKey: z.string().min(1).max(256).optional(),
  })
  .strict()
  .refine((j) => j.delay === undefined || j.runAt == null, {
    message: "delay and runAt are exclusive",
    path: ["delay"],
  });

export type SubmitJobInput = z.input<typeof submitJobSchema>;
export type SubmitJobParsed = z.output<typeof submitJobSchema>;

const scheduleFields = {
  handler: handlerName,
  schedule: z.string().min(1).max(256),
  tz: z.string().min(1).max(64).optional(),
  input: z.unknown().optional(),
  priority: priority.optional(),
  timeout: duration.optional(),
  retries: retries.optional(),
  maxRuns: z.number().int().min(1).nullish(),
  startAt: instant.nullish(),
  endAt: instant.nullish(),
  misfire: z.enum(["skip", "once", "all"]).optional(),
  overlap: z.enum(["allow", "skip"]).optional(),
  jitter: duration.optional(),
  tags: tags.optional(),
};

/** `POST /v1/schedules` body. */
export const createScheduleSchema = z
  .object({ id: userId.optional(), ...scheduleFields })
  .strict()
  .refine((s) => s.startAt == null || s.endAt == null || s.startAt < s.endAt, {
    message: "startAt must be before endAt",
    path: ["endAt"],
  });

export type CreateScheduleInput = z.input<typeof createScheduleSchema>;
export type CreateScheduleParsed = z.output<typeof createScheduleSchema>;

/** `PATCH /v1/schedules/:id` body: any field but `id`. */
export const patchScheduleSchema = z.object(scheduleFields).partial().strict();

export type PatchScheduleInput = z.input<typeof patchScheduleSchema>;
export type PatchScheduleParsed = z.output<typeof patchScheduleSchema>;

/** Parse with a schema or throw a {@link ValidationError} listing every issue. */
export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what: string,
): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new ValidationError(
    `invalid ${what}`,
    result.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
  );
}
