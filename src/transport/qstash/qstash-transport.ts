/**
 * @module
 * The production transport: outbox messages go to QStash in `/v2/batch` requests through the
 * official `@upstash/qstash` `Client` (its HTTP client, with the batch body written as
 * `Client.batch` writes it, see `batch-wire.ts`); deliveries are checked with its `Receiver`.
 */
import { Client, QstashError, Receiver } from "@upstash/qstash";
import type { OutboxMessage } from "../../core/model.ts";
import type { Delivery, DeliveryToken, PublishOutcome, Transport } from "../port.ts";
import { deliveryToken } from "../signing.ts";
import { BatchWire, type WireEntry } from "./batch-wire.ts";
import { QStashPublishError } from "./errors.ts";
import {
  DEFER_MARGIN_MS,
  type PublishRetry,
  type QStashHttp,
  type QStashHttpResponse,
  type QStashTransportOptions,
  type ResolvedQStashOptions,
  resolveQStashOptions,
} from "./options.ts";
import { toPublishRequest } from "./publish-request.ts";

/** What the transport needs of the SDK's `Client`. */
type BatchClient = Pick<Client, "batch" | "http">;
type BatchEntry = Parameters<Client["batch"]>[0][number];

interface Pending {
  index: number;
  message: OutboxMessage;
  request: BatchEntry;
}

/**
 * {@link Transport} on Upstash QStash.
 *
 * `publish` sends the messages in `/v2/batch` requests of at most `batchSize` (one HTTP request
 * each), every message to `workerUrl` with body `JSON.stringify(message.job)`,
 * `Upstash-Deduplication-Id: message.dedupId`, `Upstash-Not-Before` (the whole second it falls
 * in; the runner waits out the rest),
 * `Upstash-Retries: job.retries`, `Upstash-Timeout` from `job.timeoutMs`, the failure callback
 * and, per handler, flow control. It never throws: a request that fails or times out gives every
 * message in it `ok: false`; an entry QStash refuses gives that message `ok: false`. The request
 * is byte for byte the one `Client.batch` would make; its body is written without the SDK's
 * per-message `Headers` objects, which cost 12–28 µs a message (`BatchWire`).
 *
 * `verify` is `Receiver.verify` under the current and next signing keys, for the delivery's URL.
 *
 * The SDK reads no environment here: credentials and the base URL are passed explicitly and its
 * dev mode (`QSTASH_DEV`) is switched off. It takes no custom `fetch` (it always calls the global
 * one); the `http` option sends the batch requests instead of it (on Node, `nodeQStashHttp` from
 * `tickwork/node`, as `tickwork start` does: docs/adr/0025-node-http-for-qstash-batches.md).
 *
 * @example
 * const transport = new QStashTransport({
 *   token: env.QSTASH_TOKEN,
 *   workerUrl: "https://app.example.com/v1/worker",
 *   failureCallbackUrl: "https://app.example.com/v1/dead",
 *   currentSigningKey: env.QSTASH_CURRENT_SIGNING_KEY,
 *   nextSigningKey: env.QSTASH_NEXT_SIGNING_KEY,
 *   flowControl: { "email.send": { parallelism: 5 } },
 * });
 * const engine = createEngine({ store, transport, handlers });
 */
export class QStashTransport implements Transport {
  readonly #options: ResolvedQStashOptions;
  readonly #client: BatchClient;
  readonly #receiver: Receiver;
  readonly #wire: BatchWire;

  /** @throws TypeError for an invalid URL, RangeError for an empty key or a bad option. */
  constructor(options: QStashTransportOptions) {
    this.#options = resolveQStashOptions(options);
    const { token, baseUrl, retry, currentSigningKey, nextSigningKey } = this.#options;
    this.#client = new Client({ token, baseUrl, retry, devMode: false });
    this.#wire = new BatchWire(this.#client.http);
    this.#receiver = new Receiver({ currentSigningKey, nextSigningKey, devMode: false });
  }

  /** The worker URL deliveries go to (normalised), i.e. the signature's `sub`. */
  get workerUrl(): string {
    return this.#options.workerUrl;
  }

