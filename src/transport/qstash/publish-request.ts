/**
 * @module
 * One outbox message as one QStash publish: destination, body, and the `Upstash-*` settings the
 * SDK turns into headers.
 */
import type { FlowControl, PublishBatchRequest } from "@upstash/qstash";
import { jobJson } from "../../core/message-json.ts";
import type { OutboxMessage } from "../../core/model.ts";
import { DEFAULT_GROUP } from "../../core/placement.ts";
import type { FlowControlOption, ResolvedQStashOptions } from "./options.ts";

/**
 * `Upstash-Not-Before` for a message due at `notBeforeMs`: the whole unix second it falls in, or
 * `undefined` when that second has begun (deliver now).
 *
 * QStash takes whole seconds. Rounding down delivers a message due at a sub-second time up to a
 * second early, and the runner waits out the rest before it begins the job (`EARLY_WAIT_MS` in
 * src/engine/runner.ts), so the handler starts on time to the millisecond; rounding up made it
 * start up to a second late (docs/adr/0023-sub-second-not-before.md).
 *
 * @example
 * notBeforeSeconds(1_700_000_000_250, 1_699_999_999_000); // 1_700_000_000
 * notBeforeSeconds(1_700_000_000_250, 1_700_000_000_100); // undefined: its second has begun
 */
export function notBeforeSeconds(notBeforeMs: number, nowMs: number): number | undefined {
  if (!Number.isFinite(notBeforeMs)) return undefined;
  const seconds = Math.floor(notBeforeMs / 1000);
  return seconds * 1000 > nowMs ? seconds : undefined;
}

/**
 * The batch entry for `message`. Throws (`RangeError`, or `TypeError` for a body JSON cannot
 * encode) when the message cannot be published; the caller reports that message alone.
 */
export function toPublishRequest(
  message: OutboxMessage,
  options: ResolvedQStashOptions,
  nowMs: number,
): PublishBatchRequest<string> {
  const { job } = message;
  if (!Number.isInteger(job.retries) || job.retries < 0) {
    throw new RangeError(`job.retries must be a non-negative integer, got ${job.retries}`);
  }
  if (!Number.isFinite(job.timeoutMs) || job.timeoutMs <= 0) {
    throw new RangeError(`job.timeoutMs must be positive, got ${job.timeoutMs}`);
  }
  if (!message.dedupId) throw new RangeError("dedupId must be a non-empty string");
  const notBefore = notBeforeSeconds(message.notBefore, nowMs);
  const flow = options.flowControl[job.handler];
  const callback = options.failureCallbackUrl;
  return {
    url: options.workerGroups.get(job.placement?.group ?? DEFAULT_GROUP) ?? options.workerUrl,
    // Exactly what the worker parses and what the signature's body hash covers.
    body: jobJson(job),
    // A failure callback gets the message's retries unless told otherwise: none for a job with
    // `retries: 0`, whose callback may have to be retried (a 409 while the reported attempt still
    // holds its lease, a 503 while the store is unreachable).
    headers:
      callback === undefined
        ? { "Content-Type": "application/json" }
        : {
            "Content-Type": "application/json",
            "Upstash-Failure-Callback-Retries": String(Math.max(MIN_CALLBACK_RETRIES, job.retries)),
          },
    deduplicationId: message.dedupId,
    retries: job.retries,
    timeout: Math.ceil((job.timeoutMs + options.responseGraceMs) / 1000),
    ...(notBefore !== undefined ? { notBefore } : {}),
    ...(callback !== undefined ? { failureCallback: callback } : {}),
    ...(options.retryDelay !== undefined ? { retryDelay: options.retryDelay } : {}),
    ...(flow ? { flowControl: toFlowControl(job.handler, flow) } : {}),
  };
}

/** The fewest retries a failure callback gets (QStash's default for a message). */
const MIN_CALLBACK_RETRIES = 3;

function toFlowControl(handler: string, flow: FlowControlOption): FlowControl {
  // Options are checked at construction: at least one of parallelism and rate is set.
  return {
    key: flow.key ?? handler,
    ...(flow.parallelism !== undefined ? { parallelism: flow.parallelism } : {}),
    ...(flow.rate !== undefined ? { rate: flow.rate } : {}),
    ...(flow.period !== undefined ? { period: flow.period } : {}),
  } as FlowControl;
}
