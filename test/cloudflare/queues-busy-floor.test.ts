/**
 * On Cloudflare Queues a job waiting behind a handler's concurrency limit is sent back with the
 * busy floor, and each `limited` answer moves its outbox watch to `now + wait + reapAfterMs`. A
 * floor longer than that (it grew to 12 h) brings the message back after the watch is due: the
 * reaper re-dispatched a job that was only waiting, again and again, each copy billed on every
 * delivery. Memory store with a fake clock; the queue is a double of Queues' per-message delays.
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
const MIN = 60_000;

describe("Cloudflare Queues: a job behind a long-held concurrency limit", () => {
  it("is never re-dispatched by the reaper nor dead-lettered while it only waits", async () => {
    const clock = { now: START };
    type Pending = { jobId: string; body: string; due: number; attempts: number };
    const inQueue: Pending[] = [];
    const bodies = new Map<string, string>();
    let publishesOfB = 0;
    let bId = "";
    const queue = {
      send: async () => {},
      sendBatch: async (messages: Iterable<QueueSendRequest>) => {
        for (const m of messages) {
          const body = String(m.body);
          const jobId = (JSON.parse(body) as { id: string }).id;
          bodies.set(jobId, body);
          if (jobId === bId) {
            publishesOfB++;
            inQueue.push({
              jobId,
              body,
              due: clock.now + (m.delaySeconds ?? 0) * 1000,
              attempts: 1,
            });
          }
        }
      },
    };
    const gates: (() => void)[] = [];
    /** Resolved when the next filler's handler has started (it holds the limit's one slot). */
    let fillerStarted: () => void = () => {};
    const handlers: Handlers = {
      api: {
        concurrency: 1,
        timeout: "15m",
        run: async (input) => {
          if (input === "B") return "B ran";
          await new Promise<void>((resolve) => {
            gates.push(resolve);
            fillerStarted();
          });
          return input;
        },
      },
    };
    const engine = createEngine({
      store: new MemoryStore({ clock: () => clock.now }),
      transport: new CloudflareQueuesTransport({ queue, now: () => clock.now }),
      handlers,
      logger: silentLogger,
      // What createTickwork sets on Queues.
      tick: { recoverGraceMs: 300_000 },
    });

    // A backlog of jobs ahead of B keeps the slot busy: each runs 10 minutes, the next one takes
    // the slot as the previous one finishes (they were queued first).
    let filler = 0;
    let holder: { run: Promise<unknown>; endsAt: number } | undefined;
    const startFiller = async () => {
      const { job } = await engine.broker.submit({ handler: "api", input: `f${filler++}` });
      const started = new Promise<void>((resolve) => {
        fillerStarted = resolve;
      });
      const run = engine.runner.runPulled(bodies.get(job.id)!);
      await started;
      holder = { run, endsAt: clock.now + 10 * MIN };
    };
    await startFiller();
    bId = "pending";
    const b = await engine.broker.submit({ handler: "api", input: "B" });
    bId = b.job.id;
    // B's first message (published before bId was known).
    inQueue.push({ jobId: bId, body: bodies.get(bId)!, due: clock.now, attempts: 1 });

    const HOURS = 30;
    let reDispatched = 0;
    for (let minute = 0; minute < HOURS * 60; minute++) {
      clock.now = START + minute * MIN;
      if (holder && clock.now >= holder.endsAt) {
        gates.shift()?.();
        await holder.run;
        await startFiller();
      }
      const before = publishesOfB;
      await engine.ticker.tick();
      reDispatched += publishesOfB - before;
      for (const m of inQueue.filter((p) => p.due <= clock.now)) {
        inQueue.splice(inQueue.indexOf(m), 1);
        await consumeQueueBatch(
          {
            queue: "tickwork",
            messages: [
              {
                id: `${m.jobId}:${m.attempts}`,
                body: m.body,
                attempts: m.attempts,
                ack: () => {},
                retry: (o) =>
                  inQueue.push({
                    ...m,
                    attempts: m.attempts + 1,
                    due: clock.now + (o?.delaySeconds ?? 0) * 1000,
                  }),
              },
            ],
          },
          (body) => engine.runner.runPulled(body),
        );
      }
      const job = await engine.store.getJob(bId);
      if (job?.status === "dead") break;
    }
    const job = await engine.store.getJob(bId);
    expect(job?.status).toBe("queued");
    expect(reDispatched).toBe(0);
    for (const g of gates) g();
  }, 120_000);
});
