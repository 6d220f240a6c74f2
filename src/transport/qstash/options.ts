/**
 * @module
 * Options of the QStash transport, their defaults and their checks.
 */

import { MAX_TIMER_MS } from "../../core/duration.ts";

/** A duration as QStash's SDK accepts it: seconds, or `"<n>s" | "<n>m" | "<n>h" | "<n>d"`. */
export type QStashDuration = number | `${bigint}${"s" | "m" | "h" | "d"}`;

/**
 * QStash flow control for one handler's deliveries: at most `parallelism` in flight and at most
 * `rate` started per `period`, counted per `key` across everything published with that key.
 * At least one of `parallelism` and `rate` is required.
 *
 * @example
 * { parallelism: 5 }                              // five at a time
 * { key: "mail-provider", rate: 100, period: "1m" } // shared with other handlers using the key
 */
export interface FlowControlOption {
  /**
   * The flow-control key.
   * @default the handler name
   */
  key?: string;
  /** Most deliveries of the key in flight at once. */
  parallelism?: number;
  /** Most deliveries of the key started per `period`. */
  rate?: number;
  /**
   * The window of `rate`.
   * @default "1s" (QStash's default)
   */
  period?: QStashDuration;
}

/** Retries of the publish request itself on a network error (QStash answers are never retried). */
export type PublishRetry =
  | false
  | {
      /** @default 5 (the SDK's) when `retry` is an object without it; the option's default is 2 */
      retries?: number;
      /** Wait before retry `n` (0-based), in ms. @default (n) => Math.exp(n) * 50 */
      backoff?: (retryCount: number) => number;
    };

