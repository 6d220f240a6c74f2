/**
 * A QStash double for tests, built only from QStash's published wire format (upstash/docs and the
 * `@upstash/qstash` SDK's requests), not from tickwork's code: a real HTTP server that accepts
 * publishes and batches and delivers them over real HTTP, signed as QStash signs them, with
 * QStash's retries, dedup window, non-retryable 489, failure callback and flow control.
 */
export {
  DEV_CURRENT_SIGNING_KEY,
  DEV_NEXT_SIGNING_KEY,
  DEV_TOKEN,
} from "./constants.ts";
export { canonical } from "./failure-callback.ts";
export type {
  DeliveryRecord,
  DlqEntry,
  MessageView,
  QStashDoubleCounters,
  QStashDoubleFaults,
} from "./records.ts";
export { type QStashDouble, type QStashDoubleOptions, startQStashDouble } from "./server.ts";
export { signQStashJwt } from "./sign.ts";