  /** Publish `messages`, one `/v2/batch` request per `batchSize`; one outcome per message, in order. */
  async publish(messages: OutboxMessage[]): Promise<PublishOutcome[]> {
    const outcomes: PublishOutcome[] = new Array(messages.length);
    const pending: Pending[] = [];
    const now = this.#options.now();
    const { maxDelayMs } = this.#options;
    messages.forEach((message, index) => {
      // QStash refuses a delay past the plan's longest: kept in the outbox, offered again by the
      // tick once within it (`retryAt`), instead of refused and retried only after its time.
      if (message.notBefore - now > maxDelayMs) {
        outcomes[index] = {
          id: message.id,
          ok: false,
          error: new QStashPublishError(
            "beyond-max-delay",
            `job ${message.job.id} is due in ${Math.ceil((message.notBefore - now) / 1000)} s, beyond QStash's longest delay (maxDelayMs ${maxDelayMs}): kept in the outbox for a later tick`,
          ),
          deferred: true,
          retryAt: message.notBefore - maxDelayMs + DEFER_MARGIN_MS,
        };
        return;
      }
      try {
        pending.push({ index, message, request: toPublishRequest(message, this.#options, now) });
      } catch (error) {
        outcomes[index] = {
          id: message.id,
          ok: false,
          error: new QStashPublishError("invalid", describe(error), { cause: error }),
        };
      }
    });
    const size = this.#options.batchSize;
    for (let start = 0; start < pending.length; start += size) {
      await this.#publishChunk(pending.slice(start, start + size), outcomes);
    }
    return outcomes;
  }

  /**
   * True if the delivery's `Upstash-Signature` is valid for its body and URL, and claims no longer
   * a lifetime than QStash issues (see {@link deliveryToken}). Never throws.
   */
  async verify(delivery: Delivery): Promise<boolean> {
    const signature = delivery.headers.get("upstash-signature");
    if (!signature || !this.deliveryToken(delivery)) return false;
    try {
      return await this.#receiver.verify({
        signature,
        body: delivery.body,
        url: delivery.url,
        clockTolerance: this.#options.clockToleranceSec,
      });
    } catch {
      return false;
    }
  }

  /** The delivery's signature `jti` and expiry (see the Transport port). */
  deliveryToken(delivery: Delivery): DeliveryToken | undefined {
    const signature = delivery.headers.get("upstash-signature");
    if (!signature) return undefined;
    // Judged by the real clock, as `Receiver.verify` judges `exp`.
    return deliveryToken(signature, { clockToleranceSec: this.#options.clockToleranceSec });
  }

  async #publishChunk(chunk: Pending[], outcomes: PublishOutcome[]): Promise<void> {
    let responses: unknown[];
    try {
      responses = await this.#batch(chunk.map((p) => p.request));
    } catch (error) {
      const failure =
        error instanceof QStashPublishError
          ? error
          : new QStashPublishError("request", `QStash batch request failed: ${describe(error)}`, {
              cause: error,
              ...(error instanceof QstashError && error.status !== undefined
                ? { status: error.status }
                : {}),
            });
      for (const { index, message } of chunk) {
        outcomes[index] = { id: message.id, ok: false, error: failure };
      }
      return;
    }
    chunk.forEach(({ index, message }, i) => {
      outcomes[index] = toOutcome(message.id, responses[i]);
    });
  }

  /**
   * One `/v2/batch` request, given up on after the timeout: aborted through the `http` option's
   * signal, merely abandoned on the SDK's client (it cannot abort).
   */
  async #batch(requests: BatchEntry[]): Promise<unknown[]> {
    const { publishTimeoutMs } = this.#options;
    const abort = new AbortController();
    const request = this.#send(requests, abort.signal);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(
          new QStashPublishError(
            "timeout",
            `QStash batch request gave no answer within ${publishTimeoutMs} ms`,
          ),
        );
        abort.abort();
      }, publishTimeoutMs);
    });
    // If the timeout wins, a later failure of the request must not go unhandled.
    request.catch(() => {});
    try {
      return await Promise.race([request, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The request `Client.batch(requests)` makes, with the body written by {@link BatchWire} and
   * sent through the `http` option, or else the SDK's HTTP client exactly as `Client.batch` sends
   * it (same path, headers, retries, errors and answer); `Client.batch` itself for a request the
   * writer does not cover.
   */
  async #send(requests: BatchEntry[], signal: AbortSignal): Promise<unknown[]> {
    const entries = requests.map((r) => this.#wire.entry(r));
    if (!complete(entries)) return this.#client.batch(requests);
    const body = JSON.stringify(entries);
    const response: unknown = this.#options.http
      ? await this.#post(this.#options.http, body, signal)
      : await this.#client.http.request({
          path: ["v2", "batch"],
          body,
          headers: { "Content-Type": "application/json" },
          method: "POST",
        });
    return Array.isArray(response) ? response : [response];
  }

  /**
   * POST `body` to `/v2/batch` through `http`, as the SDK's client does through `fetch`: the same
   * headers, a rejection (no answer) retried under `retry` with its backoff, a non-2xx answer
   * thrown as the SDK's `QstashError` with its body and status, a 2xx answer parsed as JSON.
   */
  async #post(http: QStashHttp, body: string, signal: AbortSignal): Promise<unknown> {
    const { baseUrl, token } = this.#options;
    const { attempts, backoff } = retryPlan(this.#options.retry);
    const request = {
      url: `${baseUrl}/v2/batch`,
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body,
      signal,
    };
    for (let attempt = 0; ; attempt++) {
      let answer: QStashHttpResponse;
      try {
        answer = await http(request);
      } catch (error) {
        if (attempt >= attempts || signal.aborted) throw error;
        await new Promise((resolve) => setTimeout(resolve, backoff(attempt)));
        continue;
      }
      const { status, body: text } = answer;
      if (status < 200 || status >= 300) {
        throw new QstashError(text.length > 0 ? text : `Error: status=${status}`, status);
      }
      return JSON.parse(text) as unknown;
    }
  }
}

/** Attempts after the first, and the wait before each, as the SDK's client reads `retry`. */
function retryPlan(retry: PublishRetry): { attempts: number; backoff: (n: number) => number } {
  if (retry === false) return { attempts: 0, backoff: () => 0 };
  return {
    attempts: retry.retries ?? 5,
    backoff: retry.backoff ?? ((n) => Math.exp(n) * 50),
  };
}

/** Whether every entry was written (`BatchWire.entry` answered for each). */
function complete(entries: (WireEntry | undefined)[]): entries is WireEntry[] {
  return entries.every((e) => e !== undefined);
}

/** One batch entry's answer as an outcome: `{messageId, deduplicated?}`, or `{error}`. */
function toOutcome(id: string, entry: unknown): PublishOutcome {
  const fields =
    typeof entry === "object" && entry !== null ? (entry as Record<string, unknown>) : {};
  if (typeof fields.messageId === "string" && fields.messageId !== "") {
    return {
      id,
      ok: true,
      messageId: fields.messageId,
      deduplicated: fields.deduplicated === true,
    };
  }
  const reason =
    typeof fields.error === "string"
      ? fields.error
      : entry === undefined
        ? "no answer for this message in the batch response"
        : `unexpected batch entry ${JSON.stringify(entry)}`;
  return { id, ok: false, error: new QStashPublishError("rejected", reason) };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
