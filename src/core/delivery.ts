/**
 * @module
 * What became of a delivery: the runner's answer to the queue, in the domain's terms. Each
 * transport turns it into its own wire answer:
 *
 * | outcome        | push (QStash, the local queue: HTTP)                     | pull (e.g. Redis Streams)          |
 * | -------------- | -------------------------------------------------------- | ---------------------------------- |
 * | `done`         | 200                                                      | ack                                |
 * | `retry`        | 500 (+ `Retry-After` when `retryAfterMs`)                 | retry later (after `retryAfterMs`) |
 * | `give-up`      | 489 + `Upstash-NonRetryable-Error: true`                 | ack (the job is already dead)      |
 * | `busy`         | 409 + `Retry-After`                                      | redeliver after `retryAfterMs`     |
 * | `unauthorized` | 401                                                      | drop (not the queue's message)     |
 * | `bad-request`  | `job`: 489 + `Upstash-NonRetryable-Error`; `failure-callback`: 400 | dead-letter the message |
 *
 * `src/http/delivery.ts` renders the push column for the `/v1/worker` and `/v1/dead` routes.
 */
import type { JobError, JobStatus } from "./model.ts";

/**
 * The outcome of one delivery (`Runner.deliver`) or failure callback (`Runner.dead`).
 *
 * - `done` — nothing left to do for this delivery: the attempt succeeded, the job is already
 *   final or skipped (`status`: its status), the delivery was a replay (`"replayed"`), or the job
 *   expired after it was cancelled or finished (`"gone"`). For a failure callback: the job's
 *   status after it was dead-lettered.
 * - `retry` — the attempt failed and the job has retries left: deliver it again, after
 *   `retryAfterMs` when the handler asked for that (`RetryAfterError`), else with the queue's backoff.
 * - `give-up` — the attempt failed for good (retries spent, `NonRetryableError`, unknown handler,
 *   invalid input): the job is dead; do not deliver it again.
 * - `busy` — not run now, and not an attempt: deliver it again after `retryAfterMs`.
 *   `attempt-running`: another attempt of the job holds the run lease; `limited`: the handler's
 *   concurrency or rate limit is reached (as many jobs of its key run already, or began within
 *   the rate's period; the job is
 *   unchanged, its attempts included — a pull queue redelivers it without counting a retry, a
 *   push queue after `Retry-After`); `unplaced`: this node may not run the job (its placement,
 *   docs/adr/0017-placement.md; not an attempt); `unknown-handler`: this node has no handler of
 *   the job's name, which a node of another version does (not an attempt, for a while: see
 *   `UNKNOWN_HANDLER_GRACE_MS` in src/engine/runner.ts); `lease-lapsed`: the run lease ran out before the handler
 *   could start; `still-running` (failure callback): the reported attempt is still running
 *   under its lease.
 * - `unauthorized` — the delivery's signature (or token) does not verify.
 * - `bad-request` — the body is not what the route expects (`job`: a tickwork job spec;
 *   `failure-callback`: the queue's failure callback for one) and never will be.
 */
export type DeliveryOutcome =
  | { kind: "done"; id: string; status: JobStatus | "replayed" | "gone" }
  | { kind: "retry"; id: string; error: JobError; retryAfterMs?: number }
  | { kind: "give-up"; id: string; error: JobError }
  | {
      kind: "busy";
      reason:
        | "attempt-running"
        | "limited"
        | "unplaced"
        | "unknown-handler"
        | "lease-lapsed"
        | "still-running";
      retryAfterMs: number;
      /**
       * The least it must wait, when that is known (a rate limit's window: it cannot begin
       * sooner). A pull queue is told to look again after `retryAfterMs`, sooner than a limit's
       * wait; a queue whose redeliveries cost (Cloudflare Queues) waits at least this.
       */
      minWaitMs?: number;
    }
  | { kind: "unauthorized" }
  | { kind: "bad-request"; expected: "job" | "failure-callback" };

/**
 * A wait function the user gave (`custom`: a queue's backoff, a busy floor), made safe to call
 * from a queue's loop: one that throws or answers no finite number is reported through `warn`
 * (naming it `what`) and `fallback`'s wait is used instead. Without `custom`, `fallback`. (NaN or
 * Infinity written as a delay stranded or parked the delivery for good.)
 */
export function guardedWait(
  custom: ((retried: number) => number) | undefined,
  fallback: (retried: number) => number,
  what: string,
  warn: (msg: string, fields: Record<string, unknown>) => void,
): (retried: number) => number {
  if (!custom) return fallback;
  return (retried) => {
    try {
      const ms = custom(retried);
      if (typeof ms === "number" && Number.isFinite(ms)) return ms;
      warn(`${what} answered no finite number; using the default`, { ms: String(ms) });
    } catch (error) {
      warn(`${what} threw; using the default`, { error: String(error) });
    }
    return fallback(retried);
  };
}
