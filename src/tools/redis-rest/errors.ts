/**
 * @module
 * The one error the bridge renders: an HTTP status and a message, answered as `{ "error": … }`
 * (the body shape `@upstash/redis` reads on every non-2xx response).
 */

/** HTTP statuses the bridge answers with besides 200. */
export type RedisRestStatus = 400 | 401 | 404 | 405 | 413 | 500 | 503;

/**
 * A request the bridge refuses or cannot serve. The message is what the client's `UpstashError`
 * will carry, so a Redis error keeps Redis's own text (`ERR …`, `NOSCRIPT …`, `EXECABORT …`).
 */
export class RedisRestError extends Error {
  override name = "RedisRestError";
  /** The HTTP status of the answer. */
  readonly status: RedisRestStatus;

  constructor(status: RedisRestStatus, message: string, options?: { cause?: unknown }) {
    super(message, { cause: options?.cause });
    this.status = status;
  }
}
