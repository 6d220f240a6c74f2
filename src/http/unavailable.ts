/**
 * @module
 * Telling "the store is unreachable" (answer 503 + `Retry-After`) from a bug (answer 500).
 *
 * The stores surface their clients' errors as they are, so this recognises the connection
 * failures of the clients tickwork supports: ioredis over TCP and `fetch` (Upstash REST). A store
 * may also throw a `TickworkError` with status 503 itself, which `onError` renders directly.
 */

/** Socket and DNS error codes of Node and undici that mean "could not reach the server". */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
]);

/** ioredis: no connection and no (more) retries, or the offline queue is off. */
const IOREDIS_OFFLINE =
  /^(Connection is closed\.?|Stream isn't writeable.*|Reached the max retries per request limit.*)$/;

/**
 * True when `error` (or one of its causes) is a failure to reach the store.
 *
 * @example
 * isStoreUnavailable(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })); // true
 */
export function isStoreUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && NETWORK_CODES.has(code)) return true;
    if (current.name === "MaxRetriesPerRequestError" || IOREDIS_OFFLINE.test(current.message))
      return true;
    // A REST client's failure to reach Redis (src/store/redis/script.ts).
    if (current.name === "StoreUnreachableError") return true;
    if (current instanceof AggregateError && current.errors.some(isStoreUnavailable)) return true;
    current = current.cause;
  }
  return false;
}
