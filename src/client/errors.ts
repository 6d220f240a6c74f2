/**
 * @module
 * Errors the client throws: {@link TickworkApiError} (and a subclass per status family) for error
 * answers of the API, and job outcome errors for {@link JobHandle.result}.
 *
 * This family is the client's own, built from HTTP answers (`status`, the problem+json body,
 * `requestId`), and named for the answer: `ValidationError` is a 400 or 422, `NotFoundError` a
 * 404, and so on. The engine's errors (`tickwork`, thrown in process by `engine.broker`) are a
 * separate family under `TickworkError`, named for the domain (`InvalidRequestError`,
 * `RecordNotFoundError`, `StateConflictError`, `NotPermittedError`, …), so no name means two
 * classes. `tickwork` still exports the engine's old names (`ValidationError`, `NotFoundError`,
 * `ConflictError`, `ForbiddenError`) as deprecated aliases of those: they never match an error
 * this client throws. Catch the client's errors with the classes of `tickwork/client`.
 */
import type { Job, Problem, RateLimitState } from "./types.ts";

/**
 * The API answered with an error status. `problem` is its problem+json body (synthesised from the
 * status when the body was not one).
 *
 * @example
 * try {
 *   await client.jobs.get("nope");
 * } catch (error) {
 *   if (error instanceof NotFoundError) console.log(error.problem.detail);
 *   else throw error;
 * }
 */
export class TickworkApiError extends Error {
  override name = "TickworkApiError";
  /** HTTP status. */
  readonly status: number;
  /** The problem document. */
  readonly problem: Problem;
  /** Stable machine name: the problem `type`'s last segment, e.g. `"unknown_handler"`. */
  readonly code: string;
  /** The answer's `x-request-id`, to find it in the server log. */
  readonly requestId: string | undefined;

  constructor(status: number, problem: Problem, requestId?: string) {
    super(`${status} ${problem.title}: ${problem.detail}`);
    this.status = status;
    this.problem = problem;
    this.code = problemCode(problem.type, status);
    this.requestId = requestId;
  }

  /** Field-level issues of a 400 or 422. */
  get errors(): { path: string; message: string }[] {
    return this.problem.errors ?? [];
  }
}

/**
 * A problem `type`'s machine name: the last segment of a URN (`urn:tickwork:problem:not_found` →
 * `not_found`) or of a URL's path (`https://example.com/probs/out-of-credit` → `out-of-credit`);
 * `http_<status>` for `about:blank` (RFC 9457's default: no type beyond the status) and for a
 * type with no name in it.
 */
function problemCode(type: string, status: number): string {
  const fallback = `http_${status}`;
  if (type === "about:blank") return fallback;
  if (/^https?:\/\//i.test(type)) {
    let path = type;
    try {
      path = new URL(type).pathname;
    } catch {
      return fallback;
    }
    const segments = path.split("/").filter((segment) => segment !== "");
    return segments.length > 0 ? decodeSegment(segments[segments.length - 1]!) : fallback;
  }
  return type.split(":").pop() || fallback;
}

/** A URL path segment as text (as it was, when its escapes are not UTF-8). */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** 400 (malformed body or query) or 422 (unknown handler, invalid cron or time zone…). */
export class ValidationError extends TickworkApiError {
  override name = "ValidationError";
}

/** 401: no or bad API key. */
export class UnauthorizedError extends TickworkApiError {
  override name = "UnauthorizedError";
}

/** 403: the key may not do this. */
export class ForbiddenError extends TickworkApiError {
  override name = "ForbiddenError";
}

/** 404: unknown id. */
export class NotFoundError extends TickworkApiError {
  override name = "NotFoundError";
}

/** 409: the state does not allow it (e.g. cancelling a job that already started). */
export class ConflictError extends TickworkApiError {
  override name = "ConflictError";
}

/** 429: a quota is exhausted. */
export class RateLimitedError extends TickworkApiError {
  override name = "RateLimitedError";
  /** Seconds to wait before trying again (`Retry-After`), if the server said. */
  readonly retryAfter: number | undefined;
  constructor(status: number, problem: Problem, requestId?: string, retryAfter?: number) {
    super(status, problem, requestId);
    this.retryAfter = retryAfter;
  }
}

/** 503: overloaded, or the store is unreachable. */
export class UnavailableError extends TickworkApiError {
  override name = "UnavailableError";
  /** Seconds to wait before trying again (`Retry-After`), if the server said. */
  readonly retryAfter: number | undefined;
  constructor(status: number, problem: Problem, requestId?: string, retryAfter?: number) {
    super(status, problem, requestId);
    this.retryAfter = retryAfter;
  }
}