/** Options of {@link QStashTransport}. */
export interface QStashTransportOptions {
  /** QStash token (`QSTASH_TOKEN`). */
  token: string;
  /**
   * QStash API base URL (`QSTASH_URL`), e.g. a regional endpoint or a local double. Passed to the
   * SDK explicitly, so the SDK's own environment look-ups never choose it.
   * @default "https://qstash.upstash.io"
   */
  baseUrl?: string | undefined;
  /**
   * Public URL of the worker route, where QStash delivers every message. Normalised with
   * `new URL(…).href`; it is the signature's `sub`, so it must equal what the worker checks
   * (the app's `publicUrl + "/v1/worker"`).
   * @example "https://app.example.com/api/tickwork/v1/worker"
   */
  workerUrl: string;
  /**
   * Worker URLs per worker group: a job placed in a group (`placement.group`) is published to its
   * group's URL — each group a deployment of its own, started with that group
   * (docs/adr/0017-placement.md). A job of a group not listed goes to `workerUrl`, whose worker
   * refuses it (recorded on the job as `refused`) until QStash's retries are spent. The key
   * `default` names the URL of jobs without a group: a deployment that is itself in a group (its
   * `workerUrl` its own) sets it, so what it submits for the default group goes there.
   * @example { "gpu": "https://gpu.example.com/v1/worker", "default": "https://app.example.com/v1/worker" }
   */
  workerGroups?: Record<string, string> | undefined;
  /**
   * Public URL of the dead-letter route, which QStash calls once a message gave up. Without it a
   * message that gives up stays only in QStash's own DLQ and the job is not marked dead.
   * @example "https://app.example.com/api/tickwork/v1/dead"
   */
  failureCallbackUrl?: string | undefined;
  /** Current signing key (`QSTASH_CURRENT_SIGNING_KEY`). */
  currentSigningKey: string;
  /** Next signing key (`QSTASH_NEXT_SIGNING_KEY`), accepted too during key rotation. */
  nextSigningKey: string;
  /**
   * Delay between retries as a QStash expression in milliseconds over `retried`
   * (`Upstash-Retry-Delay`). Unset: QStash's default backoff, `min(1 day, e^(2.5·n))` seconds.
   * @example "pow(2, retried) * 1000"
   */
  retryDelay?: string | undefined;
  /**
   * Flow control per handler name. Handlers not listed are not flow-controlled.
   *
   * A message QStash holds back for flow control is, as far as tickwork can tell, undelivered:
   * after the engine's `reapAfterMs` (1 h) its job's watch sends it again, and after `maxReaps`
   * (24) sends without a start it is dead-lettered as abandoned. Keep a handler's backlog shorter
   * than that (backlog ÷ `rate` per `period`, or × the handler's time ÷ `parallelism`), or raise
   * `reapAfterMs` (docs/adr/0010-reaper-watches.md).
   * @example { "email.send": { parallelism: 5 }, "report.build": { rate: 10, period: "1m" } }
   */
  flowControl?: Record<string, FlowControlOption> | undefined;
  /**
   * Added to a job's handler timeout to form the HTTP timeout QStash gives each delivery
   * (`Upstash-Timeout`, whole seconds, rounded up): the worker needs a moment after the handler
   * times out to record the failure and answer.
   * @default 5_000
   */
  responseGraceMs?: number | undefined;
  /**
   * How long one publish request may take before its messages are reported `ok: false` (they
   * stay in the outbox and are re-published under the same dedup id). The SDK cannot abort the
   * request, so it may still complete; the dedup id makes that harmless. At most 2147483647.
   * @default 10_000
   */
  publishTimeoutMs?: number | undefined;
  /**
   * The longest delay the QStash plan takes (Free: 7 days; pay-as-you-go: a year). QStash refuses
   * a message due later; such a message stays in the outbox instead (`deferred`) and a tick
   * publishes it once it is within this delay.
   * @default 604_800_000 (7 days, the Free plan's)
   */
  maxDelayMs?: number | undefined;
  /**
   * Messages per `/v2/batch` request (QStash documents no maximum; 100 is conservative).
   * @default 100
   */
  batchSize?: number | undefined;
  /**
   * Retries of a publish request that failed on the network.
   * @default { retries: 2 }
   */
  retry?: PublishRetry | undefined;
  /**
   * Sends the `/v2/batch` requests instead of the SDK's HTTP client (which calls the global
   * `fetch`). On Node, `nodeQStashHttp()` from `tickwork/node` (what `tickwork start` uses) sends
   * them over a keep-alive `node:http` agent for about a third of `fetch`'s CPU per request, and
   * aborts a request that outlives `publishTimeoutMs`. Requests, retries and errors are as with the
   * SDK's client (see `docs/adr/0025-node-http-for-qstash-batches.md`).
   * @default the SDK's client
   */
  http?: QStashHttp | undefined;
  /**
   * Seconds of clock skew tolerated on a signature's `nbf` and `exp` when verifying.
   * @default 0 (as `Receiver`)
   */
  clockToleranceSec?: number | undefined;
  /**
   * Clock (epoch ms), to decide whether a `notBefore` is still in the future.
   * @default Date.now
   */
  now?: () => number;
}

/** Options with defaults applied and checked. */
export interface ResolvedQStashOptions {
  token: string;
  baseUrl: string;
  workerUrl: string;
  workerGroups: ReadonlyMap<string, string>;
  failureCallbackUrl: string | undefined;
  currentSigningKey: string;
  nextSigningKey: string;
  retryDelay: string | undefined;
  flowControl: Record<string, FlowControlOption>;
  responseGraceMs: number;
  publishTimeoutMs: number;
  maxDelayMs: number;
  batchSize: number;
  retry: PublishRetry;
  clockToleranceSec: number;
  now: () => number;
  http: QStashHttp | undefined;
}

/** One POST to QStash: where, with which headers, and the body. */
export interface QStashHttpRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Aborted when the transport gives up on the request (`publishTimeoutMs`). */
  signal: AbortSignal;
}

/** QStash's answer: its status and body, as text. */
export interface QStashHttpResponse {
  status: number;
  body: string;
}

/**
 * Sends one request and resolves with the answer, whatever its status; rejects only when there is
 * no answer (a network error, or `signal` aborted). The transport retries a rejection under its
 * `retry` option and turns a non-2xx answer into a failed publish.
 */
export type QStashHttp = (request: QStashHttpRequest) => Promise<QStashHttpResponse>;

/** The Free plan's longest delay (7 days): {@link QStashTransportOptions.maxDelayMs}. */
export const DEFAULT_MAX_DELAY_MS = 604_800_000;

