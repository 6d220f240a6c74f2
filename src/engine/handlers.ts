/**
 * @module
 * Handlers: what runs when a job or an occurrence is delivered. A map of name → definition.
 */
import type { z } from "zod";
import { type Duration, parseDuration } from "../core/duration.ts";
import type { JobLogLevel, JobRecord } from "../core/model.ts";
import { MAX_RETRIES, MAX_TIMEOUT_MS, MIN_TIMEOUT_MS } from "../core/schemas.ts";
import type { BatchJobRequest } from "./batch.ts";
import { type ConcurrencyOption, validateConcurrency } from "./concurrency.ts";
import type { Logger } from "./logger.ts";
import { type RateLimitOption, validateRateLimit } from "./rate-limit.ts";

/** What a handler sees besides its input. */
export interface HandlerContext {
  jobId: string;
  /** 1 on the first attempt. */
  attempt: number;
  /**
   * Aborted when the job's timeout passes (reason: a `TimeoutError`) or the job is cancelled while
   * it runs (reason: a `CancelledError`); pass it to `fetch` and friends. Read (as `ctx.signal`)
   * after the timeout has passed, it is aborted already: the attempt has timed out, even when
   * the timeout's own timer has not run yet (a handler that ran past it without yielding, or a
   * process that was frozen).
   */
  signal: AbortSignal;
  /** Set when the job is an occurrence of a schedule. */
  scheduleId?: string;
  /** The occurrence's nominal fire time (ms), for occurrences. */
  fireAt?: number;
  /** Structured logger carrying the job id. */
  logger: Logger;
  /**
   * Submit follow-up work and read jobs (same tenant). A handler map cannot type its own
   * handlers' `ctx`, so `submit` and `submitFlow` take any name and input unless given the map as
   * a type argument, which a map may name inside its own handlers:
   * `ctx.jobs.submit<typeof handlers>({ handler: "email.send", input: { to } })` accepts only the
   * map's names, each with its own input, as `engine.broker.submit` does.
   */
  jobs: {
    submit<H extends Handlers = Handlers>(
      job: BatchJobRequest<H>,
    ): Promise<{ job: JobRecord; replayed: boolean }>;
    /**
     * A flow: `children`, then `parent` waiting for them all (src/engine/flows.ts). Pass an
     * `idempotencyKey` derived from this job (e.g. `` `${ctx.jobId}:fan-out` ``) so a retry of
     * this handler answers the flow it already submitted instead of submitting another.
     */
    submitFlow<H extends Handlers = Handlers>(flow: {
      children: BatchJobRequest<H>[];
      parent: BatchJobRequest<H>;
      idempotencyKey?: string;
    }): Promise<{ parent: JobRecord; children: JobRecord[]; replayed: boolean }>;
    /** A job of this tenant (e.g. one this job waited for, to read its `result`). */
    get(id: string): Promise<JobRecord>;
  };
  /** The jobs this one waited for (`after`; a flow's parent: its children), in order. */
  after?: string[];
  /**
   * Report progress: any JSON value of at most 4 KiB (e.g. `42` or `{ done, total }`), shown as
   * the job's `progress` (the last value, with its time). Resolves `false` when this attempt no
   * longer holds the job's run lease (nothing written: a stale attempt's call is a no-op).
   * One store call each: report at a sensible pace (e.g. per batch, not per item).
   *
   * @throws RangeError for a value over 4 KiB as JSON, or not JSON at all.
   */
  progress(value: unknown): Promise<boolean>;
  /**
   * Append to the job's log (`GET /v1/jobs/:id/logs`; the last 100 entries are kept). An entry
   * over 2 KiB as JSON is cut: its fields become `{ truncated: true }`, then its message is
   * shortened (ending in `…`). Also written to `logger`. Resolves `false` when this attempt no
   * longer holds the job's run lease (a no-op).
   */
  log(message: string, fields?: Record<string, unknown>, level?: JobLogLevel): Promise<boolean>;
}

/**
 * One handler.
 *
 * @example
 * const handlers = defineHandlers({
 *   "email.send": {
 *     input: z.object({ to: z.string().email() }),
 *     timeout: "30s",
 *     retries: 5,
 *     run: async ({ to }, ctx) => sendMail(to, { signal: ctx.signal }),
 *   },
 * });
 */
