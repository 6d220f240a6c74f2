/**
 * @module
 * Errors the local transport reports: a message (or its failure callback) that gave up, and
 * publishing to a closed transport.
 */

/** A delivery gave up: its retries are spent, or the worker answered 489 non-retryable. */
export class LocalDeliveryError extends Error {
  override readonly name = "LocalDeliveryError";
  /** `"message"` for a job delivery, `"failure-callback"` for the callback reporting one. */
  readonly kind: "message" | "failure-callback";
  readonly messageId: string;
  readonly url: string;
  /** Status of the last response; `0` when the last attempt got none (network error, timeout). */
  readonly status: number;
  /** Retries made before giving up. */
  readonly retried: number;

  constructor(fields: {
    kind: "message" | "failure-callback";
    messageId: string;
    url: string;
    status: number;
    retried: number;
    cause?: unknown;
  }) {
    const outcome = fields.status === 0 ? "no response" : `status ${fields.status}`;
    super(
      `${fields.kind} ${fields.messageId} to ${fields.url} gave up after ${fields.retried} retries (${outcome})`,
      { cause: fields.cause },
    );
    this.kind = fields.kind;
    this.messageId = fields.messageId;
    this.url = fields.url;
    this.status = fields.status;
    this.retried = fields.retried;
  }
}

/** `publish` was called after `close()`. */
export class LocalTransportClosedError extends Error {
  override readonly name = "LocalTransportClosedError";

  constructor() {
    super("the local transport is closed");
  }
}
