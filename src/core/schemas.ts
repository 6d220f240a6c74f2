/**
 * @module
 * Zod schemas of what users send: a job to submit, a schedule to create or change.
 * Shared by the engine (programmatic use) and the HTTP layer (request bodies).
 *
 * Validation happens before any write: a malformed value is a {@link ValidationError} (400), a
 * well-formed time or duration outside its bounds an {@link UnprocessableError} (422
 * `out_of_range`), each naming the field.
 */
import * as z from "zod";
import { parseDuration } from "./duration.ts";
import { UnprocessableError, ValidationError } from "./errors.ts";
import { MAX_INSTANT_MS, MIN_INSTANT_MS, parseInstant } from "./instant.ts";
import { placementSchema } from "./placement.ts";
import { isWellFormedText } from "./text.ts";

// ── bounds (docs/api.md, "Bounds") ──────────────────────────────────────────

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;

export { MAX_INSTANT_MS, MIN_INSTANT_MS } from "./instant.ts";
/** Longest `delay`, and how far past now a job's `runAt` may be: 365 days. */
export const MAX_DELAY_MS = 365 * DAY_MS;
/** Shortest handler timeout: 1 s. */
export const MIN_TIMEOUT_MS = 1_000;
/**
 * Longest handler timeout: 15 minutes — the longest HTTP response QStash's free plan waits for
 * a delivery, and a Cloudflare cron invocation's wall-clock limit. Far below Node's timer limit
 * (2^31−1 ms), and the run lease (timeout + `leaseGraceMs`) stays well under the reaper's
 * default `reapAfterMs` (1 h).
 */
export const MAX_TIMEOUT_MS = 15 * MINUTE_MS;
/** Largest schedule `jitter`: 1 day. */
export const MAX_JITTER_MS = DAY_MS;
/** Most retries of a job (after the first attempt). */
export const MAX_RETRIES = 100;

/** Marks an issue as "well-formed, but out of range": {@link parseOrThrow} answers it with 422. */
const OUT_OF_RANGE = { outOfRange: true } as const;

export { isWellFormedText };

const WELL_FORMED = "must be well-formed Unicode (no lone surrogates)";

/** A string schema that also refuses text that is not well-formed Unicode. */
export function wellFormed<S extends z.ZodString>(schema: S) {
  return schema.refine(isWellFormedText, WELL_FORMED);
}

/** `value` for a message: JSON, cut short. */
function show(value: unknown): string {
  const text = value instanceof Date ? value.toString() : (JSON.stringify(value) ?? String(value));
  return text.length > 64 ? `${text.slice(0, 61)}...` : text;
}

/** `ms` as a duration for a message: `"15m"`, `"1s"`, `"365d"`, else ms. */
function showMs(ms: number): string {
  for (const [unit, size] of [
    ["d", DAY_MS],
    ["h", 60 * MINUTE_MS],
    ["m", MINUTE_MS],
    ["s", 1_000],
  ] as const) {
    if (ms > 0 && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** What {@link handlerName} accepts (also checked without zod, by `parseSubmitJob`). */
const HANDLER_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/;

/** Handler names: dotted words, e.g. `email.send`. */
export const handlerName = z
  .string()
  .regex(HANDLER_NAME, "handler must match [A-Za-z0-9_.:-], 1–128 chars");

const USER_ID = "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}";
const TENANT_ID = "[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}";

/** Ids users choose (schedules): URL-safe, no `@` (reserved for occurrence ids). */
export const userId = z
  .string()
  .regex(
    new RegExp(`^${USER_ID}$`),
    "id must match [A-Za-z0-9_.-], 1–128 chars, and not start with . or -",
  );

/**
 * What a job id can be: one `newJobId` made (`j_` + 21 base-36 characters), or an occurrence's
 * `<scheduleId>@<fireAtMs>`, its schedule id qualified by at most one `<tenant>:`.
 */
const JOB_ID = new RegExp(`^(?:j_[0-9a-z]{21,30}|(?:${TENANT_ID}:)?${USER_ID}@\\d{1,16})$`);
const SCHEDULE_ID = new RegExp(`^${USER_ID}$`);

/**
 * True when `id` could name a job (or a dead letter): anything else names none, and is answered
 * like an unknown id without asking the store.
 *
 * @example
 * isJobId("j_0mwxa9xfphc7zv0crypps");   // true
 * isJobId("acme:report@1700000000000"); // true
 * isJobId("report:running");            // false
 */
export function isJobId(id: string): boolean {
  return JOB_ID.test(id);
}

/** True when `id` is a schedule id a create would accept (see {@link userId}). */
export function isScheduleId(id: string): boolean {
  return SCHEDULE_ID.test(id);
}

/**
 * A duration: ms or `"500ms" | "30s" | "5m" | "1h" | "1d"`, parsed to ms (any size; the request
 * fields use {@link boundedDuration}).
 */
export const duration = z.union([z.number(), z.string()]).transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === undefined) {
    ctx.addIssue({ code: "custom", message: `not a duration: ${show(v)}` });
    return z.NEVER;
  }
  return ms;
});

