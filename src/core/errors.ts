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
