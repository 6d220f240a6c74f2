/**
 * @module
 * `CloudflareQueuesTransport`: outbox messages go onto a Cloudflare Queue through the Worker's
 * producer binding (`sendBatch`), and the same Worker's `queue()` handler runs them
 * (`src/transport/cloudflare-queues/consumer.ts`; docs/adr/0018-cloudflare-queues.md). No HTTP hop, no signature:
 * a queue message never reaches the Worker as a request, so there is nothing to verify and the
 * worker route answers 401 to everything while this is the transport (as with Redis Streams).
 *
 * The platform's limits, enforced here so a publish never throws for one message:
 * - a `sendBatch` holds at most {@link MAX_BATCH_MESSAGES} messages and {@link MAX_BATCH_BYTES};
 * - one message is at most {@link MAX_MESSAGE_BYTES} (body plus about
 *   {@link MESSAGE_OVERHEAD_BYTES} of metadata): a larger one is reported `ok: false, permanent:
 *   true` and never sent; the publisher dead-letters its job (`MessageTooLargeError`);
 * - `delaySeconds` is at most {@link MAX_DELAY_SECONDS} (12 h): a message due later is not sent
 *   but reported `ok: false, deferred: true` with `retryAt` = {@link MAX_DELAY_SECONDS} before its
 *   `notBefore`, plus {@link DEFER_MARGIN_MS}; the publisher moves its outbox `recoverAt`
 *   there (`Store.deferOutbox`), and the tick's recover step publishes it then, with a delay the
 *   queue takes.
 */
import type { OutboxMessage } from "../../core/model.ts";
import type { PublishOutcome, Transport } from "../port.ts";

/** Most messages in one `sendBatch`. */
export const MAX_BATCH_MESSAGES = 100;
/** Most bytes in one `sendBatch` (256 KB, 1 KB = 1000 B). */
export const MAX_BATCH_BYTES = 256_000;
/** Most bytes of one message, its metadata included (128 KB). */
export const MAX_MESSAGE_BYTES = 128_000;
/** What one message is counted for beyond its body (the platform's metadata, about 100 B). */
export const MESSAGE_OVERHEAD_BYTES = 100;
/**
 * The engine's `maxJobBytes` on Queues: a job whose spec (with the fields the store adds) would
 * make a message over {@link MAX_MESSAGE_BYTES} is refused at submit with 413, not dead-lettered
 * at publish after its 202 (an input within `maxInputBytes` beside large tags, placement or
 * `after`).
 */
export const QUEUES_MAX_JOB_BYTES = MAX_MESSAGE_BYTES - MESSAGE_OVERHEAD_BYTES;
/** Longest `delaySeconds` on send and on retry (12 h). */
export const MAX_DELAY_SECONDS = 43_200;
/**
 * How much later than "12 h before `notBefore`" a deferred message is tried again: room for the
 * store's clock and the Worker's to differ, so the retry's delay is within the queue's limit.
 */
export const DEFER_MARGIN_MS = 60_000;
/**
 * The tick's `recoverGraceMs` on Queues unless configured (5 min): how long a published-but-not-
 * acknowledged outbox message waits before the tick publishes it again. Queues has no
 * deduplication, so a re-publish while the consumer lags (batches wait up to
 * `max_batch_timeout`, 60 s at most, plus the backlog) is a second message: 30 s, QStash's
 * setting, would duplicate every job under load.
 */
export const QUEUES_RECOVER_GRACE_MS = 300_000;
/**
 * The largest `maxInputBytes` a deployment on Queues may set (`createTickwork` refuses more): an
 * input this large leaves under 1 KB of the message for the rest of the job spec; a job whose
 * message is over {@link MAX_MESSAGE_BYTES} all the same is dead-lettered at publish.
 */
export const QUEUES_MAX_INPUT_BYTES_LIMIT = 127_000;
/**
 * The largest job input (JSON, UTF-8 bytes) a deployment on Queues accepts by default (the
 * engine's `maxInputBytes`): a submit over it is refused with 413 and stores nothing, so a message
 * over {@link MAX_MESSAGE_BYTES} never reaches the outbox (the rest of the job spec gets 27.9 KB).
 */
export const QUEUES_MAX_INPUT_BYTES = 100_000;

/** One message of a `sendBatch`, as the Workers runtime takes it. */
export interface QueueSendRequest {
  body: unknown;
  contentType?: "text" | "bytes" | "json" | "v8";
  delaySeconds?: number;
}

/**
 * The producer side of a Queue binding (`env.TICKWORK_QUEUE`), typed structurally so that nothing
 * of `@cloudflare/workers-types` is needed at run time.
 */
export interface QueueProducer {
  send(body: unknown, options?: { contentType?: string; delaySeconds?: number }): Promise<unknown>;
  sendBatch(
    messages: Iterable<QueueSendRequest>,
    options?: { delaySeconds?: number },
  ): Promise<unknown>;
}

/** Options of {@link CloudflareQueuesTransport}. */
export interface CloudflareQueuesTransportOptions {
  /** The Queue binding the Worker produces to (`[[queues.producers]]` in `wrangler.toml`). */
  queue: QueueProducer;
  /** The queue's name, for log lines and `messageId`s. @default "tickwork" */
  name?: string | undefined;
  /** The clock `delaySeconds` is counted from (ms). @default Date.now */
  now?: (() => number) | undefined;
}

/** Why a message was not sent. */
export type QueuesPublishFailure =
  /** Over {@link MAX_MESSAGE_BYTES}: never sendable (its job is dead-lettered). */
  | "too-large"
  /** Due more than {@link MAX_DELAY_SECONDS} ahead: kept in the outbox for a later tick. */
  | "beyond-max-delay"
  /** The `sendBatch` call failed (throughput limit, a platform error): every message in it. */
  | "request";

