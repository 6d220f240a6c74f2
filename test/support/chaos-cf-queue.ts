/**
 * The invariant suite's queue double with Cloudflare Queues semantics instead of QStash's: no
 * deduplication, delivery in batches to the Worker's `queue()` consumer
 * (`consumeQueueBatch` from `src/transport/cloudflare-queues/`, run through `Runner.runPulled`),
 * each message acked or retried on its own (`retry({ delaySeconds })`, seconds scaled down so a
 * scenario runs in milliseconds), at-least-once redelivery (an acked message delivered again),
 * a consumer that throws mid-batch (the answers of part of the batch are lost and those messages
 * come back after `retry_delay`, whether or not they ran), and the queue's own `max_retries`: a
 * message retried past it goes to the queue's dead-letter queue, out of tickwork's sight — only
 * the job's outbox watch brings it back (docs/adr/0010-reaper-watches.md).
 */
import type { Runner } from "../../src/engine/runner.ts";
import {
  consumeQueueBatch,
  type QueueAnswer,
  type QueueMessage,
} from "../../src/transport/cloudflare-queues/index.ts";
import { type ChaosFaults, ChaosQueue } from "./chaos-queue.ts";
import type { Prng } from "./prng.ts";

/** Queues-only faults, beside {@link ChaosFaults}' publish faults and `duplicate`/`vanish`. */
export interface QueuesFaults {
  /** Probability a batch's consumer throws after running it: the answers of a suffix are lost. */
  crashMidBatch: number;
  /** The consumer's `max_retries`: past it a message leaves for the queue's own DLQ. */
  maxRetries: number;
}

type Pending = ChaosQueue["pending"][number];

/** What every {@link ChaosCloudflareQueue} of this process did, summed (for a suite's report). */
export const queuesTotals = { batches: 0, crashes: 0, redelivered: 0, queueDead: 0, retries: 0 };

function bump(key: keyof typeof queuesTotals, stats: typeof queuesTotals): void {
  stats[key]++;
  queuesTotals[key]++;
}

export class ChaosCloudflareQueue extends ChaosQueue {
  queuesFaults: QueuesFaults;
  /** What the Queues side did, for the test's report. */
  readonly queueStats = { batches: 0, crashes: 0, redelivered: 0, queueDead: 0, retries: 0 };

  constructor(
    private readonly random: Prng,
    faults: ChaosFaults,
    queuesFaults: QueuesFaults,
    /** Real milliseconds per `delaySeconds` second. */
    private readonly msPerSecond = 10,
  ) {
    // Cloudflare Queues has no deduplication.
    super(random, { ...faults, dedup: false });
    this.queuesFaults = queuesFaults;
  }

  /**
   * Hand up to `count` due messages, picked at random, to the consumer as one batch (run at once,
   * up to 1–10 concurrently), then apply its answers with the queue's faults. Returns how many
   * were delivered.
   */
  async consume(runner: Runner, count: number, now = Date.now()): Promise<number> {
    const picked: Pending[] = [];
    for (let i = 0; i < count; i++) {
      const ready = this.pending.filter((p) => p.notBefore <= now);
      if (ready.length === 0) break;
      const p = ready[this.random.int(ready.length)]!;
      this.pending.splice(this.pending.indexOf(p), 1);
      picked.push(p);
    }
    if (picked.length === 0) return 0;
    bump("batches", this.queueStats);
    const answers: (QueueAnswer | undefined)[] = picked.map(() => undefined);
    const messages: QueueMessage[] = picked.map((p, i) => ({
      id: p.messageId,
      body: JSON.stringify(p.message.job),
      attempts: p.retried + 1,
      ack: () => {
        answers[i] ??= { kind: "ack" };
      },
      retry: (options) => {
        answers[i] ??= { kind: "retry", delaySeconds: options?.delaySeconds ?? 1 };
      },
    }));
    this.stats.delivered += picked.length;
    await consumeQueueBatch({ queue: "chaos", messages }, (body) => runner.runPulled(body), {
      concurrency: 1 + this.random.int(10),
      backoff: () => 1_000,
    });
    // The consumer threw after running the batch: the runtime lost the answers from `cut` on and
    // retries those messages after retry_delay (1 s), ran or not.
    const cut = this.random.chance(this.queuesFaults.crashMidBatch)
      ? this.random.int(picked.length)
      : picked.length;
    if (cut < picked.length) bump("crashes", this.queueStats);
    const at = Date.now();
    picked.forEach((p, i) => {
      const answer: QueueAnswer =
        i >= cut || answers[i] === undefined
          ? { kind: "retry", delaySeconds: 1 }
          : (answers[i] as QueueAnswer);
      if (answer.kind === "ack") {
        // At least once: an acknowledged message may still be delivered again.
        if (this.random.chance(this.faults.duplicate)) {
          this.stats.duplicated++;
          this.pending.push({ ...p, retried: p.retried + 1, notBefore: at });
        }
        return;
      }
      bump("retries", this.queueStats);
      if (this.random.chance(this.faults.vanish ?? 0)) {
        this.stats.vanished++;
        return;
      }
      if (p.retried + 1 > this.queuesFaults.maxRetries) {
        bump("queueDead", this.queueStats);
        return;
      }
      if (i >= cut) bump("redelivered", this.queueStats);
      this.pending.push({
        ...p,
        retried: p.retried + 1,
        notBefore: at + answer.delaySeconds * this.msPerSecond,
      });
    });
    return picked.length;
  }
}
