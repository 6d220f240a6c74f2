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
 * | `busy`                           | `retry`: `retryAfterMs`, at least the busy floor; no attempt    |
 * | `give-up`                        | `ack()`: the job is already dead in tickwork's dead letters     |
 * | `bad-request`, `unauthorized`    | `ack()` and a log line: never runnable                          |
 * | a body that cannot be encoded    | `ack()` and a log line: never runnable                          |
 * | the run threw (store unreachable) | `retry({ delaySeconds: backoff })`                             |
 *
 * Which attempt is a job's last is counted from the job's record (`beginRun`'s attempts against its
 * `retries`), never from `message.attempts`: the queue's own count only picks the backoff. Set the
 * consumer's `max_retries` high (100) so the queue never drops a message before tickwork gives up;
 * one it drops anyway is not lost — its outbox watch brings it back (docs/adr/0010-reaper-watches.md).
 * A `busy` job (its handler's concurrency or rate limit, another delivery's run lease) is not
 * re-checked every second or two as on Redis Streams: each busy answer waits at least
 * {@link defaultBusyFloor} of the message's deliveries so far (1 s, 2 s, 4 s … up to 30 min), so a
 * job behind a long-held limit does not spend the queue's `max_retries` within minutes.
 */
import { type DeliveryOutcome, guardedWait } from "../../core/delivery.ts";
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
  /**
   * The least wait before a `busy` message is delivered again (ms), from its deliveries before
   * this one: each delivery is one of the queue's `max_retries`, so the wait grows.
   * @default defaultBusyFloor (1 s, 2 s, 4 s … up to 30 min; `createTickwork`: at most half of `reapAfterMs`)
   */
  busyFloor?: ((retried: number) => number) | undefined;
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
 * The default least wait of a `busy` message: 1 s, 2 s, 4 s … up to {@link BUSY_FLOOR_CAP_MS}
 * (30 min). 100 deliveries (the most `max_retries` allows) take about 45 h at this rate, not
 * minutes.
 */
export const defaultBusyFloor = (retried: number): number =>
  Math.min(1_000 * 2 ** Math.min(Math.max(0, retried), 40), BUSY_FLOOR_CAP_MS);

/**
 * The longest busy floor (30 min): half the engine's default `reapAfterMs`. A `limited` answer
 * moves the job's outbox watch to `now + wait + reapAfterMs`; a message sent back for longer
 * than that comes back after the watch is due, and the reaper re-dispatches a job that is only
 * waiting (a second message, then a third …). Use {@link busyFloorWithin} for another
 * `reapAfterMs`.
 */
export const BUSY_FLOOR_CAP_MS = 1_800_000;

/** {@link defaultBusyFloor}, at most half of `reapAfterMs` (and at least 1 s). */
export const busyFloorWithin =
  (reapAfterMs: number) =>
  (retried: number): number =>
    Math.min(defaultBusyFloor(retried), Math.max(1_000, Math.floor(reapAfterMs / 2)));

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
  const asked = Math.floor(options.concurrency ?? 10);
  // NaN (an unset variable through Number()) would start no lane: nothing answered, and the
  // runtime acks every unanswered message of a batch that returns.
  const concurrency = Number.isNaN(asked) ? 10 : Math.max(1, asked);
  const report = (msg: string, fields: Record<string, unknown>) =>
    warn(options.logger, msg, fields);
  const backoff = guardedWait(options.backoff, defaultQueueBackoff, "consumer backoff", report);
  const busyFloor = guardedWait(options.busyFloor, defaultBusyFloor, "consumer busyFloor", report);
  const result: ConsumeResult = { acked: 0, retried: 0, deferred: 0, failed: 0 };
  const messages = [...batch.messages];
  let next = 0;
  const lane = async () => {
    while (next < messages.length) {
      const message = messages[next++]!;
      await consumeOne(message, run, { backoff, busyFloor }, options.logger, result);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, messages.length) }, lane));
  return result;
}

