/**
 * @module
 * Publishing outbox messages through the transport in batches, collecting which were accepted.
 */
import type { OutboxMessage } from "../core/model.ts";
import type { OutboxAck, OutboxDefer, Store } from "../store/port.ts";
import type { Transport } from "../transport/port.ts";
import type { Logger } from "./logger.ts";
import { publishSpanDone, spanFailed, startPublishSpan } from "./tracing.ts";

/** What {@link publishAll} writes back for messages the queue did not take as they are. */
export type PublishStore = Pick<Store, "deferOutbox" | "markDead">;

/**
 * Publish `messages` in batches of `batch`; returns the acks (`id`, `dedupId`, `notBefore`) of the
 * messages the queue accepted, for the store's compare-and-delete outbox ack. A batch that
 * throws as a whole is logged and counts as not accepted: those messages stay in the outbox and
 * the tick's recover step re-publishes them. With `store`: a message the queue deferred to a
 * `retryAt` gets that `recoverAt` (`deferOutbox`, one call for all of them), and one it can never
 * take (`permanent`) has its job dead-lettered (`markDead`); neither happens with Redis Streams,
 * and with QStash only a deferral past its plan's longest delay (`maxDelayMs`). Never rejects for the store's errors either (logged).
 */
export async function publishAll(
  transport: Transport,
  messages: OutboxMessage[],
  batch: number,
  logger: Logger,
  store?: PublishStore,
): Promise<OutboxAck[]> {
  const accepted: OutboxAck[] = [];
  const defers: OutboxDefer[] = [];
  const permanent: { message: OutboxMessage; error: Error }[] = [];
  for (let i = 0; i < messages.length; i += batch) {
    const slice = messages.slice(i, i + batch);
    // One span per queue request (src/engine/tracing.ts), linked to each message's job's trace.
    const span = startPublishSpan(slice);
    const before = accepted.length;
    try {
      const outcomes = await transport.publish(slice);
      for (let k = 0; k < outcomes.length; k++) {
        const outcome = outcomes[k]!;
        // Transports answer in order; the search is for one that does not.
        const message =
          slice[k]?.id === outcome.id ? slice[k] : slice.find((m) => m.id === outcome.id);
        if (outcome.ok) {
          if (message) {
            accepted.push({
              id: message.id,
              dedupId: message.dedupId,
              notBefore: message.notBefore,
            });
          }
        } else if (outcome.deferred) {
          logger.debug("publish deferred", { id: outcome.id, reason: outcome.error.message });
          if (message && outcome.retryAt !== undefined && Number.isFinite(outcome.retryAt)) {
            defers.push({ id: message.id, dedupId: message.dedupId, recoverAt: outcome.retryAt });
          }
        } else if (outcome.permanent && message) {
          permanent.push({ message, error: outcome.error });
        } else logger.warn("publish failed", { id: outcome.id, error: outcome.error.message });
      }
    } catch (error) {
      spanFailed(span, error);
      logger.warn("publish batch failed", { count: slice.length, error: String(error) });
    } finally {
      publishSpanDone(span, accepted.length - before);
      span.end();
    }
  }
  if (store) await writeBack(store, defers, permanent, logger);
  return accepted;
}

/** Defer and dead-letter what the queue did not take (see {@link publishAll}); never rejects. */
async function writeBack(
  store: PublishStore,
  defers: OutboxDefer[],
  permanent: { message: OutboxMessage; error: Error }[],
  logger: Logger,
): Promise<void> {
  try {
    if (defers.length > 0) await store.deferOutbox?.(defers);
  } catch (error) {
    warnSafely(logger, "could not defer outbox messages", {
      count: defers.length,
      error: String(error),
    });
  }
  for (const { message, error } of permanent) {
    try {
      const job = await store.markDead(message.job, {
        name: "MessageTooLargeError",
        message: error.message,
      });
      warnSafely(logger, "job dead-lettered: the queue can never take its message", {
        jobId: message.id,
        status: job?.status ?? "gone",
        error: error.message,
      });
    } catch (cause) {
      warnSafely(logger, "publish failed", { id: message.id, error: String(cause) });
    }
  }
}

/** A message waiting for the next flush, and who waits for its outcome (nobody after `send`). */
interface Waiting {
  message: OutboxMessage;
  resolve: ((accepted: boolean) => void) | undefined;
}

