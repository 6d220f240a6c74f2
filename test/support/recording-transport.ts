/**
 * A queue that takes every message at once and remembers it, in publish order (`published`), and
 * each publish call's messages (`calls`): for engine tests that look at what the ticker or the
 * broker dispatched, not at deliveries.
 */
import type { OutboxMessage } from "../../src/core/model.ts";
import type { Transport } from "../../src/transport/port.ts";

export function recordingTransport(): Transport & {
  published: OutboxMessage[];
  calls: OutboxMessage[][];
} {
  const published: OutboxMessage[] = [];
  const calls: OutboxMessage[][] = [];
  return {
    published,
    calls,
    async publish(messages) {
      published.push(...messages);
      calls.push([...messages]);
      return messages.map((m) => ({
        id: m.id,
        ok: true as const,
        messageId: m.id,
        deduplicated: false,
      }));
    },
    async verify() {
      return false;
    },
  };
}
