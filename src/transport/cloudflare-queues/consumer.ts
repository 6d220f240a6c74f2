/**
 * @module
 * The consumer side of Cloudflare Queues: a Worker's `queue(batch, env, ctx)` handler runs each
 * message of a batch through the runner (`Runner.runPulled`: nothing to verify, the message never
 * crossed the network as a request) and answers each one on its own, as the runner's outcome says
 * (`src/core/delivery.ts`; docs/adr/0018-cloudflare-queues.md):
 *
 * | outcome                          | answer                                                          |
 * | -------------------------------- | --------------------------------------------------------------- |
 * | `done`                           | `ack()`                                                         |
 * | `retry`                          | `retry({ delaySeconds })`: `retryAfterMs`, else the backoff     |
 * | `retry`, `retryAfterMs` > 12 h   | `ack()`: the job's watch re-dispatches it after that wait       |
 * | `busy`                           | `retry({ delaySeconds: retryAfterMs })`, not a tickwork attempt |
 * | `give-up`                        | `ack()`: the job is already dead in tickwork's dead letters     |
 * | `bad-request`, `unauthorized`    | `ack()` and a log line: never runnable                          |
 * | the run threw (store unreachable) | `retry({ delaySeconds: backoff })`                             |
 *
 * Which attempt is a job's last is counted from the job's record (`beginRun`'s attempts against its
 * `retries`), never from `message.attempts`: the queue's own count only picks the backoff. Set the
 * consumer's `max_retries` high (100) so the queue never drops a message before tickwork gives up;
 * one it drops anyway is not lost — its outbox watch brings it back (docs/adr/0010-reaper-watches.md).
 */
import type { DeliveryOutcome } from "../../core/delivery.ts";
import { MAX_DELAY_SECONDS } from "./queues-transport.ts";

/** One message of a batch, as the Workers runtime hands it to `queue()`. */
export interface QueueMessage {
  readonly id: string;
  readonly timestamp?: Date;
  readonly body: unknown;
  /** Deliveries of this message so far, this one included (starts at 1). */
  readonly attempts: number;
  ack(): void;
  retry(options?: { delaySeconds?: number }): void;
}

/** The batch `queue()` receives. */
export interface QueueBatch {
  readonly queue: string;
  readonly messages: readonly QueueMessage[];
}

/** Where the consumer reports what it could not do (the engine's `Logger` fits). */
export interface ConsumerLogger {
  warn(msg: string, fields?: Record<string, unknown>): void;
}

/** Options of {@link consumeQueueBatch}. */
export interface ConsumeOptions {
  /** Messages of the batch run at once. @default 10 */
  concurrency?: number | undefined;
  /**
   * Wait before retry `retried + 1` of a failed attempt (ms), unless the handler asked for a time
   * (`RetryAfterError`); `retried` is the message's deliveries before this one.
   * @default (retried) => Math.min(1000 * 2 ** retried, 60_000)
   */
  backoff?: ((retried: number) => number) | undefined;
  logger?: ConsumerLogger | undefined;
}

/** What a batch came to. */
export interface ConsumeResult {
  acked: number;
  /** Failed attempts sent back with their backoff. */
  retried: number;
  /** Busy deliveries sent back (not tickwork attempts). */
  deferred: number;
  /** Messages whose run threw (the store was unreachable): sent back with the backoff. */
  failed: number;
}

/** The answer to one message. */
export type QueueAnswer = { kind: "ack" } | { kind: "retry"; delaySeconds: number };

/** The default backoff: 1 s, 2 s, 4 s … up to a minute. */
export const defaultQueueBackoff = (retried: number): number =>
  Math.min(1_000 * 2 ** Math.max(0, retried), 60_000);

/**
 * Run every message of `batch` through `run` (at most `concurrency` at once) and ack or retry
 * each, as its outcome says. Never throws: a message whose run throws is retried with the backoff
 * and the others are answered as usual.
 *
 * @example
 * async queue(batch, env, ctx) {
 *   await consumeQueueBatch(batch, (body) => engine.runner.runPulled(body), { logger });
 * }
 */
