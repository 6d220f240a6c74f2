/**
 * @module
 * The Cloudflare Queues transport: the producer side (`CloudflareQueuesTransport`, `sendBatch`
 * within the platform's limits) and the consumer side (`consumeQueueBatch`, for the Worker's
 * `queue()` handler). Web APIs only: it runs in workerd. Re-exported by `tickwork/cloudflare`.
 */
export {
  answerFor,
  BUSY_FLOOR_CAP_MS,
  busyFloorWithin,
  type ConsumeOptions,
  type ConsumeResult,
  type ConsumerLogger,
  consumeQueueBatch,
  defaultBusyFloor,
  defaultQueueBackoff,
  type QueueAnswer,
  type QueueBatch,
  type QueueMessage,
} from "./consumer.ts";
export {
  CloudflareQueuesTransport,
  type CloudflareQueuesTransportOptions,
  chunks,
  DEFER_MARGIN_MS,
  delaySecondsUntil,
  MAX_BATCH_BYTES,
  MAX_BATCH_MESSAGES,
  MAX_DELAY_SECONDS,
  MAX_MESSAGE_BYTES,
  MESSAGE_OVERHEAD_BYTES,
  QUEUES_MAX_INPUT_BYTES,
  QUEUES_MAX_INPUT_BYTES_LIMIT,
  QUEUES_MAX_JOB_BYTES,
  QUEUES_RECOVER_GRACE_MS,
  type QueueProducer,
  type QueueSendRequest,
  QueuesPublishError,
  type QueuesPublishFailure,
} from "./queues-transport.ts";
