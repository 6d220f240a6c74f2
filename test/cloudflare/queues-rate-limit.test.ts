/**
 * On Cloudflare Queues each redelivery is billed and spends one of the queue's retries, so a job
 * held by its handler's rate limit is sent back after the window's own wait (the store knows it
 * exactly), not after the short re-check a Redis Streams worker makes (its redeliveries are
 * free). It then runs when its window opens, after one wait, not a ladder of early redeliveries
 * (a 1/h limit made 12, and a 24 h one ran the queue's 100 retries out before the window).
 * Memory store with a fake clock; the queue is a double of Queues' per-message delays.
 */
import { describe, expect, it } from "vitest";
import { createEngine, type Handlers, silentLogger } from "../../src/engine/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import {
  CloudflareQueuesTransport,
  consumeQueueBatch,
  type QueueSendRequest,
} from "../../src/transport/cloudflare-queues/index.ts";

const START = 1_800_000_000_000;
const HOUR = 3_600_000;

describe("Cloudflare Queues: a job held by its handler's rate limit", () => {
  it("is sent back after the window's wait, and runs when it opens", async () => {
    const clock = { now: START };
    const sent: { body: string; delaySeconds: number }[] = [];
    const queue = {
      send: async () => {},
      sendBatch: async (messages: Iterable<QueueSendRequest>) => {
        for (const m of messages)
          sent.push({ body: String(m.body), delaySeconds: m.delaySeconds ?? 0 });
      },
    };
    const ran: unknown[] = [];
    const handlers: Handlers = {
      report: {
        rateLimit: { limit: 1, period: "1h" },
        run: (input) => {
          ran.push(input);
          return input;
        },
      },
    };
    const engine = createEngine({
      store: new MemoryStore({ clock: () => clock.now }),
      transport: new CloudflareQueuesTransport({ queue, now: () => clock.now }),
      handlers,
      logger: silentLogger,
      tick: { recoverGraceMs: 300_000 },
    });
    await engine.broker.submit({ handler: "report", input: "first" });
    const { job: second } = await engine.broker.submit({ handler: "report", input: "second" });
    await engine.broker.settled();
    expect(sent).toHaveLength(2);

    /** Deliver `body` once; answers the queue's answer to it. */
    const deliver = async (body: string, attempts: number) => {
      let answer: { kind: "ack" } | { kind: "retry"; delaySeconds: number } | undefined;
      await consumeQueueBatch(
        {
          queue: "tickwork",
          messages: [
            {
              id: `m${attempts}`,
              body,
              attempts,
              ack: () => {
                answer = { kind: "ack" };
              },
              retry: (o) => {
                answer = { kind: "retry", delaySeconds: o?.delaySeconds ?? 0 };
              },
            },
          ],
        },
        (b) => engine.runner.runPulled(b),
      );
      return answer;
    };

    expect(await deliver(sent[0]!.body, 1)).toEqual({ kind: "ack" });
    clock.now += 1_000;
    // The window holds the second for just under an hour: it comes back then, not in seconds.
    const held = await deliver(sent[1]!.body, 1);
    expect(held?.kind).toBe("retry");
    const delaySeconds = held?.kind === "retry" ? held.delaySeconds : 0;
    expect(delaySeconds).toBeGreaterThanOrEqual(3_590);
    expect(delaySeconds).toBeLessThanOrEqual(3_600);
    clock.now += delaySeconds * 1_000;
    expect(await deliver(sent[1]!.body, 2)).toEqual({ kind: "ack" });
    expect(ran).toEqual(["first", "second"]);
    expect((await engine.store.getJob(second.id))?.status).toBe("succeeded");
    expect(clock.now - START).toBeLessThan(HOUR + 10_000);
  });
});
