/**
 * @module
 * Errors as `application/problem+json` (RFC 9457), rendered in one place: the app's `onError`
 * (and its not-found handler). Domain errors carry their status; anything else is a 500 that is
 * logged with the request id and answered without internals.
 */
import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import * as z from "zod";
import { TickworkError } from "../core/errors.ts";
import type { FieldIssue, Problem } from "../core/wire.ts";
import type { Logger } from "../engine/logger.ts";
import type { AppEnv } from "./options.ts";
import { isStoreUnavailable } from "./unavailable.ts";

// The problem document is part of the answers' JSON, declared once in core (the client reads it).
export type { FieldIssue, Problem };

/** Media type of every error answer. */
export const PROBLEM_JSON = "application/problem+json";

/** Seconds a client is told to wait after a 503 that does not say. */
const RETRY_AFTER_UNAVAILABLE_SEC = 5;

const STATUS: Record<number, { title: string; code: string }> = {
  400: { title: "Bad Request", code: "invalid_request" },
  401: { title: "Unauthorized", code: "unauthorized" },
  403: { title: "Forbidden", code: "forbidden" },
  404: { title: "Not Found", code: "not_found" },
  405: { title: "Method Not Allowed", code: "method_not_allowed" },
  409: { title: "Conflict", code: "conflict" },
  413: { title: "Content Too Large", code: "content_too_large" },
  415: { title: "Unsupported Media Type", code: "unsupported_media_type" },
  422: { title: "Unprocessable Content", code: "unprocessable" },
  429: { title: "Too Many Requests", code: "too_many_requests" },
  // QStash's "do not retry" (the queue routes' answer to a delivery that must not run again).
  489: { title: "Not Retryable", code: "not_retryable" },
  500: { title: "Internal Server Error", code: "internal" },
  503: { title: "Service Unavailable", code: "unavailable" },
};

/**
 * A problem document for `status`; `code` defaults to the status's generic one.
 *
 * @example
 * problem(404, "no route for GET /nope"); // { type: "urn:tickwork:problem:not_found", title: "Not Found", … }
 */
export function problem(
  status: number,
  detail: string,
  code?: string,
  errors?: FieldIssue[],
): Problem {
  const known = STATUS[status];
  return {
    type: `urn:tickwork:problem:${code ?? known?.code ?? `http_${status}`}`,
    title: known?.title ?? "Error",
    status,
    detail,
    ...(errors && errors.length > 0 ? { errors } : {}),
  };
}

/** The problem answer; headers set earlier on `c` (request id, `Allow`, …) are kept. */
export function problemResponse(
  c: Context<AppEnv>,
  body: Problem,
  headers: Record<string, string> = {},
): Response {
  return c.body(JSON.stringify(body), body.status as ContentfulStatusCode, {
    ...headers,
    "Content-Type": PROBLEM_JSON,
  });
}

/** How an error is answered: its problem document and extra headers. `internal` errors get logged. */
export function toProblem(error: unknown): {
  body: Problem;
  headers: Record<string, string>;
  internal: boolean;
} {
  if (error instanceof TickworkError) {
    return {
      body: problem(error.status, error.message, error.code, error.errors),
      headers: retryHeaders(error),
      internal: false,
    };
  }
  if (error instanceof z.ZodError) {
    const issues = error.issues.map((i) => ({
      path: i.path.map(String).join("."),
      message: i.message,
    }));
    return {
      body: problem(400, "invalid request", undefined, issues),
      headers: {},
      internal: false,
    };
  }
  if (error instanceof HTTPException && error.status < 500) {
    const title = STATUS[error.status]?.title ?? "Error";
    return { body: problem(error.status, error.message || title), headers: {}, internal: false };
  }
  if (isStoreUnavailable(error)) {
    return {
      body: problem(503, "the store is unreachable; try again shortly", "store_unavailable"),
      headers: { "Retry-After": String(RETRY_AFTER_UNAVAILABLE_SEC) },
      internal: false,
    };
  }
  return {
    body: problem(500, "unexpected error; the server log has the details"),
    headers: {},
    internal: true,
  };
}

/**
 * The app's `onError`: every thrown error becomes one problem+json answer.
 *
 * @example
 * app.onError(renderError(logger));
 */
export function renderError(logger: Logger): ErrorHandler<AppEnv> {
  return function renderError(error, c) {
    const { body, headers } = failure(logger, error, c.get("requestId"), c.req.method, c.req.path);
    return problemResponse(c, body, headers);
  };
}

/**
 * What {@link renderError} answers for `error` on a request, logged as it logs it (an internal
 * error with its stack, any other 5xx as a warning): for a route answered outside Hono.
 */
export function failure(
  logger: Logger,
  error: unknown,
  requestId: string,
  method: string,
  path: string,
): { body: Problem; headers: Record<string, string> } {
  const { body, headers, internal } = toProblem(error);
  const fields = { requestId, method, path, status: body.status };
  if (internal) logger.error("request failed", { ...fields, error: describe(error, true) });
  else if (body.status >= 500)
    logger.warn("request failed", { ...fields, error: describe(error, false) });
  return { body, headers };
}

/**
 * The app's not-found handler: 404 problem+json for any path no route matches; the detail ends
 * with `note` (e.g. which roles the app serves).
 *
 * @example
 * app.notFound(notFoundHandler("roles served: api")); // "no route for GET /v1/tick (roles served: api)"
 */
export function notFoundHandler(note?: string): NotFoundHandler<AppEnv> {
  const suffix = note ? ` (${note})` : "";
  return function notFound(c) {
    return problemResponse(c, problem(404, `no route for ${c.req.method} ${c.req.path}${suffix}`));
  };
}

/** An error for the log: its stack (or message), then each cause's message. */
function describe(error: unknown, stack: boolean): string {
  if (!(error instanceof Error)) return String(error);
  let text = stack
    ? (error.stack ?? `${error.name}: ${error.message}`)
    : `${error.name}: ${error.message}`;
  for (let cause = error.cause, depth = 0; cause !== undefined && depth < 3; depth++) {
    text += ` (cause: ${cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)})`;
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return text;
}

/** `Retry-After` for a 429 or 503: the error's own `retryAfterMs`, else a default for 503. */
function retryHeaders(error: TickworkError): Record<string, string> {
  if (error.status !== 429 && error.status !== 503) return {};
  const ms = (error as { retryAfterMs?: unknown }).retryAfterMs;
  const sec = typeof ms === "number" && ms > 0 ? Math.ceil(ms / 1000) : RETRY_AFTER_UNAVAILABLE_SEC;
  return { "Retry-After": String(sec) };
}