export async function consumeQueueBatch(
  batch: QueueBatch,
  run: (body: string) => Promise<DeliveryOutcome>,
  options: ConsumeOptions = {},
): Promise<ConsumeResult> {
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 10));
  const backoff = options.backoff ?? defaultQueueBackoff;
  const result: ConsumeResult = { acked: 0, retried: 0, deferred: 0, failed: 0 };
  const messages = [...batch.messages];
  let next = 0;
  const lane = async () => {
    while (next < messages.length) {
      const message = messages[next++]!;
      await consumeOne(message, run, backoff, options.logger, result);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, messages.length) }, lane));
  return result;
}

async function consumeOne(
  message: QueueMessage,
  run: (body: string) => Promise<DeliveryOutcome>,
  backoff: (retried: number) => number,
  logger: ConsumerLogger | undefined,
  result: ConsumeResult,
): Promise<void> {
  const retried = Math.max(0, (Number(message.attempts) || 1) - 1);
  let answer: QueueAnswer;
  try {
    const outcome = await run(bodyText(message.body));
    answer = answerFor(outcome, backoff(retried));
    if (outcome.kind === "retry" && answer.kind === "retry") result.retried++;
    else if (outcome.kind === "busy") result.deferred++;
    else if (outcome.kind === "bad-request" || outcome.kind === "unauthorized") {
      warn(logger, "queue message is not a tickwork job; acknowledged and dropped", {
        messageId: message.id,
      });
    }
  } catch (error) {
    result.failed++;
    warn(logger, "queue message not run; it will be delivered again", {
      messageId: message.id,
      error: String(error),
    });
    answer = { kind: "retry", delaySeconds: toDelaySeconds(backoff(retried), 1) };
  }
  try {
    if (answer.kind === "ack") {
      message.ack();
      result.acked++;
    } else message.retry({ delaySeconds: answer.delaySeconds });
  } catch (error) {
    // The runtime refused the answer: the message is delivered again, and the job's own state
    // decides what that delivery does.
    warn(logger, "could not answer a queue message", {
      messageId: message.id,
      error: String(error),
    });
  }
}

/**
 * The answer to a delivery's outcome; `backoffMs` is the wait before the next attempt when the
 * handler asked for none.
 *
 * @example
 * answerFor({ kind: "busy", reason: "limited", retryAfterMs: 2_500 }, 1_000);
 * // { kind: "retry", delaySeconds: 3 }
 */
export function answerFor(outcome: DeliveryOutcome, backoffMs: number): QueueAnswer {
  switch (outcome.kind) {
    case "retry": {
      const waitMs = outcome.retryAfterMs ?? backoffMs;
      // Longer than a queue message may wait: the job's watch (recoverAt = now + reapAfterMs +
      // retryAfterMs, written by finishRun) re-dispatches it, never sooner than asked.
      if (outcome.retryAfterMs !== undefined && waitMs > MAX_DELAY_SECONDS * 1000) {
        return { kind: "ack" };
      }
      return { kind: "retry", delaySeconds: toDelaySeconds(waitMs, 0) };
    }
    case "busy":
      // Not an attempt: whatever holds the job is re-checked by the next delivery's beginRun.
      return { kind: "retry", delaySeconds: toDelaySeconds(outcome.retryAfterMs, 1) };
    default:
      // done; give-up (the job is dead in tickwork's dead letters); bad-request, unauthorized.
      return { kind: "ack" };
  }
}

/** `ms` as whole seconds, rounded up, within [`min`, 12 h]. */
function toDelaySeconds(ms: number, min: number): number {
  const seconds = Number.isFinite(ms) ? Math.ceil(ms / 1000) : MAX_DELAY_SECONDS;
  return Math.min(MAX_DELAY_SECONDS, Math.max(min, seconds));
}

/** The job spec JSON: what the transport sent as text (any other body, re-encoded). */
function bodyText(body: unknown): string {
  if (typeof body === "string") return body;
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) {
    return new TextDecoder().decode(body as ArrayBuffer);
  }
  return JSON.stringify(body) ?? "";
}

function warn(
  logger: ConsumerLogger | undefined,
  msg: string,
  fields: Record<string, unknown>,
): void {
  try {
    logger?.warn(msg, fields);
  } catch {
    // Nowhere left to report it.
  }
}
