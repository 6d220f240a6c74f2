/**
 * @module
 * The local transport: an in-process queue that delivers over HTTP with QStash's semantics —
 * not-before, dedup window, signed `POST`s with the `Upstash-*` headers, retries with backoff (and
 * `Retry-After`), 489 non-retryable, failure callback — so the engine cannot tell it from QStash.
 * State is in memory: pending deliveries do not survive the process (the outbox covers that).
 */
import type { OutboxMessage } from "../../core/model.ts";
import type { Delivery, DeliveryToken, PublishOutcome, Transport } from "../port.ts";
import { deliveryToken, signDelivery, verifySignature } from "../signing.ts";
import { DedupWindow } from "./dedup-window.ts";
import { LocalDeliveryError, LocalTransportClosedError } from "./errors.ts";
import { failureCallbackBody, type LastAttempt } from "./failure-callback.ts";
import { type LocalTransportOptions, type ResolvedOptions, resolveOptions } from "./options.ts";
import { retryAfterMs } from "./retry-after.ts";

// setTimeout fires at once for delays over 2^31 - 1 ms, so longer waits are chained.
const MAX_TIMER_MS = 2_147_483_647;

/** Counters since the transport was created, and what is under way now. */
export interface LocalTransportStats {
  /** Messages accepted for delivery (not counting deduplicated ones). */
  published: number;
  /** Publishes answered with an earlier message's id. */
  deduplicated: number;
  /** Messages a worker answered with 2xx. */
  delivered: number;
  /** Retries scheduled for messages (not for failure callbacks). */
  retried: number;
  /** Messages that gave up (retries spent, or 489 non-retryable). */
  failed: number;
  callbacksDelivered: number;
  callbacksFailed: number;
  /** Deliveries (messages and callbacks) waiting for their time or a free slot. */
  pending: number;
  /** Attempts awaiting a response. */
  inFlight: number;
  /** Dedup ids remembered now (each holds its id and a few numbers, nothing of the message). */
  dedupIds: number;
  /** Dedup ids forgotten before their window ended, because `dedupMaxEntries` were remembered. */
  dedupEvictedEarly: number;
}

/**
 * One queued delivery: a published message, or the failure callback of one. Referenced only while
 * it is pending or in flight (#live, #ready, #inFlight, its timer); once delivered or given up,
 * nothing of it is kept — the dedup window holds the dedup id and a number, not the entry.
 */
interface Entry {
  kind: "message" | "failure-callback";
  messageId: string;
  url: string;
  body: string;
  notBefore: number;
  createdAt: number;
  maxRetries: number;
  retried: number;
  timer?: ReturnType<typeof setTimeout> | undefined;
}

type AttemptResult =
  | { delivered: true }
  | {
      delivered: false;
      last: LastAttempt;
      nonRetryable: boolean;
      retryAfter: number | undefined;
      cause?: unknown;
    };

/**
 * In-process {@link Transport} with QStash's delivery semantics, for development and tests.
 *
 * Each message is sent as `POST workerUrl` with body `JSON.stringify(message.job)` and headers
 * `Content-Type: application/json`, `Upstash-Message-Id`, `Upstash-Retried` and
 * `Upstash-Signature` (a QStash-style JWT that `@upstash/qstash`'s `Receiver` accepts).
 *
 * @example
 * const transport = new LocalTransport({
 *   workerUrl: "http://127.0.0.1:3000/v1/worker",
 *   failureCallbackUrl: "http://127.0.0.1:3000/v1/dead",
 *   signingKey: "sig_dev_current",
 *   nextSigningKey: "sig_dev_next",
 * });
 * await transport.publish(messages);
 * await transport.idle(); // in tests: wait until everything is delivered or has given up
 * await transport.close();
 */
