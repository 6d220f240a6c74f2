/**
 * @module
 * Domain failures reported by the Lua scripts as negative integers (include `errors.lua` mirrors
 * these values; `scripts.test.ts` checks they agree), and the error thrown for anything the store
 * cannot map to a Store result.
 */

/** Negative integer results of the scripts. */
export enum ErrorCode {
  /** The fencing token no longer holds the tick lease (`nextDue`, `commitTick`). */
  LeaseLost = -1,
  /** No job with that id (`cancelJob`, `finishRun`). */
  JobNotFound = -2,
  /** The job is missing or not `dead` (`retryDead`). */
  JobNotDead = -3,
}

/** A script answered something its wrapper does not expect (a bug or a foreign key layout). */
export class RedisStoreError extends Error {
  override name = "RedisStoreError";
  /** The script's error code, when it returned one. */
  readonly code?: ErrorCode;
  /** The operation (script name). */
  readonly operation: string;

  constructor(operation: string, message: string, options?: { code?: ErrorCode; cause?: unknown }) {
    super(`${operation}: ${message}`, { cause: options?.cause });
    this.operation = operation;
    if (options?.code !== undefined) this.code = options.code;
  }
}
