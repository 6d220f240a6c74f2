/**
 * @module
 * The Transport port: how due work reaches a worker. QStash in production; the local transport
 * (in-process, same semantics) for dev and tests. The engine cannot tell them apart.
 */
import type { DeliveryToken, OutboxMessage } from "../core/model.ts";

export type { DeliveryToken };

/**
 * Outcome of publishing one message. `ok: false` leaves the message in the outbox, and the tick's
 * recover step publishes it again once its `recoverAt` has passed. `deferred: true` says that was
 * deliberate, not a failure: the queue cannot hold the message yet (its `notBefore` is beyond the
 * queue's longest delay, e.g. Cloudflare Queues' 12 h), so it is logged at debug, not as a warning;
 * with `retryAt` the publisher moves the message's `recoverAt` there (`Store.deferOutbox`), so the
 * tick stays idle until the queue can take it. `permanent: true`: the message can never travel on
 * this queue (it is over the queue's size limit); the publisher dead-letters its job
 * (`Store.markDead`, error `MessageTooLargeError`).
 */
export type PublishOutcome =
  | { id: string; ok: true; messageId: string; deduplicated: boolean }
  | {
      id: string;
      ok: false;
      error: Error;
      deferred?: true;
      /** With `deferred`: when the queue can take the message (epoch ms). */
      retryAt?: number;
      permanent?: true;
    };

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
  /**
   * What the queue holds now, for `/metrics`, `/v1/stats` and the dashboard. Only a queue this
   * deployment runs itself has it (Redis Streams); a hosted push queue (QStash) and the local
   * transport do not, and then those show no queue figures.
   */
  queueStats?(): Promise<QueueStats>;
}

/** A transport's queue as it stands now ({@link Transport.queueStats}). */
export interface QueueStats {
  /** Which queue answered, e.g. `"redis-streams"`. */
  kind: string;
  /**
   * Entries on the queue: not read by a worker yet, or read and not acknowledged (Redis Streams
   * also counts its wake-up entries, which the next read drops).
   */
  length: number;
  /** Read by a worker and not acknowledged yet. */
  pending: number;
  /** Age of the oldest pending delivery, since it was put on the queue (ms; 0 when none). */
  oldestPendingMs: number;
  /** Deliveries waiting for their not-before time (delays, retries after backoff). */
  delayed: number;
  /**
   * Consumers (workers) the queue knows, including stopped ones until a takeover or another
   * worker's stop deletes them (docs/streams.md).
   */
  consumers: number;
  /** Deliveries taken over from stopped consumers, by every worker of the deployment (a counter). */
  claimed: number;
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

/** A delivery a worker took from a pull queue (e.g. Redis Streams). */
export interface PulledMessage {
  /** The queue's id of this delivery (a stream entry id). */
  id: string;
  /** The JobSpec JSON, as a push queue's request body carries it. */
  body: string;
  /** How many times this job's delivery was retried after a failed attempt. */
  retried: number;
  /** Taken over from a consumer that stopped (not read fresh). */
  claimed: boolean;
}

/**
 * A queue the workers pull from (the push queues — QStash, the local queue — call the worker
 * route instead). The worker (`PullWorker`) runs each message through the runner and answers with
 * {@link PullQueue.ack} or {@link PullQueue.retryLater}; a message it never answers for (the
 * process died) is taken over by another worker's {@link PullQueue.pull} once it has been idle
 * for a while, and its run lease decides whether it runs again.
 */
export interface PullQueue {
  /** Prepare to read (e.g. create the consumer group); idempotent. */
  open(): Promise<void>;
  /**
   * Up to `max` messages (at least one), waiting up to `waitMs` when none is ready: due delayed
   * ones first moved to ready, stopped consumers' stale ones taken over, then new ones.
   * Resolves `[]` when the wait ran out or {@link PullQueue.interrupt} was called.
   */
  pull(max: number, waitMs: number): Promise<PulledMessage[]>;
  /** Done with these messages: they leave the queue. */
  ack(ids: string[]): Promise<void>;
  /** Deliver `message`'s job again after `delayMs`, as having been retried `retried` times. */
  retryLater(message: PulledMessage, delayMs: number, retried: number): Promise<void>;
  /** The wait before retry number `retried + 1` (ms). */
  backoff(retried: number): number;
  /** End a {@link PullQueue.pull} that is waiting (it resolves `[]`). */
  interrupt(): void;
  /**
   * Optional: deliveries this process still works on, pulled {@link PullQueue.keepAfterMs} or
   * longer ago and not answered yet, so that none is taken over as a stopped consumer's while its
   * handler runs. The worker calls it every `keepAfterMs` while it has such deliveries.
   */
  keep?(ids: string[]): Promise<void>;
  /** With {@link PullQueue.keep}: how long after its pull a delivery needs keeping (ms). */
  readonly keepAfterMs?: number;
}
