/**
 * @module
 * The Transport port: how due work reaches a worker. QStash in production; the local transport
 * (in-process, same semantics) for dev and tests. The engine cannot tell them apart.
 */
import type { DeliveryToken, OutboxMessage } from "../core/model.ts";

export type { DeliveryToken };

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
   * Publish messages, each with deduplication id `message.dedupId`, not before `message.notBefore`,
   * retried `message.job.retries` times on failure, then reported to the failure callback.
   * Never throws for a single message's failure: each gets an outcome.
   */
  publish(messages: OutboxMessage[]): Promise<PublishOutcome[]>;
  /** True if the delivery carries a valid signature from this transport. */
  verify(delivery: Delivery): Promise<boolean>;
  /**
   * What identifies this one delivery (a verified one), so the worker can refuse a replay of it:
   * its token's id and expiry. A transport without it gets no replay protection beyond the job's
   * own state; both built-in transports have it (the signature's `jti` and `exp`).
   */
  deliveryToken?(delivery: Delivery): DeliveryToken | undefined;
}

/**
 * JSON body of the failure callback (`POST` to the failure-callback URL once a message has given
 * up), as QStash documents it (upstash/docs `qstash/features/callbacks.mdx`, "What is a
 * Failure-Callback?"). The local transport sends the same shape. Base64 fields are standard base64.
 */
export interface FailureCallbackBody {
  /** Status of the last attempt's response; `0` when it got no response (local transport only). */
  status: number;
  /** Headers of the last attempt's response. */
  header: Record<string, string[]>;
  /** Base64 of the last attempt's response body. */
  body: string;
  /** Retries made before giving up (`0` when the first attempt answered 489). */
  retried: number;
  maxRetries: number;
  /** Dead-letter id at the queue. */
  dlqId?: string;
  /** Id of the message that failed. */
  sourceMessageId: string;
  /** The destination URL of the message that failed. */
  url: string;
  method: string;
  /** Headers the message was published with. */
  sourceHeader: Record<string, string[]>;
  /** Base64 of the body of the message that failed (here `JSON.stringify(job)`). */
  sourceBody: string;
  /** Epoch ms as a decimal string, as documented. */
  notBefore?: string;
  /** Epoch ms as a decimal string, as documented. */
  createdAt?: string;
  scheduleId?: string;
  topicName?: string;
  endpointName?: string;
  callerIP?: string;
}