async function consumeOne(
  message: QueueMessage,
  run: (body: string) => Promise<DeliveryOutcome>,
  waits: { backoff: (retried: number) => number; busyFloor: (retried: number) => number },
  logger: ConsumerLogger | undefined,
  result: ConsumeResult,
): Promise<void> {
  const retried = Math.max(0, (Number(message.attempts) || 1) - 1);
  const backoff = waits.backoff;
  let answer: QueueAnswer;
  try {
    const body = bodyText(message.body);
    if (body === undefined) {
      // Not text and not encodable as JSON (a cycle, a BigInt): never a job, however often sent.
      warn(logger, "queue message body cannot be read as a job; acknowledged and dropped", {
        messageId: message.id,
      });
      answer = { kind: "ack" };
    } else {
      const outcome = await run(body);
      answer = answerFor(outcome, backoff(retried), waits.busyFloor(retried));
      count(outcome, answer, message, logger, result);
    }
  } catch (error) {
    result.failed++;
    warn(logger, "queue message not run; it will be delivered again", {
      messageId: message.id,
      error: String(error),
    });
    answer = { kind: "retry", delaySeconds: toDelaySeconds(backoff(retried), 1) };
  }
  answerMessage(message, answer, logger, result);
}

/** Count an answered outcome in `result` (and report a message that is not a job). */
function count(
  outcome: DeliveryOutcome,
  answer: QueueAnswer,
  message: QueueMessage,
  logger: ConsumerLogger | undefined,
  result: ConsumeResult,
): void {
  if (outcome.kind === "retry" && answer.kind === "retry") result.retried++;
  else if (outcome.kind === "busy") result.deferred++;
  else if (outcome.kind === "bad-request" || outcome.kind === "unauthorized") {
    warn(logger, "queue message is not a tickwork job; acknowledged and dropped", {
      messageId: message.id,
    });
  }
}

/** Ack or retry `message`; a runtime that refuses the answer is reported, never thrown. */
function answerMessage(
  message: QueueMessage,
  answer: QueueAnswer,
  logger: ConsumerLogger | undefined,
  result: ConsumeResult,
): void {
  try {
    if (answer.kind === "ack") {
      message.ack();
      result.acked++;
    } else message.retry({ delaySeconds: answer.delaySeconds });
  } catch (error) {
    // The runtime refused the answer (every delay written is whole seconds within 0–12 h, so
    // this is not expected): a message left unanswered when `queue()` returns counts as
    // acknowledged, and the job's outbox watch re-dispatches it (the job's state decides then).
    warn(logger, "could not answer a queue message", {
      messageId: message.id,
      error: String(error),
    });
  }
}

/**
 * The answer to a delivery's outcome; `backoffMs` is the wait before the next attempt when the
 * handler asked for none, `busyFloorMs` the least wait of a `busy` one.
 *
 * @example
 * answerFor({ kind: "busy", reason: "limited", retryAfterMs: 2_500 }, 1_000);
 * // { kind: "retry", delaySeconds: 3 }
 * answerFor({ kind: "busy", reason: "limited", retryAfterMs: 2_500 }, 1_000, 8_000);
 * // { kind: "retry", delaySeconds: 8 }
 */
export function answerFor(
  outcome: DeliveryOutcome,
  backoffMs: number,
  busyFloorMs = 0,
): QueueAnswer {
  switch (outcome.kind) {
    case "retry": {
      // A wait that is no number of milliseconds (NaN, negative) is none: the backoff.
      const asked = outcome.retryAfterMs;
      const waitMs = asked !== undefined && asked >= 0 ? asked : backoffMs;
      // Longer than a queue message may wait: the job's watch (recoverAt = now + reapAfterMs +
      // retryAfterMs, written by finishRun) re-dispatches it, never sooner than asked.
      if (asked !== undefined && waitMs > MAX_DELAY_SECONDS * 1000) {
        return { kind: "ack" };
      }
      return { kind: "retry", delaySeconds: toDelaySeconds(waitMs, 0) };
    }
    case "busy":
      // Not an attempt: whatever holds the job is re-checked by the next delivery's beginRun,
      // never before it could begin (a rate limit's window): each delivery is billed and spends
      // one of the queue's retries.
      return {
        kind: "retry",
        delaySeconds: toDelaySeconds(
          Math.max(outcome.retryAfterMs, outcome.minWaitMs ?? 0, busyFloorMs),
          1,
        ),
      };
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

/**
 * The job spec JSON: what the transport sent as text (any other body, re-encoded); `undefined`
 * when the body cannot be encoded (a cycle, a BigInt: a `v8` message from another producer).
 */
function bodyText(body: unknown): string | undefined {
  if (typeof body === "string") return body;
  try {
    if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) {
      return new TextDecoder().decode(body as ArrayBuffer);
    }
    return JSON.stringify(body) ?? "";
  } catch {
    return undefined;
  }
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
