/**
 * @module
 * `tickwork/cloudflare`: what a Workers entry needs — `createWorker` (the whole Worker from its
 * bindings: `fetch`, `scheduled`, `queue`), `createTickwork` (store on Upstash Redis REST, the
 * QStash or Cloudflare Queues transport, engine and app from an explicit config), the Queues
 * transport and consumer themselves, and the typed, checked bindings. No Node modules.
 */
export type { ExecutionContext } from "hono";
export { TickworkConfigError } from "../../core/errors.ts";
export {
  busyFloorWithin,
  CloudflareQueuesTransport,
  type CloudflareQueuesTransportOptions,
  type ConsumeOptions,
  type ConsumeResult,
  consumeQueueBatch,
  defaultBusyFloor,
  defaultQueueBackoff,
  type QueueBatch,
  type QueueMessage,
  type QueueProducer,
  QueuesPublishError,
} from "../../transport/cloudflare-queues/index.ts";
export { Background } from "./background.ts";
export {
  assertEnv,
  isQueueProducer,
  MissingEnvError,
  REQUIRED_ENV,
  REQUIRED_ENV_QUEUES,
  selectWorkerTransport,
  type TickworkEnv,
  type WorkerTransport,
} from "./env.ts";
export {
  createTickwork,
  type QStashConfig,
  type Tickwork,
  type TickworkConfig,
} from "./tickwork.ts";
export { createWorker, type TickworkWorker, type WorkerOptions } from "./worker.ts";
