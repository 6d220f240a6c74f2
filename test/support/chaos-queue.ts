/**
 * An in-process double of the HTTP queue (QStash semantics: dedup by id, retries on non-2xx,
 * `Retry-After`, 489 + `Upstash-NonRetryable-Error` stops, failure callback with the original body)
 * whose every step can misbehave: a publish lost or "accepted but reported failed", a whole batch
 * failing, deliveries out of order, duplicated or concurrent. Tests drive it step by step.
 */
import type { DeliveryToken, OutboxMessage } from "../../src/core/model.ts";
import type { Delivery, PublishOutcome, Transport } from "../../src/transport/port.ts";
import type { Prng } from "./prng.ts";

export interface ChaosFaults {
  /** Probability a whole publish call throws (nothing enqueued). */
  batchThrows: number;
  /** Probability one message is lost (not enqueued, reported failed). */
  lost: number;
  /** Probability one message is enqueued but reported failed (the caller re-publishes later). */
  acceptedButFailed: number;
  /** Probability a delivery stays pending after being delivered (a duplicate later). */
  duplicate: number;
  /** Whether the queue deduplicates by `dedupId` (QStash does, for 10 minutes). */
  dedup: boolean;
  /**
   * Probability that a failed delivery is dropped silently: no retry and no failure callback (the
   * queue gave up and its callback never got through). Only the tick's reaper brings it back.
   */
  vanish?: number;
}

export const NO_FAULTS: ChaosFaults = {
  batchThrows: 0,
  lost: 0,
  acceptedButFailed: 0,
  duplicate: 0,
  dedup: true,
};

interface Pending {
  message: OutboxMessage;
  messageId: string;
  retried: number;
  notBefore: number;
}

type Endpoint = (delivery: Delivery) => Promise<Response>;

const SECRET = "chaos-queue-signature";

export class ChaosQueue implements Transport {
  faults: ChaosFaults;
  readonly pending: Pending[] = [];
  private readonly seen = new Map<string, string>();
  private seq = 0;
  private deliveries = 0;
  /** Token ids stay unique when several queues share a store. */
  private readonly instance = Math.random().toString(36).slice(2, 10);
  /** Counters for the test's report. */
  readonly stats = {
    published: 0,
    deduplicated: 0,
    lost: 0,
    delivered: 0,
    duplicated: 0,
    callbacks: 0,
    vanished: 0,
  };

  constructor(
    private readonly rng: Prng,
    faults: ChaosFaults = NO_FAULTS,
  ) {
    this.faults = faults;
  }

  async publish(messages: OutboxMessage[]): Promise<PublishOutcome[]> {
    if (this.rng.chance(this.faults.batchThrows)) throw new Error("injected: batch publish failed");
    return messages.map((message): PublishOutcome => {
      if (this.rng.chance(this.faults.lost)) {
        this.stats.lost++;
        return { id: message.id, ok: false, error: new Error("injected: message lost") };
      }
      const known = this.faults.dedup ? this.seen.get(message.dedupId) : undefined;
      if (known) {
        this.stats.deduplicated++;
        return { id: message.id, ok: true, messageId: known, deduplicated: true };
      }
      const messageId = `msg_${++this.seq}`;
      this.seen.set(message.dedupId, messageId);
      this.pending.push({
        message: structuredClone(message),
        messageId,
        retried: 0,
        notBefore: message.notBefore,
      });
      this.stats.published++;
      if (this.rng.chance(this.faults.acceptedButFailed)) {
        return {
          id: message.id,
          ok: false,
          error: new Error("injected: accepted, reported failed"),
        };
      }
      return { id: message.id, ok: true, messageId, deduplicated: false };
    });
  }

  async verify(delivery: Delivery): Promise<boolean> {
    return delivery.headers.get("upstash-signature") === SECRET;
  }

  /**
   * Each delivery (a duplicate too, as QStash signs every one) carries a token of its own; a
   * delivery a test makes by hand, without one, counts as a new delivery each time.
   */
  deliveryToken(delivery: Delivery): DeliveryToken | undefined {
    const id =
      delivery.headers.get("x-chaos-delivery") ?? `raw_${this.instance}_${++this.deliveries}`;
    return { id, expiresAt: Date.now() + 300_000 };
  }

  /**
   * Deliver up to `count` pending messages that are due at `now`, picked at random (out of order),
   * all at once (concurrently). Returns how many were delivered.
   */
  async deliverSome(
    worker: Endpoint,
    dead: Endpoint,
    count: number,
    now = Date.now(),
  ): Promise<number> {
    const picked: Pending[] = [];
    for (let i = 0; i < count; i++) {
      const ready = this.pending.filter((p) => p.notBefore <= now && !picked.includes(p));
      if (ready.length === 0) break;
      const p = ready[this.rng.int(ready.length)]!;
      if (this.rng.chance(this.faults.duplicate)) {
        this.stats.duplicated++;
        picked.push({ ...p });
      } else {
        this.pending.splice(this.pending.indexOf(p), 1);
        picked.push(p);
      }
    }
    await Promise.all(picked.map((p) => this.deliverOne(p, worker, dead)));
    return picked.length;
  }

  private async deliverOne(p: Pending, worker: Endpoint, dead: Endpoint): Promise<void> {
    const body = JSON.stringify(p.message.job);
    const headers = new Headers({
      "content-type": "application/json",
      "upstash-signature": SECRET,
      "upstash-message-id": p.messageId,
      "upstash-retried": String(p.retried),
      "x-chaos-delivery": `dlv_${this.instance}_${++this.deliveries}`,
    });
    this.stats.delivered++;
    let res: Response;
    try {
      res = await worker({ url: "http://worker.test/v1/worker", headers, body });
    } catch {
      res = new Response("worker crashed", { status: 500 });
    }
    if (res.status >= 200 && res.status < 300) return;
    if (this.rng.chance(this.faults.vanish ?? 0)) {
      this.stats.vanished++;
      return;
    }
    const nonRetryable =
      res.status === 489 && res.headers.get("upstash-nonretryable-error") === "true";
    if (!nonRetryable && p.retried < p.message.job.retries) {
      const retryAfter = Number(res.headers.get("retry-after") ?? "0");
      this.pending.push({
        ...p,
        retried: p.retried + 1,
        notBefore: Date.now() + retryAfter * 1000,
      });
      return;
    }
    this.stats.callbacks++;
    const callback = JSON.stringify({
      status: res.status,
      body: toBase64(await res.text()),
      retried: p.retried,
      maxRetries: p.message.job.retries,
      sourceMessageId: p.messageId,
      url: "http://worker.test/v1/worker",
      sourceBody: toBase64(body),
    });
    await dead({
      url: "http://worker.test/v1/dead",
      headers: new Headers({
        "content-type": "application/json",
        "upstash-signature": SECRET,
        "x-chaos-delivery": `dlv_${this.instance}_${++this.deliveries}`,
      }),
      body: callback,
    }).catch(() => undefined);
  }
}

function toBase64(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}
