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
/** Text without control characters (tags, idempotency keys). */
const printable = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[^\p{Cc}]*$/u, "must not contain control characters");
/** Largest number of tags on a job or schedule. */
export const MAX_TAGS = 20;
/** Longest idempotency key. */
export const MAX_IDEMPOTENCY_KEY = 256;
/** At most {@link MAX_TAGS} tags of 1–64 characters. */
const tags = z.array(printable(64)).max(MAX_TAGS);

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
    idempotencyKey: printable(MAX_IDEMPOTENCY_KEY).optional(),
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

// ── JSON limits (request bodies) ─────────────────────────────────────────────

/** Deepest nesting of objects and arrays a request body may have (`{}` is depth 1). */
export const MAX_JSON_DEPTH = 32;

/**
 * Keys refused anywhere in a request body: harmless to `JSON.parse`, but dangerous to any code
 * that later merges the value into an object (prototype pollution).
 */
export const FORBIDDEN_KEYS: readonly string[] = ["__proto__", "constructor", "prototype"];

/**
 * The nesting depth of JSON text, counted without parsing it (brackets inside strings are
 * skipped); stops counting once it passes `limit`. Malformed text gives a number too: the parser
 * rejects it afterwards.
 *
 * @example
 * jsonDepth('{"a":[1,{"b":"]]"}]}', 32); // 3
 */
export function jsonDepth(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > limit) return max;
      }
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return max;
}

/**
 * Where `value` (parsed JSON) holds a {@link FORBIDDEN_KEYS} key, as field issues (at most
 * `max`). Walks iteratively, so any depth is safe.
 *
 * @example
 * forbiddenKeys(JSON.parse('{"input":{"__proto__":{"admin":true}}}'));
 * // [{ path: "input.__proto__", message: 'the key "__proto__" is not allowed' }]
 */
export function forbiddenKeys(value: unknown, max = 10): { path: string; message: string }[] {
  const issues: { path: string; message: string }[] = [];
  const stack: { value: unknown; path: string }[] = [{ value, path: "" }];
  while (stack.length > 0 && issues.length < max) {
    const { value: current, path } = stack.pop()!;
    if (typeof current !== "object" || current === null) continue;
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) {
        stack.push({ value: current[i], path: path ? `${path}.${i}` : String(i) });
      }
      continue;
    }
    const keys = Object.keys(current);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      const at = path ? `${path}.${key}` : key;
      if (FORBIDDEN_KEYS.includes(key)) {
        issues.push({ path: at, message: `the key "${key}" is not allowed` });
        if (issues.length >= max) break;
      } else {
        stack.push({ value: (current as Record<string, unknown>)[key], path: at });
      }
    }
  }
  return issues;
}