/** A message the queue did not take (see the module comment for what becomes of it). */
export class QueuesPublishError extends Error {
  override readonly name = "QueuesPublishError";
  readonly reason: QueuesPublishFailure;

  constructor(reason: QueuesPublishFailure, message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.reason = reason;
  }
}

interface Ready {
  index: number;
  message: OutboxMessage;
  request: QueueSendRequest;
  bytes: number;
}

const encoder = new TextEncoder();

/**
 * {@link Transport} on Cloudflare Queues.
 *
 * @example
 * // In the Worker (wrangler.toml: [[queues.producers]] binding = "TICKWORK_QUEUE")
 * const transport = new CloudflareQueuesTransport({ queue: env.TICKWORK_QUEUE });
 * const engine = createEngine({ store, transport, handlers });
 * // queue(batch, env, ctx):
 * //   await consumeQueueBatch(batch, (body) => engine.runner.runPulled(body), { logger });
 */
export class CloudflareQueuesTransport implements Transport {
  readonly #queue: QueueProducer;
  readonly #name: string;
  readonly #now: () => number;
  #seq = 0;

  constructor(options: CloudflareQueuesTransportOptions) {
    const queue = options.queue as Partial<QueueProducer> | undefined;
    if (!queue || typeof queue.sendBatch !== "function") {
      throw new TypeError("queue must be a Cloudflare Queue producer binding (with sendBatch)");
    }
    this.#queue = options.queue;
    this.#name = options.name ?? "tickwork";
    this.#now = options.now ?? Date.now;
  }

  /**
   * Send `messages` in `sendBatch` calls of at most 100 messages and 256 KB, each with body
   * `JSON.stringify(message.job)` (content type `text`) and `delaySeconds` = the whole seconds
   * until `notBefore`, rounded up. One outcome per message, in order; never throws.
   */
  async publish(messages: OutboxMessage[]): Promise<PublishOutcome[]> {
    const outcomes: PublishOutcome[] = new Array(messages.length);
    const ready: Ready[] = [];
    const now = this.#now();
    messages.forEach((message, index) => {
      const body = JSON.stringify(message.job);
      const bytes = encoder.encode(body).byteLength + MESSAGE_OVERHEAD_BYTES;
      const delaySeconds = delaySecondsUntil(message.notBefore, now);
      if (bytes > MAX_MESSAGE_BYTES) {
        outcomes[index] = {
          ...failed(
            message,
            new QueuesPublishError(
              "too-large",
              `job ${message.job.id} is ${bytes} bytes as a queue message; Cloudflare Queues takes at most ${MAX_MESSAGE_BYTES}`,
            ),
          ),
          permanent: true,
        };
      } else if (delaySeconds > MAX_DELAY_SECONDS) {
        outcomes[index] = {
          ...failed(
            message,
            new QueuesPublishError(
              "beyond-max-delay",
              `job ${message.job.id} is due in ${delaySeconds} s, beyond the queue's ${MAX_DELAY_SECONDS} s: kept in the outbox for a later tick`,
            ),
          ),
          deferred: true,
          retryAt: message.notBefore - MAX_DELAY_SECONDS * 1000 + DEFER_MARGIN_MS,
        };
      } else {
        const request: QueueSendRequest = { body, contentType: "text" };
        if (delaySeconds > 0) request.delaySeconds = delaySeconds;
        ready.push({ index, message, request, bytes });
      }
    });
    for (const chunk of chunks(ready)) await this.#send(chunk, outcomes);
    return outcomes;
  }

  /** Queue messages never arrive as requests: a request to the worker route is not one of ours. */
  async verify(): Promise<boolean> {
    return false;
  }

  async #send(chunk: Ready[], outcomes: PublishOutcome[]): Promise<void> {
    try {
      await this.#queue.sendBatch(chunk.map((r) => r.request));
    } catch (error) {
      const failure = new QueuesPublishError(
        "request",
        `sendBatch to queue ${this.#name} failed: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
      for (const r of chunk) outcomes[r.index] = failed(r.message, failure);
      return;
    }
    for (const r of chunk) {
      // Queues gives no id per message: name it by queue, job and a per-isolate sequence.
      outcomes[r.index] = {
        id: r.message.id,
        ok: true,
        messageId: `${this.#name}:${r.message.dedupId}:${++this.#seq}`,
        deduplicated: false,
      };
    }
  }
}

/**
 * Whole seconds from `now` until `notBefore`, rounded up (a message is never early); 0 when due.
 *
 * @example
 * delaySecondsUntil(1_500, 0); // 2
 */
export function delaySecondsUntil(notBefore: number, now: number): number {
  const ms = notBefore - now;
  return Number.isFinite(ms) && ms > 0 ? Math.ceil(ms / 1000) : 0;
}

/** `ready` in `sendBatch` groups of at most {@link MAX_BATCH_MESSAGES} and {@link MAX_BATCH_BYTES}. */
export function chunks<T extends { bytes: number }>(ready: readonly T[]): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const r of ready) {
    const full = current.length === MAX_BATCH_MESSAGES || bytes + r.bytes > MAX_BATCH_BYTES;
    if (full && current.length > 0) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(r);
    bytes += r.bytes;
  }
  if (current.length > 0) out.push(current);
  return out;
}

function failed(message: OutboxMessage, error: Error): PublishOutcome & { ok: false } {
  return { id: message.id, ok: false, error };
}
