/**
 * @module
 * Errors of the domain and of handler authors. Each is a small named class with structured
 * fields; the HTTP layer renders them as problem+json in one place. Plus
 * {@link TickworkConfigError}, the one error of a setup tickwork cannot run with, whichever
 * layer notices it.
 *
 * The engine's refusals are named for what happened in the domain (`InvalidRequestError`,
 * `RecordNotFoundError`, `StateConflictError`, `NotPermittedError`); the HTTP client
 * (`tickwork/client`) has its own family, named for the HTTP answer (`ValidationError`,
 * `NotFoundError`, `ConflictError`, `ForbiddenError`, …), so a name never means two classes.
 * The engine's old names stay as deprecated aliases.
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

/**
 * `error`, its details' paths put under `at` when it is a {@link TickworkError} that has any: a
 * check of one job, made as part of a request that holds several (a flow's `children.0`).
 */
export function errorWithin(error: unknown, at: string): unknown {
  if (!(error instanceof TickworkError) || !error.errors) return error;
  (error as { errors: { path: string; message: string }[] }).errors = error.errors.map((e) => ({
    path: e.path === "" ? at : `${at}.${e.path}`,
    message: e.message,
  }));
  return error;
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

/** Input that fails validation (shape, types, ranges): HTTP 400 `invalid_request`. */
export class InvalidRequestError extends TickworkError {
  override name = "InvalidRequestError";
  constructor(message: string, errors?: { path: string; message: string }[]) {
    super(400, "invalid_request", message, errors ? { errors } : undefined);
  }
}

/** A job, schedule or dead letter that does not exist (HTTP 404). */
export class RecordNotFoundError extends TickworkError {
  override name = "RecordNotFoundError";
  constructor(what: string, id: string) {
    super(404, "not_found", `${what} "${id}" was not found`);
  }
}

/**
 * A state that does not allow the change (e.g. cancelling a job that already started): HTTP 409.
 */
export class StateConflictError extends TickworkError {
  override name = "StateConflictError";
  constructor(code: string, message: string) {
    super(409, code, message);
  }
}

/**
 * Authenticated, but not permitted: a scope the key lacks, a handler outside the manifest (HTTP
 * 403).
 */
export class NotPermittedError extends TickworkError {
  override name = "NotPermittedError";
  constructor(code: string, message: string) {
    super(403, code, message);
  }
}

/** @deprecated Renamed {@link InvalidRequestError} (`tickwork/client` has a `ValidationError` of its own). */
export const ValidationError = InvalidRequestError;
/** @deprecated Renamed {@link InvalidRequestError}. */
export type ValidationError = InvalidRequestError;
/** @deprecated Renamed {@link RecordNotFoundError} (`tickwork/client` has a `NotFoundError` of its own). */
export const NotFoundError = RecordNotFoundError;
/** @deprecated Renamed {@link RecordNotFoundError}. */
export type NotFoundError = RecordNotFoundError;
/** @deprecated Renamed {@link StateConflictError} (`tickwork/client` has a `ConflictError` of its own). */
export const ConflictError = StateConflictError;
/** @deprecated Renamed {@link StateConflictError}. */
export type ConflictError = StateConflictError;
/** @deprecated Renamed {@link NotPermittedError} (`tickwork/client` has a `ForbiddenError` of its own). */
export const ForbiddenError = NotPermittedError;
/** @deprecated Renamed {@link NotPermittedError}. */
export type ForbiddenError = NotPermittedError;

/** A job's or schedule's input is larger than its tenant may send. */
export class InputTooLargeError extends TickworkError {
  override name = "InputTooLargeError";
  constructor(message: string, options?: ConstructorParameters<typeof TickworkError>[3]) {
    super(413, "input_too_large", message, options);
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

/**
 * A caller holds as many realtime streams open as it may (`stream.maxPerKey`) and asked for one
 * more (HTTP 429): each open stream reads the store every round.
 */
export class TooManyStreamsError extends TickworkError {
  override name = "TooManyStreamsError";
  /** `Retry-After`: a stream of the caller's may have ended by then. */
  readonly retryAfterMs: number;
  constructor(max: number, retryAfterMs: number) {
    super(
      429,
      "too_many_streams",
      `this key holds ${max} streams open, as many as it may; close one, or try again in ${Math.ceil(retryAfterMs / 1000)} s`,
    );
    this.retryAfterMs = retryAfterMs;
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

// A handler's error is recognised by a brand its prototype carries (`Symbol.for`, the same in
// every copy of tickwork), not by `instanceof` alone: an app can load two copies of the package
// (a CommonJS project whose TypeScript handlers tsx compiles to `require`, two versions in
// node_modules), and an error thrown with one copy's class is no instance of the other's.
/**
 * Brands `cls`'s prototype with `tickwork.<name>` and answers the check of an error against it:
 * an instance of `cls`, or of the same class of another copy of tickwork.
 */
function brandCheck<T>(cls: { prototype: T }, name: string): (error: unknown) => error is T {
  const brand = Symbol.for(`tickwork.${name}`);
  Object.defineProperty(cls.prototype, brand, { value: true });
  return (error: unknown): error is T =>
    typeof error === "object" &&
    error !== null &&
    (error as Record<symbol, unknown>)[brand] === true;
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
 * Whether `error` is a {@link NonRetryableError}, of this copy of tickwork or another one.
 *
 * @example
 * isNonRetryableError(new NonRetryableError("no")); // true
 */
export const isNonRetryableError = brandCheck(NonRetryableError, "NonRetryableError");

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
/** Whether `error` is a {@link RetryAfterError}, of this copy of tickwork or another one. */
export const isRetryAfterError = brandCheck(RetryAfterError, "RetryAfterError");

/** A handler ran past its timeout; its `AbortSignal` was aborted. */
export class TimeoutError extends Error {
  override name = "TimeoutError";
}

/**
 * The job was cancelled while its handler ran (`DELETE /v1/jobs/:id`): its `AbortSignal` was
 * aborted with this reason, and the job ends `cancelled` (never retried).
 */
export class CancelledError extends Error {
  override name = "CancelledError";
}
/** Whether `error` is a {@link CancelledError}, of this copy of tickwork or another one. */
export const isCancelledError = brandCheck(CancelledError, "CancelledError");

/**
 * A setup tickwork cannot run with: a missing or malformed variable, an invalid configuration, a
 * store or port it cannot use. `variable` names the environment variable (or Worker binding) at
 * fault, `field` the option or configuration field, when there is one to name. The message says
 * what to set. Every platform throws this type (or a subclass that keeps an older name:
 * `StartError` and `ConfigError` of `tickwork/node`, `MissingEnvError` of `tickwork/cloudflare`,
 * `ConfigValidationError` of `tickwork/config`).
 *
 * @example
 * try {
 *   await startServer({ handlers, publicUrl: "jobs.example.com" });
 * } catch (error) {
 *   if (error instanceof TickworkConfigError) console.error(error.variable, error.message);
 *   else throw error;
 * }
 */
export class TickworkConfigError extends Error {
  override name = "TickworkConfigError";
  /** The environment variable at fault, e.g. `"TICKWORK_PUBLIC_URL"`. */
  readonly variable?: string;
  /** The option or configuration field at fault, e.g. `"publicUrl"`, `"tenants.0.keys.0.hash"`. */
  readonly field?: string;

  constructor(
    message: string,
    options?: { variable?: string | undefined; field?: string | undefined; cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    if (options?.variable !== undefined) this.variable = options.variable;
    if (options?.field !== undefined) this.field = options.field;
  }
}