/**
 * A duration from `minMs` to `maxMs`: malformed → a 400 issue, out of range → a 422 one.
 *
 * @example
 * boundedDuration(MIN_TIMEOUT_MS, MAX_TIMEOUT_MS).parse("30s"); // 30000
 */
export function boundedDuration(minMs: number, maxMs: number) {
  return z.union([z.number(), z.string()]).transform((v, ctx) => {
    const ms = parseDuration(v);
    if (ms === undefined) {
      ctx.addIssue({ code: "custom", message: `not a duration: ${show(v)}` });
      return z.NEVER;
    }
    if (!(ms >= minMs && ms <= maxMs)) {
      ctx.addIssue({
        code: "custom",
        message: `must be from ${showMs(minMs)} to ${showMs(maxMs)}, got ${show(v)}`,
        params: OUT_OF_RANGE,
      });
      return z.NEVER;
    }
    return ms + 0; // -0 → 0
  });
}

/**
 * A point in time: epoch ms, ISO-8601 string (with its offset: {@link parseInstant}) or Date,
 * parsed to whole epoch ms (a fraction dropped), within
 * {@link MIN_INSTANT_MS}–{@link MAX_INSTANT_MS} and, with `maxAheadMs`, at most that long after
 * now.
 */
function boundedInstant(maxAheadMs?: number) {
  return z.union([z.number(), z.string(), z.date()]).transform((v, ctx) => {
    const ms = typeof v === "number" ? v : typeof v === "string" ? parseInstant(v) : v.getTime();
    if (Number.isNaN(ms)) {
      ctx.addIssue({ code: "custom", message: `not a time: ${show(v)}` });
      return z.NEVER;
    }
    if (!(ms >= MIN_INSTANT_MS && ms <= MAX_INSTANT_MS)) {
      ctx.addIssue({
        code: "custom",
        message: `must be from 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z, got ${show(v)}`,
        params: OUT_OF_RANGE,
      });
      return z.NEVER;
    }
    if (maxAheadMs !== undefined && ms > Date.now() + maxAheadMs) {
      ctx.addIssue({
        code: "custom",
        message: `must be at most ${showMs(maxAheadMs)} from now, got ${show(v)}`,
        params: OUT_OF_RANGE,
      });
      return z.NEVER;
    }
    // Whole milliseconds, as an ISO string gives: a fraction would reach the ids of an interval
    // schedule's occurrences (anchored at its `startAt`), which no route then takes.
    return Math.floor(ms) + 0;
  });
}

/** A point in time: epoch ms, ISO-8601 string or Date, parsed to epoch ms (years 1970–9999). */
export const instant = boundedInstant();

const priority = z.number().int().min(1).max(10);
const retries = z.number().int().min(0).max(MAX_RETRIES);
/** Well-formed text without control characters (tags, idempotency keys). */
const printable = (max: number) =>
  wellFormed(
    z
      .string()
      .min(1)
      .max(max)
      .regex(/^[^\p{Cc}]*$/u, "must not contain control characters"),
  );
/**
 * Idempotency keys starting with this are the server's own: an inbound webhook's
 * (`hook:<endpoint>:…`, docs/webhooks.md). No submit may name one (`POST /v1/jobs`, flows,
 * `ctx.jobs.submit`), or it could claim a future delivery's key and have the genuine delivery
 * replay its job; the webhook route passes its key beside the body (`SubmitVia.idempotencyKey`).
 */
export const RESERVED_KEY_PREFIX = "hook:";
/**
 * Every reserved prefix: {@link RESERVED_KEY_PREFIX}, and `flow:` — the keys a flow derives for
 * its jobs (`flow:<key>:child:<i>`, `flow:<key>:parent`, src/engine/flows.ts), which no plain
 * submit may take first.
 */
export const RESERVED_KEY_PREFIXES: readonly string[] = [RESERVED_KEY_PREFIX, "flow:"];
/** An idempotency key a submit may name: {@link printable}, outside the reserved prefixes. */
const idempotencyKey = (max: number) =>
  printable(max).refine(
    (key) => !RESERVED_KEY_PREFIXES.some((prefix) => key.startsWith(prefix)),
    `must not start with "hook:" or "flow:" (reserved for inbound webhooks and flows)`,
  );
/** Largest number of tags on a job or schedule. */
export const MAX_TAGS = 20;
/** Longest idempotency key. */
export const MAX_IDEMPOTENCY_KEY = 256;
/** At most {@link MAX_TAGS} tags of 1–64 characters. */
const tags = z.array(printable(64)).max(MAX_TAGS);

/** Most dependencies (`after`) one job may name. */
export const MAX_DEPENDENCIES = 100;

