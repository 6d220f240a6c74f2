/**
 * @module
 * What the double shows tests about its deliveries (`deliveries.ts`), and the faults they can
 * inject: counters, one record per attempt as the destination saw it, DLQ entries, and each stored
 * message's state.
 */
import type { FlowSpec } from "./message.ts";

/** Faults to inject; change them at any time. */
export interface QStashDoubleFaults {
  /** The next this-many publish requests (`/v2/publish`, `/v2/batch`) fail with `failStatus`. */
  failPublishRequests: number;
  /** @default 500 */
  failStatus: number;
  /** Every publish request is answered this much later (to trip a client's timeout). */
  publishDelayMs: number;
  /** Every message's first attempt is sent twice at once (at-least-once duplicates). */
  duplicateDeliveries: boolean;
  /** Every message's first attempt is held back a random 0–this ms, so deliveries reorder. */
  reorderMs: number;
  /**
   * Messages accepted meanwhile are kept and never delivered: a QStash whose deliveries happen on
   * other machines (the benchmarks measure the publishing side, not the double's deliveries).
   */
  holdDeliveries: boolean;
}

/** Counters since the double started. */
export interface QStashDoubleCounters {
  /** Requests per route, e.g. `"POST /v2/batch"`, whatever their answer. */
  requests: Record<string, number>;
  /** `/v2/publish` and `/v2/batch` requests, whatever their answer. */
  publishRequests: number;
  /** Messages per accepted `/v2/batch` request, in order. */
  batchSizes: number[];
  /** Messages accepted (duplicates not counted). */
  messages: number;
  /** Publishes answered with an earlier message's id. */
  deduplicated: number;
  /** Publishes refused (a 400, or a batch entry `{error}`). */
  rejected: number;
  /** Attempts to deliver messages (duplicates included; failure callbacks not). */
  deliveries: number;
  /** Messages their destination answered 2xx. */
  delivered: number;
  /** Retries scheduled for messages. */
  retries: number;
  /** Messages that gave up (retries spent, or non-retryable). */
  failed: number;
  /** Attempts to deliver failure callbacks. */
  callbacks: number;
  callbacksDelivered: number;
  callbacksFailed: number;
}

/** One attempt, as the destination saw it. */
export interface DeliveryRecord {
  messageId: string;
  kind: "message" | "failure-callback";
  url: string;
  retried: number;
  /** True for the twin sent by the `duplicateDeliveries` fault. */
  duplicate: boolean;
  at: number;
  /** The destination's status; `0` for no response. */
  status: number;
  body: string;
  headers: Record<string, string>;
}

/** A message that gave up, as QStash keeps it in its DLQ. */
export interface DlqEntry {
  dlqId: string;
  messageId: string;
  url: string;
  responseStatus: number;
  retried: number;
}

/** A stored message's state, for tests to look at. */
export interface MessageView {
  messageId: string;
  kind: "message" | "failure-callback";
  url: string;
  notBefore: number;
  createdAt: number;
  retried: number;
  maxRetries: number;
  state: "scheduled" | "waiting" | "in-flight" | "delivered" | "failed";
  /** For a failure callback: the message it reports. */
  sourceMessageId?: string;
  /** The settings it was published with, as the double read them. */
  settings: {
    dedupKey?: string;
    retryDelay?: string;
    timeoutMs?: number;
    failureCallback?: string;
    flow?: FlowSpec;
  };
}
