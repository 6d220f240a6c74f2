/**
 * @module
 * Publishing outbox messages through the transport in batches, collecting which were accepted.
 */
import type { OutboxMessage } from "../core/model.ts";
import type { OutboxAck } from "../store/port.ts";
import type { Transport } from "../transport/port.ts";
import type { Logger } from "./logger.ts";

/**
 * Publish `messages` in batches of `batch`; returns the acks (`id`, `dedupId`) of the messages the
 * queue accepted, for the store's compare-and-delete outbox ack. A batch that
 * throws as a whole is logged and counts as not accepted: those messages stay in the outbox and
 * the tick's recover step re-publishes them.
 */
export async function publishAll(
  transport: Transport,
  messages: OutboxMessage[],
  batch: number,
  logger: Logger,
): Promise<OutboxAck[]> {
  const accepted: OutboxAck[] = [];
  for (let i = 0; i < messages.length; i += batch) {
    const slice = messages.slice(i, i + batch);
    try {
      for (const outcome of await transport.publish(slice)) {
        if (outcome.ok) {
          const message = slice.find((m) => m.id === outcome.id);
          if (message) accepted.push({ id: message.id, dedupId: message.dedupId });
        } else logger.warn("publish failed", { id: outcome.id, error: outcome.error.message });
      }
    } catch (error) {
      logger.warn("publish batch failed", { count: slice.length, error: String(error) });
    }
  }
  return accepted;
}

/**
 * Coalesces the publishes of concurrent submits: messages handed over while the process is busy
 * (until `setImmediate`, or `setTimeout(0)` where there is none) go out together, in batches of
 * `batch` — one queue request for many submits instead of one each. Each caller learns whether its
 * own message was accepted; a message that was not stays in the outbox for the tick to recover,
 * exactly as with {@link publishAll}.
 *
 * @example
 * const coalescer = new PublishCoalescer(transport, 100, logger);
 * const accepted = await coalescer.publish(message); // true once the queue accepted it
 */
export class PublishCoalescer {
  #waiting: { message: OutboxMessage; resolve: (accepted: boolean) => void }[] = [];
  #scheduled = false;

  constructor(
    private readonly transport: Transport,
    private readonly batch: number,
    private readonly logger: Logger,
  ) {}

  publish(message: OutboxMessage): Promise<boolean> {
    return new Promise((resolve) => {
      this.#waiting.push({ message, resolve });
      if (this.#waiting.length >= this.batch) this.#flush();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        later(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const waiting = this.#waiting.splice(0);
    if (waiting.length === 0) return;
    const messages = waiting.map((w) => w.message);
    void publishAll(this.transport, messages, this.batch, this.logger).then((acks) => {
      const accepted = new Set(acks.map((a) => a.id));
      for (const w of waiting) w.resolve(accepted.has(w.message.id));
    });
  }
}

/** Run `fn` once the current burst of I/O callbacks is done. */
function later(fn: () => void): void {
  const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate;
  if (immediate) immediate(fn);
  else setTimeout(fn, 0);
}