/**
 * Coalesces the publishes of concurrent submits: messages handed over while the process is busy
 * (until `setImmediate`, or `setTimeout(0)` where there is none) go out together, in batches of
 * `batch` — one queue request for many submits instead of one each. With {@link publish} each
 * caller learns whether its own message was accepted; {@link send} hands a message over without
 * waiting. A message that was not accepted stays in the outbox for the tick to recover, exactly as
 * with {@link publishAll}; failures are logged, and nothing here ever rejects.
 *
 * @example
 * const coalescer = new PublishCoalescer(transport, 100, logger);
 * const accepted = await coalescer.publish(message); // true once the queue accepted it
 * coalescer.send(other);                             // goes out with the next batch
 * await coalescer.settled();                         // both published (or failed)
 */
export class PublishCoalescer {
  #waiting: Waiting[] = [];
  #scheduled = false;
  /** Flushes whose queue requests have not settled yet. */
  readonly #running = new Set<Promise<void>>();
  /** A flush that ended in a batch of fewer than `batch` messages is under way. */
  #partial = false;
  /** The linger timer of the next flush, while one is set. */
  #timer: ReturnType<typeof setTimeout> | undefined;

  /**
   * @param hold while a flush that ended in a partial batch is under way, hold further messages
   * until it settles or a full batch is waiting (then that goes out at once): under load, fewer
   * and fuller queue requests, at the cost of up to one request's time before a message is
   * published. For {@link send} (nobody waits); it would delay every {@link publish} caller.
   * @param lingerMs how long the first message handed over waits for others before a flush
   * (`0`: until the current burst of I/O callbacks is done). A full batch and
   * {@link settled} flush at once.
   */
  constructor(
    private readonly transport: Transport,
    private readonly batch: number,
    private readonly logger: Logger,
    private readonly hold = false,
    private readonly store?: PublishStore,
    private readonly lingerMs = 0,
  ) {}

  publish(message: OutboxMessage): Promise<boolean> {
    return new Promise((resolve) => this.#add({ message, resolve }));
  }

  /** Hand `message` over for the next batch, without waiting for the outcome. */
  send(message: OutboxMessage): void {
    this.#add({ message, resolve: undefined });
  }

  /** Resolves once every message handed over so far is published or has failed (never rejects). */
  async settled(): Promise<void> {
    while (this.#waiting.length > 0 || this.#running.size > 0) {
      if (this.#waiting.length > 0) this.#flush();
      await Promise.all(this.#running);
    }
  }

  #add(waiting: Waiting): void {
    this.#waiting.push(waiting);
    if (this.#waiting.length >= this.batch) this.#flush();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      if (this.lingerMs > 0) this.#timer = setTimeout(() => this.#flush(), this.lingerMs);
      else later(() => this.#flush());
    }
  }

  #flush(): void {
    this.#scheduled = false;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#waiting.length === 0) return;
    // Held: the partial flush under way flushes these when it settles.
    if (this.#partial && this.#waiting.length < this.batch) return;
    const waiting = this.#waiting.splice(0);
    const partial = this.hold && waiting.length % this.batch !== 0;
    if (partial) this.#partial = true;
    const messages = waiting.map((w) => w.message);
    const run = publishAll(this.transport, messages, this.batch, this.logger, this.store)
      .then(
        (acks) => {
          const accepted = new Set(acks.map((a) => a.id));
          for (const w of waiting) w.resolve?.(accepted.has(w.message.id));
        },
        (error: unknown) => {
          // publishAll catches the transport's errors; only a throwing logger gets here.
          for (const w of waiting) w.resolve?.(false);
          warnSafely(this.logger, "publish batch failed", {
            count: messages.length,
            error: String(error),
          });
        },
      )
      .finally(() => {
        this.#running.delete(run);
        if (partial) {
          this.#partial = false;
          if (this.#waiting.length > 0) this.#flush();
        }
      });
    this.#running.add(run);
  }
}

/** `logger.warn`, never throwing (a logger that throws must not reject a background publish). */
function warnSafely(logger: Logger, msg: string, fields: Record<string, unknown>): void {
  try {
    logger.warn(msg, fields);
  } catch {
    // Nowhere left to report it.
  }
}

/** Run `fn` once the current burst of I/O callbacks is done. */
function later(fn: () => void): void {
  const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;
  if (immediate) immediate(fn);
  else setTimeout(fn, 0);
}
