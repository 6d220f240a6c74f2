/**
 * @module
 * Options of the local transport and their defaults.
 */
import { MAX_TIMER_MS } from "../../core/duration.ts";
import type { LocalDeliveryError } from "./errors.ts";

/** Options of {@link LocalTransport}. */
export interface LocalTransportOptions {
  /**
   * Where every message is delivered (`POST`). Normalised with `new URL(…).href`, which is also the
   * signature's `sub`, so it equals `request.url` on the receiving side.
   * @example "http://127.0.0.1:3000/v1/worker"
   */
  workerUrl: string;
  /**
   * Where a message that gave up is reported (`POST`, QStash's failure-callback body). None if unset.
   * @example "http://127.0.0.1:3000/v1/dead"
   */
  failureCallbackUrl?: string | undefined;
  /** Current signing key: deliveries are signed with it. */
  signingKey: string;
  /** Next signing key: `verify` also accepts signatures made with it (key rotation). */
  nextSigningKey?: string | undefined;
  /**
   * Sends one request. Pass an app's `fetch` to deliver in-process without a server.
   * @default globalThis.fetch
   * @example deliver: (request) => app.fetch(request)
   */
  deliver?: (request: Request) => Response | Promise<Response>;
  /**
   * Wait before the next retry, given how many retries were made so far. A `Retry-After` answer
   * (seconds, HTTP date or duration, at most one day) takes precedence, as on QStash.
   * @default (retried) => Math.min(1000 * 2 ** retried, 30_000)
   */
  backoff?: (retried: number) => number;
  /**
   * How long a dedup id is remembered after its first publish.
   * @default 600_000
   */
  dedupWindowMs?: number | undefined;
  /**
   * Most dedup ids remembered at once (about 100 bytes each). Past it, the oldest id is forgotten
   * before its window ends — a duplicate of it published in the rest of that window would be
   * delivered again — and `stats().dedupEvictedEarly` counts it. The default holds a full
   * 10-minute window at over 1,600 messages/s (about 100 MB at most); lower it to bound memory
   * tighter, at the risk of duplicates under a higher rate.
   * @default 1_000_000
   */
  dedupMaxEntries?: number | undefined;
  /**
   * Retries of the failure callback itself (it is not reported anywhere if it gives up).
   * @default 3
   */
  failureCallbackRetries?: number | undefined;
  /**
   * An attempt that has not answered by then is aborted and counts as failed (QStash's
   * "max HTTP response duration"). At most 2147483647 (a timer's longest delay).
   * @default 900_000
   */
  requestTimeoutMs?: number | undefined;
  /**
   * Most attempts in flight at once; more wait their turn.
   * @default Infinity
   */
  parallelism?: number | undefined;
  /**
   * Clock (epoch ms) for `notBefore` and the dedup window. Signatures always use the real time,
   * since receivers check them against theirs.
   * @default Date.now
   */
  now?: () => number;
  /**
   * Told of every message that gave up and of every failure callback that did.
   * @default logs a warning to the console
   */
  onError?: (error: LocalDeliveryError) => void;
}

/** QStash-like exponential backoff, capped for development: 1 s, 2 s, 4 s … 30 s. */
export function defaultBackoff(retried: number): number {
  return Math.min(1000 * 2 ** retried, 30_000);
}

/** Options with defaults applied and URLs normalised. */
export interface ResolvedOptions {
  workerUrl: string;
  failureCallbackUrl: string | undefined;
  signingKey: string;
  nextSigningKey: string | undefined;
  deliver: (request: Request) => Response | Promise<Response>;
  backoff: (retried: number) => number;
  dedupWindowMs: number;
  dedupMaxEntries: number;
  failureCallbackRetries: number;
  requestTimeoutMs: number;
  parallelism: number;
  now: () => number;
  onError: (error: LocalDeliveryError) => void;
}

/** Apply defaults; throws `TypeError` for a bad URL, `RangeError` for a bad number or empty key. */
export function resolveOptions(options: LocalTransportOptions): ResolvedOptions {
  if (!options.signingKey) throw new RangeError("signingKey must be a non-empty string");
  const resolved: ResolvedOptions = {
    workerUrl: new URL(options.workerUrl).href,
    failureCallbackUrl:
      options.failureCallbackUrl === undefined
        ? undefined
        : new URL(options.failureCallbackUrl).href,
    signingKey: options.signingKey,
    nextSigningKey: options.nextSigningKey || undefined,
    deliver: options.deliver ?? ((request) => fetch(request)),
    backoff: options.backoff ?? defaultBackoff,
    dedupWindowMs: options.dedupWindowMs ?? 600_000,
    dedupMaxEntries: options.dedupMaxEntries ?? 1_000_000,
    failureCallbackRetries: options.failureCallbackRetries ?? 3,
    requestTimeoutMs: options.requestTimeoutMs ?? 900_000,
    parallelism: options.parallelism ?? Number.POSITIVE_INFINITY,
    now: options.now ?? Date.now,
    onError: options.onError ?? ((error) => console.warn(`[tickwork/local] ${error.message}`)),
  };
  for (const key of ["dedupWindowMs", "requestTimeoutMs", "parallelism"] as const) {
    if (!(resolved[key] > 0)) throw new RangeError(`${key} must be positive`);
  }
  // A timer's delay: past its limit every attempt was aborted after 1 ms.
  if (!(resolved.requestTimeoutMs <= MAX_TIMER_MS)) {
    throw new RangeError(
      `requestTimeoutMs must be a number of ms from 1 to ${MAX_TIMER_MS}, got ${resolved.requestTimeoutMs}`,
    );
  }
  if (!Number.isInteger(resolved.failureCallbackRetries) || resolved.failureCallbackRetries < 0) {
    throw new RangeError("failureCallbackRetries must be a non-negative integer");
  }
  return resolved;
}
