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