/**
 * How much later than "`maxDelayMs` before its time" a deferred message is offered again: room
 * for the store's clock and QStash's to differ.
 */
export const DEFER_MARGIN_MS = 60_000;

/** QStash's production endpoint. */
export const DEFAULT_QSTASH_URL = "https://qstash.upstash.io";

/**
 * Apply defaults; throws `TypeError` for a bad URL and `RangeError` for an empty credential, a bad
 * number or a flow control with neither `parallelism` nor `rate`.
 */
export function resolveQStashOptions(options: QStashTransportOptions): ResolvedQStashOptions {
  for (const key of ["token", "currentSigningKey", "nextSigningKey"] as const) {
    // The SDK falls back to process.env for a missing credential; we never want that.
    if (!options[key]) throw new RangeError(`${key} must be a non-empty string`);
  }
  const resolved: ResolvedQStashOptions = {
    token: options.token,
    baseUrl: new URL(options.baseUrl ?? DEFAULT_QSTASH_URL).href.replace(/\/+$/, ""),
    workerUrl: new URL(options.workerUrl).href,
    workerGroups: new Map(
      Object.entries(options.workerGroups ?? {}).map(([group, url]) => [group, new URL(url).href]),
    ),
    failureCallbackUrl:
      options.failureCallbackUrl === undefined
        ? undefined
        : new URL(options.failureCallbackUrl).href,
    currentSigningKey: options.currentSigningKey,
    nextSigningKey: options.nextSigningKey,
    retryDelay: options.retryDelay?.trim() || undefined,
    flowControl: options.flowControl ?? {},
    responseGraceMs: options.responseGraceMs ?? 5_000,
    publishTimeoutMs: options.publishTimeoutMs ?? 10_000,
    maxDelayMs: options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS,
    batchSize: options.batchSize ?? 100,
    retry: options.retry ?? { retries: 2 },
    clockToleranceSec: options.clockToleranceSec ?? 0,
    now: options.now ?? Date.now,
    http: options.http,
  };
  // Both at most a timer's longest delay: a publish timeout past it failed every publish after
  // 1 ms, and an infinite grace made every delivery's timeout `Infinity`.
  const { responseGraceMs, publishTimeoutMs } = resolved;
  if (!(responseGraceMs >= 0 && responseGraceMs <= MAX_TIMER_MS)) {
    throw new RangeError(
      `responseGraceMs must be a number of ms from 0 to ${MAX_TIMER_MS}, got ${responseGraceMs}`,
    );
  }
  if (!(publishTimeoutMs > 0 && publishTimeoutMs <= MAX_TIMER_MS)) {
    throw new RangeError(
      `publishTimeoutMs must be a positive number of ms up to ${MAX_TIMER_MS}, got ${publishTimeoutMs}`,
    );
  }
  if (!(resolved.clockToleranceSec >= 0)) throw new RangeError("clockToleranceSec must be ≥ 0");
  // At least a minute past the deferral's margin, so a deferred message is due for publishing
  // before it is due to run.
  if (!(Number.isSafeInteger(resolved.maxDelayMs) && resolved.maxDelayMs >= 2 * DEFER_MARGIN_MS)) {
    throw new RangeError(
      `maxDelayMs must be a whole number of ms of at least ${2 * DEFER_MARGIN_MS}, got ${resolved.maxDelayMs}`,
    );
  }
  if (!Number.isInteger(resolved.batchSize) || resolved.batchSize < 1) {
    throw new RangeError("batchSize must be a positive integer");
  }
  for (const [handler, flow] of Object.entries(resolved.flowControl)) {
    if (flow.parallelism === undefined && flow.rate === undefined) {
      throw new RangeError(`flowControl["${handler}"] needs parallelism or rate`);
    }
    for (const field of ["parallelism", "rate"] as const) {
      const value = flow[field];
      if (value !== undefined && !(Number.isInteger(value) && value > 0)) {
        throw new RangeError(`flowControl["${handler}"].${field} must be a positive integer`);
      }
    }
  }
  return resolved;
}
