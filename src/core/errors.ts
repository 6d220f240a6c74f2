/**
 * @module
 * Errors of the domain and of handler authors. Each is a small named class with structured
 * fields; the HTTP layer renders them as problem+json in one place.
 */

/** Base class: `status` is the HTTP status the error maps to, `code` a stable machine name. */
export class TickworkError extends Error {
  override name = "TickworkError";
  readonly status: number;
  readonly code: string;
  /** Field-level details (`path`, `message`) for validation errors. */
  readonly errors?: { path: string; message: string }[];

  constructor(
    status: number,
    code: string,
    message: string,
    options?: { cause?: unknown; errors?: { path: string; message: string }[] },
  ) {
    super(message, { cause: options?.cause });
    this.status = status;
    this.code = code;
    if (options?.errors) this.errors = options.errors;
  }
}

/** Input that is well-formed but cannot be accepted (unknown handler, invalid cron, bad time zone). */
export class UnprocessableError extends TickworkError {
  override name = "UnprocessableError";
  constructor(
    code: string,
    message: string,
    options?: ConstructorParameters<typeof TickworkError>[3],
  ) {
    super(422, code, message, options);
  }
}

/** Input that fails validation (shape, types, ranges). */
export class ValidationError extends TickworkError {
  override name = "ValidationError";
  constructor(message: string, errors?: { path: string; message: string }[]) {
    super(400, "invalid_request", message, errors ? { errors } : undefined);
  }
}

/** An id that does not exist. */
export class NotFoundError extends TickworkError {
  override name = "NotFoundError";
  constructor(what: string, id: string) {
    super(404, "not_found", `${what} "${id}" was not found`);
  }
}

/** A state that does not allow the change (e.g. cancelling a job that already started). */
export class ConflictError extends TickworkError {
  override name = "ConflictError";
  constructor(code: string, message: string) {
    super(409, code, message);
  }
}

/** Authenticated, but not permitted: a scope the key lacks, a handler outside the manifest. */
export class ForbiddenError extends TickworkError {
  override name = "ForbiddenError";
  constructor(code: string, message: string) {
    super(403, code, message);
  }
}

/** A job's or schedule's input is larger than its tenant may send. */
export class InputTooLargeError extends TickworkError {
  override name = "InputTooLargeError";
  constructor(message: string) {
    super(413, "input_too_large", message);
  }
}

/**
 * A tenant's quota refused the write (HTTP 429). `quota` is where the refusing window stands
 * (`remaining` 0, `resetMs` = when a write will be admitted again); `policy` lists every window of
 * the quota, for the `RateLimit-Policy` header.
 */
export class QuotaExceededError extends TickworkError {
  override name = "QuotaExceededError";
  /** `Retry-After`: when a write will be admitted again. */
  readonly retryAfterMs: number;
  readonly quota: { limit: number; remaining: number; windowMs: number; resetMs: number };
  readonly policy: readonly { windowMs: number; limit: number }[];

  constructor(
    what: "submit" | "schedule",
    quota: QuotaExceededError["quota"],
    policy: QuotaExceededError["policy"],
  ) {
    const seconds = Math.ceil(quota.resetMs / 1000);
    super(
      429,
      "quota_exceeded",
      `${what} quota of ${quota.limit} per ${describeWindow(quota.windowMs)} exceeded; ` +
        `try again in ${seconds} s`,
    );
    this.retryAfterMs = quota.resetMs;
    this.quota = quota;
    this.policy = policy;
  }
}

/** The degradation controller is `critical` and configured to reject (HTTP 503). */
export class OverloadedError extends TickworkError {
  override name = "OverloadedError";
  readonly retryAfterMs: number;
  constructor(retryAfterMs: number) {
    super(
      503,
      "overloaded",
      `the system is overloaded and not taking new jobs; try again in ${Math.ceil(retryAfterMs / 1000)} s`,
    );
    this.retryAfterMs = retryAfterMs;
  }
}

function describeWindow(ms: number): string {
  if (ms === 60_000) return "minute";
  if (ms === 3_600_000) return "hour";
  if (ms === 86_400_000) return "day";
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/**
 * Throw from a handler to fail the job at once, without retries.
 *
 * @example
 * if (!user) throw new NonRetryableError(`user ${id} does not exist`);
 */
export class NonRetryableError extends Error {
  override name = "NonRetryableError";
}

/**
 * Throw from a handler to be retried no earlier than `retryAfterMs` from now.
 *
 * @example
 * if (res.status === 429) throw new RetryAfterError("rate limited", 30_000);
 */
export class RetryAfterError extends Error {
  override name = "RetryAfterError";
  readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number, options?: { cause?: unknown }) {
    super(message, options);
    this.retryAfterMs = retryAfterMs;
  }
}

/** A handler ran past its timeout; its `AbortSignal` was aborted. */
export class TimeoutError extends Error {
  override name = "TimeoutError";
}
