/**
 * @module
 * Handlers: what runs when a job or an occurrence is delivered. A map of name → definition.
 */
import type { z } from "zod";
import type { Duration } from "../core/duration.ts";
import type { JobRecord } from "../core/model.ts";
import type { Logger } from "./logger.ts";

/** What a handler sees besides its input. */
export interface HandlerContext {
  jobId: string;
  /** 1 on the first attempt. */
  attempt: number;
  /** Aborted when the job's timeout passes; pass it to `fetch` and friends. */
  signal: AbortSignal;
  /** Set when the job is an occurrence of a schedule. */
  scheduleId?: string;
  /** The occurrence's nominal fire time (ms), for occurrences. */
  fireAt?: number;
  /** Structured logger carrying the job id. */
  logger: Logger;
  /** Submit follow-up work (same tenant). */
  jobs: { submit(job: SubmitJob): Promise<{ job: JobRecord; replayed: boolean }> };
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
  /** Default timeout for jobs of this handler. @default "60s" */
  timeout?: Duration;
  /** Default retries for jobs of this handler. @default 3 */
  retries?: number;
  run(input: z.output<Schema>, ctx: HandlerContext): unknown | Promise<unknown>;
}

/** Handlers by name. */
export type Handlers = Record<string, HandlerDefinition<z.ZodType>>;

/**
 * Identity helper that types each handler's `run` input from its `input` schema.
 *
 * @example
 * const handlers = defineHandlers({
 *   resize: { input: z.object({ url: z.string().url() }), run: ({ url }) => resize(url) },
 * });
 */
export function defineHandlers<T extends Record<string, unknown>>(
  handlers: {
    [K in keyof T]: HandlerDefinition<z.ZodType<T[K]>>;
  },
): { [K in keyof T]: HandlerDefinition<z.ZodType<T[K]>> } {
  return handlers;
}

/**
 * Identity helper for one handler, typing `run`'s input from `input`.
 *
 * @example
 * export const send = defineHandler({ input: z.object({ to: z.string() }), run: ({ to }) => mail(to) });
 */
export function defineHandler<S extends z.ZodType = z.ZodUnknown>(
  handler: HandlerDefinition<S>,
): HandlerDefinition<S> {
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
