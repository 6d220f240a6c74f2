/**
 * @module
 * `tickwork/qstash`: the production transport on Upstash QStash (batch publish, `Receiver` check).
 */
export type { FailureCallbackBody } from "../port.ts";
export { QStashPublishError, type QStashPublishFailure } from "./errors.ts";
export {
  DEFAULT_QSTASH_URL,
  type FlowControlOption,
  type PublishRetry,
  type QStashDuration,
  type QStashHttp,
  type QStashHttpRequest,
  type QStashHttpResponse,
  type QStashTransportOptions,
} from "./options.ts";
export { notBeforeSeconds } from "./publish-request.ts";
export { QStashTransport } from "./qstash-transport.ts";
