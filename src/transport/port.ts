/**
 * @module
 * The Transport port: how due work reaches a worker. QStash in production; the local transport
 * (in-process, same semantics) for dev and tests. The engine cannot tell them apart.
 */
import type { OutboxMessage } from "../core/model.ts";

/** Outcome of publishing one message. */
export type PublishOutcome =
  | { id: string; ok: true; messageId: string; deduplicated: boolean }
  | { id: string; ok: false; error: Error };

/** A delivery as received on the worker route. */
export interface Delivery {
  /** The URL the delivery was sent to (checked against the signature's `sub`). */
  url: string;
  headers: Headers;
  /** Raw body, exactly as received (the signature covers it). */
  body: string;
}

export interface Transport {
  /**
   * Publish messages, each with deduplication id `message.id`, not before `message.notBefore`,
   * retried `message.job.retries` times on failure, then reported to the failure callback.
   * Never throws for a single message's failure: each gets an outcome.
   */
  publish(messages: OutboxMessage[]): Promise<PublishOutcome[]>;
  /** True if the delivery carries a valid signature from this transport. */
  verify(delivery: Delivery): Promise<boolean>;
}