export class LocalTransport implements Transport {
  readonly #options: ResolvedOptions;
  readonly #dedup: DedupWindow;
  /**
   * A message's id is `msg_` + this random prefix (80 bits) + its dedup-window ticket (48 bits), in
   * hex: the window answers a duplicate with the first message's id without keeping it.
   */
  readonly #idPrefix = hex(crypto.getRandomValues(new Uint8Array(10)));
  /** Entries not yet delivered or given up: sleeping, ready, or in flight. */
  readonly #live = new Set<Entry>();
  /** Entries whose time has come, waiting for a slot under `parallelism`. */
  readonly #ready: Entry[] = [];
  readonly #inFlight = new Map<Entry, AbortController>();
  readonly #attempts = new Set<Promise<void>>();
  #idleWaiters: Array<() => void> = [];
  #closed = false;
  #dlqSeq = 0;
  readonly #counts = {
    published: 0,
    deduplicated: 0,
    delivered: 0,
    retried: 0,
    failed: 0,
    callbacksDelivered: 0,
    callbacksFailed: 0,
  };

  /**
   * @throws TypeError for an invalid URL, RangeError for an empty key, a non-positive number or a
   * `dedupMaxEntries` that is not an integer from 1 to 2^28.
   */
  constructor(options: LocalTransportOptions) {
    this.#options = resolveOptions(options);
    this.#dedup = new DedupWindow({
      windowMs: this.#options.dedupWindowMs,
      maxEntries: this.#options.dedupMaxEntries,
      now: this.#options.now,
    });
  }

  /**
   * Accept messages for delivery, each not before `message.notBefore`, deduplicated by
   * `message.dedupId` within the window, retried `message.job.retries` times. Resolves once they
   * are queued, not delivered. A message that cannot be accepted gets `ok: false`.
   */
  async publish(messages: OutboxMessage[]): Promise<PublishOutcome[]> {
    return messages.map((message) => this.#accept(message));
  }

  /** True if the delivery carries a valid signature under the current or next key, for its URL. */
  async verify(delivery: Delivery): Promise<boolean> {
    const signature = delivery.headers.get("upstash-signature");
    if (!signature) return false;
    return verifySignature({
      signature,
      body: delivery.body,
      url: delivery.url,
      currentSigningKey: this.#options.signingKey,
      nextSigningKey: this.#options.nextSigningKey,
    });
  }

  /** The delivery's signature `jti` and expiry (see the Transport port). */
  deliveryToken(delivery: Delivery): DeliveryToken | undefined {
    const signature = delivery.headers.get("upstash-signature");
    return signature ? deliveryToken(signature) : undefined;
  }

  /** Resolves when nothing is pending or in flight, failure callbacks included (or on `close`). */
  idle(): Promise<void> {
    if (this.#live.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Counters and current load. */
  stats(): LocalTransportStats {
    return {
      ...this.#counts,
      pending: this.#live.size - this.#inFlight.size,
      inFlight: this.#inFlight.size,
      dedupIds: this.#dedup.size,
      dedupEvictedEarly: this.#dedup.evictedEarly,
    };
  }

  /**
   * Stop: cancel timers, abort attempts in flight and drop every pending delivery (no retries, no
   * failure callbacks) and the dedup window. Later publishes fail with `LocalTransportClosedError`.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#dedup.clear();
    for (const entry of this.#live) clearTimeout(entry.timer);
    for (const controller of this.#inFlight.values()) {
      controller.abort(new LocalTransportClosedError());
    }
    this.#live.clear();
    this.#ready.length = 0;
    this.#resolveIdle();
    await Promise.allSettled(this.#attempts);
  }

  #accept(message: OutboxMessage): PublishOutcome {
    try {
      if (this.#closed) throw new LocalTransportClosedError();
      const retries = message.job.retries;
      if (!Number.isInteger(retries) || retries < 0) {
        throw new RangeError(`job.retries must be a non-negative integer, got ${retries}`);
      }
      const body = JSON.stringify(message.job);
      const earlier = this.#dedup.lookup(message.dedupId);
      if (earlier !== undefined) {
        this.#counts.deduplicated++;
        return {
          id: message.id,
          ok: true,
          messageId: this.#messageId(earlier),
          deduplicated: true,
        };
      }
      const messageId = this.#messageId(this.#dedup.remember(message.dedupId));
      const entry = this.#entry("message", messageId, this.#options.workerUrl, body, retries);
      entry.notBefore = message.notBefore;
      this.#counts.published++;
      this.#enqueue(entry);
      return { id: message.id, ok: true, messageId: entry.messageId, deduplicated: false };
    } catch (error) {
      const cause = error instanceof Error ? error : new Error(String(error));
      return { id: message.id, ok: false, error: cause };
    }
  }

  #entry(
    kind: Entry["kind"],
    messageId: string,
    url: string,
    body: string,
    maxRetries: number,
  ): Entry {
    const now = this.#options.now();
    return {
      kind,
      messageId,
      url,
      body,
      notBefore: now,
      createdAt: now,
      maxRetries,
      retried: 0,
    };
  }

  /** The id of the message remembered with dedup-window ticket `ticket`: `msg_` + 32 hex digits. */
  #messageId(ticket: number): string {
    return `msg_${this.#idPrefix}${ticket.toString(16).padStart(12, "0")}`;
  }

  #enqueue(entry: Entry): void {
    this.#live.add(entry);
    this.#wakeAt(entry, entry.notBefore);
  }

  /** Start `entry` once the transport's clock reaches `at` (re-checked: timers may fire early). */
  #wakeAt(entry: Entry, at: number): void {
    this.#sleep(entry, at - this.#options.now(), () => {
      if (this.#options.now() < at) this.#wakeAt(entry, at);
      else this.#start(entry);
    });
  }

  #sleep(entry: Entry, ms: number, then: () => void): void {
    const wait = Number.isFinite(ms) ? Math.max(0, ms) : 0;
    const step = Math.min(wait, MAX_TIMER_MS);
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      if (wait > step) this.#sleep(entry, wait - step, then);
      else then();
    }, step);
  }

  #start(entry: Entry): void {
    if (this.#closed) return;
    if (this.#inFlight.size >= this.#options.parallelism) {
      this.#ready.push(entry);
      return;
    }
    const controller = new AbortController();
    this.#inFlight.set(entry, controller);
    const attempt: Promise<void> = this.#attempt(entry, controller)
      .then((result) => {
        this.#inFlight.delete(entry);
        if (!this.#closed) this.#settle(entry, result);
      })
      .catch((error: unknown) => {
        // Only a throwing `backoff` gets here: give the entry up rather than leave it stuck.
        this.#inFlight.delete(entry);
        if (entry.kind === "message") this.#counts.failed++;
        else this.#counts.callbacksFailed++;
        const { kind, messageId, url, retried } = entry;
        this.#report(
          new LocalDeliveryError({ kind, messageId, url, retried, status: 0, cause: error }),
        );
        this.#finish(entry);
      })
      .finally(() => {
        this.#attempts.delete(attempt);
        this.#drainReady();
      });
    this.#attempts.add(attempt);
  }

  #drainReady(): void {
    while (this.#ready.length > 0 && this.#inFlight.size < this.#options.parallelism) {
      this.#start(this.#ready.shift()!);
    }
  }

  /** One delivery attempt. Never rejects: a thrown error is a failed attempt with no response. */
  async #attempt(entry: Entry, controller: AbortController): Promise<AttemptResult> {
    const { requestTimeoutMs } = this.#options;
    const timeout = setTimeout(
      () => controller.abort(new Error(`no response within ${requestTimeoutMs} ms`)),
      requestTimeoutMs,
    );
    try {
      const headers = publishedHeaders();
      headers.set("Upstash-Message-Id", entry.messageId);
      headers.set("Upstash-Retried", String(entry.retried));
      headers.set(
        "Upstash-Signature",
        await signDelivery({
          signingKey: this.#options.signingKey,
          url: entry.url,
          body: entry.body,
        }),
      );
      const request = new Request(entry.url, {
        method: "POST",
        headers,
        body: entry.body,
        signal: controller.signal,
      });
      const response = await this.#options.deliver(request);
      if (response.ok) {
        void response.body?.cancel().catch(() => {});
        return { delivered: true };
      }
      const body = new Uint8Array(await response.arrayBuffer());
      return {
        delivered: false,
        last: { status: response.status, headers: response.headers, body },
        nonRetryable:
          response.status === 489 &&
          response.headers.get("upstash-nonretryable-error")?.trim().toLowerCase() === "true",
        retryAfter: retryAfterMs(response.headers.get("retry-after"), Date.now()),
      };
    } catch (error) {
      return {
        delivered: false,
        last: {
          status: 0,
          headers: new Headers(),
          body: new TextEncoder().encode(describe(error)),
        },
        nonRetryable: false,
        retryAfter: undefined,
        cause: error,
      };
    } finally {
      clearTimeout(timeout);
    }
  }

  #settle(entry: Entry, result: AttemptResult): void {
    if (result.delivered) {
      if (entry.kind === "message") this.#counts.delivered++;
      else this.#counts.callbacksDelivered++;
      this.#finish(entry);
      return;
    }
    if (!result.nonRetryable && entry.retried < entry.maxRetries) {
      const wait = result.retryAfter ?? this.#options.backoff(entry.retried);
      entry.retried++;
      if (entry.kind === "message") this.#counts.retried++;
      this.#sleep(entry, wait, () => this.#start(entry));
      return;
    }
    const error = new LocalDeliveryError({
      kind: entry.kind,
      messageId: entry.messageId,
      url: entry.url,
      status: result.last.status,
      retried: entry.retried,
      cause: result.cause,
    });
    if (entry.kind === "message") {
      this.#counts.failed++;
      // Queued before this entry leaves #live, so idle() waits for the callback too.
      if (this.#options.failureCallbackUrl !== undefined) {
        this.#enqueueFailureCallback(entry, result.last, this.#options.failureCallbackUrl);
      }
    } else {
      this.#counts.callbacksFailed++;
    }
    this.#report(error);
    this.#finish(entry);
  }

  #report(error: LocalDeliveryError): void {
    try {
      this.#options.onError(error);
    } catch {
      // A throwing logger must not stall the queue.
    }
  }

  #enqueueFailureCallback(message: Entry, last: LastAttempt, url: string): void {
    const dlqId = `${Date.now()}-${this.#dlqSeq++}`;
    const headers = publishedHeaders();
    const body = JSON.stringify(failureCallbackBody({ ...message, headers }, last, dlqId));
    const retries = this.#options.failureCallbackRetries;
    // Callbacks are not deduplicated, so they have no ticket: a random id.
    const messageId = `msg_${crypto.randomUUID().replaceAll("-", "")}`;
    this.#enqueue(this.#entry("failure-callback", messageId, url, body, retries));
  }

  #finish(entry: Entry): void {
    this.#live.delete(entry);
    if (this.#live.size === 0) this.#resolveIdle();
  }

  #resolveIdle(): void {
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

/**
 * The headers every delivery is published with (the `Upstash-*` ones are added per attempt): made
 * when needed rather than kept with each pending entry.
 */
function publishedHeaders(): Headers {
  return new Headers({ "Content-Type": "application/json" });
}

/** Bytes as lowercase hex. */
function hex(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += byte.toString(16).padStart(2, "0");
  return text;
}

/** A readable reason for an attempt that got no response, e.g. `fetch failed (ECONNREFUSED)`. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  const detail = cause?.code ?? cause?.message;
  return typeof detail === "string" ? `${error.message} (${detail})` : error.message;
}