export interface HandlerDefinition<Schema extends z.ZodType = z.ZodType> {
  /** Validates input at submit and again before running; invalid input never retries. */
  input?: Schema;
  /** Default timeout for jobs of this handler, from 1 s to 15 min. @default "60s" */
  timeout?: Duration;
  /** Default retries for jobs of this handler. @default 3 */
  retries?: number;
  /**
   * At most this many jobs of this handler run at once, across every worker and transport: a
   * whole number from 1 to 10,000, or `{ limit, key }` for a limit per value of an input field
   * (`key`: a dotted path such as `"customerId"` or `"account.id"`; a leading `"input."` is
   * allowed). Values are the input as submitted, compared as strings (non-strings as JSON) within
   * one tenant; a missing or `null` value groups under the empty key. A delivery over the limit is
   * not an attempt: it is answered busy and delivered again later (src/engine/concurrency.ts).
   * @default no limit
   */
  concurrency?: ConcurrencyOption;
  /**
   * At most `limit` jobs of this handler BEGIN in any sliding `period`, across every worker and
   * transport: `{ limit, period, key? }` — `limit` a whole number from 1 to 100,000, `period` a
   * duration from 1 s to 24 h (`"1m"`, or ms), `key` an input path as for `concurrency` (one
   * window per value and tenant). Every begun attempt counts, retries included. A delivery over
   * the limit is not an attempt, exactly as with `concurrency` (both are checked together: one
   * refused by either takes nothing from the other) (src/engine/rate-limit.ts).
   * @default no limit
   */
  rateLimit?: RateLimitOption;
  run(input: z.output<Schema>, ctx: HandlerContext): unknown | Promise<unknown>;
}

/**
 * Handlers by name: what {@link createEngine} takes. Any map of name → {@link HandlerDefinition}
 * fits; one made with {@link defineHandlers} also types `submit` and `createSchedule` (and, through
 * `createClient<typeof handlers>()`, the HTTP client) by its names and input schemas.
 */
// biome-ignore lint/suspicious/noExplicitAny: each handler has its own schema; `any` lets a typed map fit.
export type Handlers = Record<string, HandlerDefinition<any>>;

/** `T` if it is a zod schema, else the schema of anything (a handler without `input`). */
type AsSchema<T> = T extends z.ZodType ? T : z.ZodType<unknown, unknown>;

/**
 * Define the handlers: an identity function that types each handler's `run` input from its
 * `input` schema, and keeps each schema's type so that `submit`, `createSchedule` and the typed
 * client accept only these names, each with its own input — and each `run`'s result type, which
 * the typed client's `result()` and final update carry.
 *
 * @example
 * const handlers = defineHandlers({
 *   "email.send": {
 *     input: z.object({ to: z.email() }),
 *     retries: 5,
 *     run: ({ to }, ctx) => sendMail(to, { signal: ctx.signal }),
 *   },
 *   "cache.flush": { run: () => flush() }, // no schema: any input
 * });
 * const engine = createEngine({ store, transport, handlers });
 * await engine.broker.submit({ handler: "email.send", input: { to: "a@b.c" } }); // checked by tsc
 */
export function defineHandlers<S, R>(
  handlers: {
    [K in keyof S]: HandlerDefinition<S[K] & z.ZodType>;
  } & {
    // A second view of the same map, from which each `run`'s result type is inferred (`R`).
    [K in keyof R]: { run(input: never, ctx: HandlerContext): R[K] };
  },
): DefinedHandlers<S, R> {
  return handlers as DefinedHandlers<S, R>;
}

/** What {@link defineHandlers} answers: each handler with its schema and its run's result type. */
export type DefinedHandlers<S, R> = {
  // Every name, from either view: a map where no handler has an `input` schema infers no `S`.
  [K in keyof S | keyof R]: HandlerDefinition<AsSchema<SchemaOf<S, K>>> & {
    run(
      input: z.output<AsSchema<SchemaOf<S, K>>>,
      ctx: HandlerContext,
    ): K extends keyof R ? R[K] : unknown;
  };
};

/** The schema inferred for `K`, or none (`unknown`: any input). */
type SchemaOf<S, K> = K extends keyof S ? S[K] : unknown;

/**
 * The handler registered under `name`: an own property of the map only, so names a plain object
 * inherits (`constructor`, `toString`, `__proto__`, `hasOwnProperty`, …) are no handler. Every
 * lookup by name goes through here.
 *
 * @example
 * handlerOf({ echo: { run: (x) => x } }, "echo");        // the definition
 * handlerOf({ echo: { run: (x) => x } }, "constructor"); // undefined
 */
export function handlerOf(handlers: Handlers, name: string): HandlerDefinition | undefined {
  return Object.hasOwn(handlers, name) ? handlers[name] : undefined;
}