/** `POST /v1/jobs` body. */
export const submitJobSchema = z
  .object({
    handler: handlerName,
    input: z.unknown().optional(),
    priority: priority.optional(),
    delay: boundedDuration(0, MAX_DELAY_MS).optional(),
    runAt: boundedInstant(MAX_DELAY_MS).nullish(),
    timeout: boundedDuration(MIN_TIMEOUT_MS, MAX_TIMEOUT_MS).optional(),
    retries: retries.optional(),
    tags: tags.optional(),
    idempotencyKey: idempotencyKey(MAX_IDEMPOTENCY_KEY).optional(),
    after: z
      .array(z.string().refine(isJobId, "not a job id"))
      .max(MAX_DEPENDENCIES)
      .transform((ids) => [...new Set(ids)])
      .optional(),
    onFailure: z.enum(["cancel", "run"]).optional(),
    placement: placementSchema.optional(),
  })
  .strict()
  .refine((j) => j.delay === undefined || j.runAt == null, {
    message: "delay and runAt are exclusive",
    path: ["delay"],
  });

export type SubmitJobInput = z.input<typeof submitJobSchema>;

/**
 * A submit's body checked by {@link submitJobSchema} (400 or 422 as `parseOrThrow`). The most
 * common body — a plain object with a valid `handler` and at most `input` besides — is checked
 * without zod, with the same result: those two fields are all the schema would look at.
 *
 * @example
 * parseSubmitJob({ handler: "email.send", input: { to: "a@b.c" } });
 */
export function parseSubmitJob(body: unknown): z.output<typeof submitJobSchema> {
  if (
    typeof body === "object" &&
    body !== null &&
    Object.getPrototypeOf(body) === Object.prototype
  ) {
    const keys = Object.keys(body);
    const { handler, input } = body as { handler?: unknown; input?: unknown };
    if (
      typeof handler === "string" &&
      HANDLER_NAME.test(handler) &&
      (keys.length === 1 || (keys.length === 2 && (keys[0] === "input" || keys[1] === "input")))
    ) {
      return keys.length === 1 ? { handler } : { handler, input };
    }
  }
  return parseOrThrow(submitJobSchema, body, "job");
}

/** Most children of one flow (`POST /v1/flows`). */
export const MAX_FLOW_CHILDREN = 100;

/**
 * `POST /v1/flows` body: children submitted first, then the parent, which waits for them all
 * (`after`). Each job is checked as a submit (`submitJobSchema`) before anything is written.
 */
export const submitFlowSchema = z
  .object({
    children: z.array(z.unknown()).min(1).max(MAX_FLOW_CHILDREN),
    parent: z.unknown().refine((v) => v !== undefined, "required"),
    /** Makes the flow safe to submit again: its children's and parent's keys derive from it. */
    idempotencyKey: idempotencyKey(MAX_IDEMPOTENCY_KEY - 16).optional(),
  })
  .strict();

export type SubmitFlowInput = z.input<typeof submitFlowSchema>;
export type SubmitJobParsed = z.output<typeof submitJobSchema>;

const scheduleFields = {
  handler: handlerName,
  schedule: wellFormed(z.string().min(1).max(256)),
  tz: wellFormed(z.string().min(1).max(64)).optional(),
  input: z.unknown().optional(),
  priority: priority.optional(),
  timeout: boundedDuration(MIN_TIMEOUT_MS, MAX_TIMEOUT_MS).optional(),
  retries: retries.optional(),
  maxRuns: z.number().int().min(1).nullish(),
  startAt: instant.nullish(),
  endAt: instant.nullish(),
  misfire: z.enum(["skip", "once", "all"]).optional(),
  overlap: z.enum(["allow", "skip"]).optional(),
  jitter: boundedDuration(0, MAX_JITTER_MS).optional(),
  tags: tags.optional(),
  placement: placementSchema.optional(),
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

/**
 * Parse with a schema, or throw listing every issue: an {@link UnprocessableError} (422
 * `out_of_range`) when each issue is a well-formed value out of its bounds, else a
 * {@link ValidationError} (400).
 */
export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what: string,
): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const errors = result.error.issues.map((i) => ({ path: i.path.join("."), message: i.message }));
  if (result.error.issues.every(isOutOfRange)) {
    const fields = [...new Set(errors.map((e) => e.path || what))].join(", ");
    throw new UnprocessableError("out_of_range", `${what}: ${fields} out of range`, { errors });
  }
  throw new ValidationError(`invalid ${what}`, errors);
}

function isOutOfRange(issue: z.core.$ZodIssue): boolean {
  return (
    issue.code === "custom" &&
    (issue.params as { outOfRange?: unknown } | undefined)?.outOfRange === true
  );
}

// ── JSON limits (request bodies) ─────────────────────────────────────────────

/** Deepest nesting of objects and arrays a request body may have (`{}` is depth 1). */
export const MAX_JSON_DEPTH = 32;

export { bodyIssues, FORBIDDEN_KEYS } from "./json-values.ts";

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
