/**
 * @module
 * The error a QStash publish outcome carries when QStash did not accept a message.
 */

/** Why a message was not accepted. */
export type QStashPublishFailure =
  /** The message could not be turned into a publish (bad retries or timeout, unencodable body). */
  | "invalid"
  /** The whole publish request failed: a non-2xx answer or a network error. */
  | "request"
  /** The publish request did not answer within `publishTimeoutMs`. */
  | "timeout"
  /** QStash answered the request but refused this message (a per-entry error of the batch). */
  | "rejected"
  /** Due further ahead than the plan's longest delay (`maxDelayMs`): kept for a later tick. */
  | "beyond-max-delay";

/**
 * QStash did not accept a message. The message stays in the outbox and is re-published by a later
 * tick under the same dedup id.
 */
export class QStashPublishError extends Error {
  override readonly name = "QStashPublishError";
  readonly reason: QStashPublishFailure;
  /** HTTP status of QStash's answer, when there was one. */
  readonly status: number | undefined;

  constructor(
    reason: QStashPublishFailure,
    message: string,
    options: { status?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.reason = reason;
    this.status = options.status;
  }
}