/**
 * Check a handler map as {@link createEngine} gets it: each entry has a `run` function, a
 * `timeout` (when set) from 1 s to 15 min, and `retries` (when set) a whole number from 0 to 100 —
 * the bounds a request's own `timeout` and `retries` have — and `concurrency` (when set) a whole
 * number from 1 to 10,000 or `{ limit, key? }` with such a limit and a dotted input path, and
 * `rateLimit` (when set) `{ limit, period, key? }`: 1–100,000 runs per 1 s – 24 h.
 *
 * @throws TypeError or RangeError naming the handler and the option, e.g.
 * `handlers["report"].timeout must be a duration from 1s to 15m, got "1h"`.
 */
export function validateHandlers(handlers: Handlers): void {
  if (typeof handlers !== "object" || handlers === null) {
    throw new TypeError("handlers must be an object of name → { run }");
  }
  for (const name of Object.keys(handlers)) {
    const at = `handlers[${JSON.stringify(name)}]`;
    const def = handlers[name] as Partial<HandlerDefinition> | null | undefined;
    if (typeof def !== "object" || def === null || typeof def.run !== "function") {
      throw new TypeError(`${at}.run must be a function`);
    }
    if (def.timeout !== undefined) {
      const ms =
        typeof def.timeout === "number" || typeof def.timeout === "string"
          ? parseDuration(def.timeout)
          : undefined;
      if (ms === undefined || ms < MIN_TIMEOUT_MS || ms > MAX_TIMEOUT_MS) {
        throw new RangeError(
          `${at}.timeout must be a duration from 1s to 15m, got ${JSON.stringify(def.timeout)}`,
        );
      }
    }
    if (
      def.retries !== undefined &&
      !(Number.isInteger(def.retries) && def.retries >= 0 && def.retries <= MAX_RETRIES)
    ) {
      throw new RangeError(
        `${at}.retries must be an integer from 0 to ${MAX_RETRIES}, got ${def.retries}`,
      );
    }
    if (def.concurrency !== undefined) validateConcurrency(`${at}.concurrency`, def.concurrency);
    if (def.rateLimit !== undefined) validateRateLimit(`${at}.rateLimit`, def.rateLimit);
  }
}

/** The handler names of a handler map (`string` for an untyped {@link Handlers}). */
export type HandlerName<H extends Handlers> = Extract<keyof H, string>;

/**
 * What handler `K` of `H` accepts as input: its schema's input type (before defaults and
 * transforms), or `unknown` for a handler without a schema or an untyped map.
 */
export type HandlerInput<H extends Handlers, K extends HandlerName<H>> = H[K] extends {
  input?: infer S extends z.ZodType;
}
  ? z.input<S>
  : unknown;

/** `input` optional when `I` admits `undefined` (or is `unknown`), required otherwise. */
export type InputField<I> = undefined extends I ? { input?: I } : { input: I };

/**
 * Parse a job's stored input with the handler's schema. A job submitted without input stores
 * `null` (JSON has no `undefined`), so a schema that refuses `null` but accepts `undefined`
 * (`z.object(…).optional()`) is given `undefined`: no input means no input, as the types say.
 */
export function parseInput(schema: z.ZodType, input: unknown): ReturnType<z.ZodType["safeParse"]> {
  const parsed = schema.safeParse(input);
  if (parsed.success || input !== null) return parsed;
  const absent = schema.safeParse(undefined);
  return absent.success ? absent : parsed;
}

/**
 * Identity helper for one handler, typing `run`'s input from `input` and keeping its result type
 * (as {@link defineHandlers} does, so a handler defined apart and put in the map keeps it too).
 *
 * @example
 * export const send = defineHandler({ input: z.object({ to: z.string() }), run: ({ to }) => mail(to) });
 */
export function defineHandler<S extends z.ZodType = z.ZodUnknown, R = unknown>(
  handler: HandlerDefinition<S> & { run(input: z.output<S>, ctx: HandlerContext): R },
): HandlerDefinition<S> & { run(input: z.output<S>, ctx: HandlerContext): R } {
  return handler;
}

/** A job to submit, as the broker accepts it (the HTTP body, validated). */
export interface SubmitJob {
  handler: string;
  input?: unknown;
  /** 1–10. @default 5 */
  priority?: number;
  /** Run after this long. Exclusive with `runAt`. */
  delay?: Duration;
  /** Run at this time (epoch ms, ISO string or Date). */
  runAt?: number | string | Date;
  timeout?: Duration;
  retries?: number;
  tags?: string[];
  idempotencyKey?: string;
}