/** The answer's `RateLimit-*` headers, or `undefined` when it has none (or they are not numbers). */
export function rateLimitOf(headers: Headers): RateLimitState | undefined {
  const limit = headerCount(headers.get("ratelimit-limit"));
  const remaining = headerCount(headers.get("ratelimit-remaining"));
  const resetSeconds = headerCount(headers.get("ratelimit-reset"));
  if (limit === undefined || remaining === undefined || resetSeconds === undefined) {
    return undefined;
  }
  return { limit, remaining, resetSeconds };
}

/** A header holding a whole number of at most 15 digits, or `undefined`. */
function headerCount(value: string | null): number | undefined {
  return value !== null && /^\d{1,15}$/.test(value.trim()) ? Number(value.trim()) : undefined;
}

/**
 * No answer within the client's `timeout` (`createClient`): the request was aborted. Not an
 * answer of the server's, so not a {@link TickworkApiError}; a submit that timed out may still
 * have been stored (send it again with the same `idempotencyKey`).
 */
export class RequestTimeoutError extends Error {
  override name = "RequestTimeoutError";
  /** How long it waited (ms). */
  readonly timeoutMs: number;
  /**
   * @param whose the timeout that ran out: the client's (`createClient({ timeout })`), or a
   *   `result({ timeout })` whose polls the server never answered
   */
  constructor(what: string, timeoutMs: number, whose: "client" | "result" = "client") {
    super(
      `${what}: no answer within ${timeoutMs} ms (${whose === "client" ? "the client's timeout" : "result()'s timeout and a second for the answer"})`,
    );
    this.timeoutMs = timeoutMs;
  }
}

/** The error for an error answer: the subclass of its status, else {@link TickworkApiError}. */
export function apiError(response: Response, body: unknown): TickworkApiError {
  const { status } = response;
  const problem = asProblem(body, response);
  const requestId = response.headers.get("x-request-id") ?? undefined;
  const retryAfter = parseRetryAfter(response.headers.get("retry-after"));
  if (status === 400 || status === 422) return new ValidationError(status, problem, requestId);
  if (status === 401) return new UnauthorizedError(status, problem, requestId);
  if (status === 403) return new ForbiddenError(status, problem, requestId);
  if (status === 404) return new NotFoundError(status, problem, requestId);
  if (status === 409) return new ConflictError(status, problem, requestId);
  if (status === 429) return new RateLimitedError(status, problem, requestId, retryAfter);
  if (status === 503) return new UnavailableError(status, problem, requestId, retryAfter);
  return new TickworkApiError(status, problem, requestId);
}

/**
 * The job ended without a result: `dead` (retries spent, or a non-retryable failure) or
 * `skipped` (an occurrence that overlapped its predecessor, or had not begun when its schedule was
 * paused or deleted; it has no `error`). `job.error` says why a dead job failed.
 */
export class JobFailedError extends Error {
  override name = "JobFailedError";
  readonly job: Job;
  constructor(job: Job) {
    super(
      `job ${job.id} is ${job.status}${job.error ? `: ${job.error.name}: ${job.error.message}` : ""}`,
    );
    this.job = job;
  }
}

/** The job was cancelled before it ran. */
export class JobCancelledError extends Error {
  override name = "JobCancelledError";
  readonly job: Job;
  constructor(job: Job) {
    super(`job ${job.id} was cancelled`);
    this.job = job;
  }
}

/** `result({ timeout })` gave up waiting; `job` is the last state seen (it may still finish). */
export class ResultTimeoutError extends Error {
  override name = "ResultTimeoutError";
  readonly job: Job;
  constructor(job: Job, timeoutMs: number) {
    super(`job ${job.id} is still ${job.status} after ${timeoutMs} ms`);
    this.job = job;
  }
}

function asProblem(body: unknown, response: Response): Problem {
  const b = (typeof body === "object" && body !== null ? body : {}) as Partial<Problem>;
  return {
    type: typeof b.type === "string" ? b.type : `urn:tickwork:problem:http_${response.status}`,
    title: typeof b.title === "string" ? b.title : response.statusText || "Error",
    status: response.status,
    detail:
      typeof b.detail === "string"
        ? b.detail
        : typeof body === "string" && body
          ? body.slice(0, 500)
          : `HTTP ${response.status}`,
    ...(Array.isArray(b.errors) ? { errors: b.errors } : {}),
  };
}

/** `Retry-After` as seconds: delta-seconds, or an HTTP date counted from now. */
function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  // A date names its month and day in letters; `Date.parse` also reads "1.5" and "-1" as dates.
  if (!/[A-Za-z]{3}/.test(value)) return undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}
