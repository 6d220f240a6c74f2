/**
 * The engine on the Cloudflare Queues transport, with the queue's operations counted as Cloudflare
 * bills them (one operation per 64 KB written, read or deleted, per message; a retry is one more
 * read): the figures README's cost table shows. And the 12 h delay ceiling: a job due later is
 * kept in the outbox, not sent, and a tick after its run time publishes it.
 *
 * The queue here is a producer binding plus a consumer loop (`consumeQueueBatch`, as the Worker's
 * `queue()` runs it) in this process: the platform boundary, the only double. Delivery in workerd
 * with Miniflare's real local queue is `test/cloudflare/workerd-queues.test.ts`.
 */
import { describe, expect, it } from "vitest";
import { createEngine, type Engine, silentLogger } from "../../src/engine/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import {
  CloudflareQueuesTransport,
  consumeQueueBatch,
  DEFER_MARGIN_MS,
  MAX_DELAY_SECONDS,
  MESSAGE_OVERHEAD_BYTES,
  type QueueMessage,
  type QueueSendRequest,
} from "../../src/transport/cloudflare-queues/index.ts";

const OP_BYTES = 64_000;

/** A Queue that counts what Cloudflare bills: writes, reads and deletes, per 64 KB of a message. */
class CountingQueue {
  readonly held: { body: string; attempts: number; delaySeconds: number }[] = [];
  sendBatchCalls = 0;
  readonly ops = { write: 0, read: 0, delete: 0 };

  async send(): Promise<void> {
    throw new Error("the transport only uses sendBatch");
  }

  async sendBatch(messages: Iterable<QueueSendRequest>): Promise<void> {
    this.sendBatchCalls++;
    for (const m of messages) {
      const body = String(m.body);
      this.ops.write += units(body);
      this.held.push({ body, attempts: 0, delaySeconds: m.delaySeconds ?? 0 });
    }
  }

  get total(): number {
    return this.ops.write + this.ops.read + this.ops.delete;
  }

  /** Deliver everything held (delays not waited for) until the queue is empty. */
  async drain(engine: Engine): Promise<void> {
    while (this.held.length > 0) {
      const batch = this.held.splice(0, 100);
      const messages: QueueMessage[] = batch.map((m, i) => ({
        id: `m${i}`,
        body: m.body,
        attempts: ++m.attempts,
        ack: () => {
          this.ops.delete += units(m.body);
        },
        retry: () => {
          this.held.push(m);
        },
      }));
      for (const m of batch) this.ops.read += units(m.body);
      await consumeQueueBatch({ queue: "tickwork", messages }, (body) =>
        engine.runner.runPulled(body),
      );
    }
  }
}

function units(body: string): number {
  return Math.ceil((new TextEncoder().encode(body).byteLength + MESSAGE_OVERHEAD_BYTES) / OP_BYTES);
}

function setup(clock: () => number = Date.now) {
  const queue = new CountingQueue();
  let failures = 1;
  const engine = createEngine({
    store: new MemoryStore({ clock }),
    transport: new CloudflareQueuesTransport({ queue, now: clock }),
    handlers: {
      work: { run: (input) => input },
      flaky: {
        run: () => {
          if (failures-- > 0) throw new Error("once");
          return "ok";
        },
      },
    },
    logger: silentLogger,
    tick: { horizonMs: 60_000 },
  });
  return { queue, engine };
}

describe("Cloudflare Queues: operations per job and per idle minute", () => {
  it("a submitted job costs one sendBatch and 3 operations (write, read, delete)", async () => {
    const { queue, engine } = setup();
    const { job } = await engine.broker.submit({ handler: "work", input: { n: 1 } });
    expect(queue.sendBatchCalls).toBe(1);
    await queue.drain(engine);
    expect((await engine.store.getJob(job.id))?.status).toBe("succeeded");
    expect(queue.ops).toEqual({ write: 1, read: 1, delete: 1 });
    console.log("Queues operations, one job:", queue.total);
  });

  it("a retry adds one read; a message over 64 KB counts each 64 KB", async () => {
    const { queue, engine } = setup();
    const { job } = await engine.broker.submit({ handler: "flaky", input: null, retries: 2 });
    await queue.drain(engine);
    expect(await engine.store.getJob(job.id)).toMatchObject({ status: "succeeded", attempts: 2 });
    expect(queue.ops).toEqual({ write: 1, read: 2, delete: 1 });

    const big = setup();
    await big.engine.broker.submit({ handler: "work", input: "x".repeat(100_000) });
    await big.queue.drain(big.engine);
    expect(big.queue.ops).toEqual({ write: 2, read: 2, delete: 2 });
  });

  it("an idle minute costs no queue operation; a tick with M due costs ⌈M/100⌉ sendBatch calls and 3M operations", async () => {
    const { queue, engine } = setup();
    for (let i = 0; i < 60; i++) expect((await engine.ticker.tick()).leader).toBe(true);
    expect(queue.sendBatchCalls).toBe(0);
    expect(queue.total).toBe(0);

    const now = await engine.store.now();
    for (let i = 0; i < 3; i++) {
      const put = await engine.broker.createSchedule({
        id: `s${i}`,
        handler: "work",
        schedule: "1s",
        maxRuns: 50,
        startAt: now,
      });
      expect(put.schedule.id).toBe(`s${i}`);
    }
    const tick = await engine.ticker.tick();
    expect(tick).toMatchObject({ leader: true, dispatched: 150 });
    expect(queue.sendBatchCalls).toBe(2);
    await queue.drain(engine);
    expect(queue.total).toBe(450);
    console.log(
      "Queues: tick with 150 due:",
      queue.sendBatchCalls,
      "sendBatch,",
      queue.total,
      "ops",
    );
  });
});

describe("Cloudflare Queues: the 12 h delay ceiling", () => {
  it("keeps a job due beyond 12 h in the outbox, idle, until 12 h before its run time, then sends it delayed", async () => {
    let now = 1_800_000_000_000;
    const { queue, engine } = setup(() => now);
    const runAt = now + (MAX_DELAY_SECONDS + 3_600) * 1000;
    const { job } = await engine.broker.submit({ handler: "work", input: 1, runAt });
    expect(queue.sendBatchCalls).toBe(0);
    expect(await engine.ticker.tick()).toMatchObject({ idle: true });

    // The deferral moved its recoverAt to 12 h before runAt (plus a margin): idle until then.
    const retryAt = runAt - MAX_DELAY_SECONDS * 1000 + DEFER_MARGIN_MS;
    now = retryAt - 1;
    expect(await engine.ticker.tick()).toMatchObject({ idle: true });
    now = retryAt;
    expect(await engine.ticker.tick()).toMatchObject({ recovered: 1 });
    // Never early: it waits on the queue until its run time.
    expect(queue.held).toEqual([
      expect.objectContaining({ delaySeconds: MAX_DELAY_SECONDS - DEFER_MARGIN_MS / 1000 }),
    ]);
    await queue.drain(engine);
    expect(await engine.store.getJob(job.id)).toMatchObject({ status: "succeeded", attempts: 1 });
  });

  it("sends a job due within 12 h at once, with its delay", async () => {
    const now = 1_800_000_000_000;
    const { queue, engine } = setup(() => now);
    await engine.broker.submit({ handler: "work", input: 1, runAt: now + 3_600_500 });
    expect(queue.held).toEqual([expect.objectContaining({ delaySeconds: 3_601 })]);
  });
});

describe("Cloudflare Queues: hostile messages", () => {
  it("acks and drops what is not a job spec, storing nothing, and runs the rest of the batch", async () => {
    const { engine } = setup();
    const answers: string[] = [];
    const bodies: unknown[] = [
      "not json",
      '{"__proto__":{"polluted":true},"id":"x"}',
      { constructor: { prototype: { polluted: true } } },
      "\ud800",
      JSON.stringify({ id: "", handler: "work" }),
      "x".repeat(200_000),
      null,
    ];
    const { job } = await engine.broker.submit({ handler: "work", input: 7 });
    const messages: QueueMessage[] = [...bodies, JSON.stringify(job)].map((body, i) => ({
      id: `m${i}`,
      body,
      attempts: 1,
      ack: () => answers.push(`m${i}:ack`),
      retry: () => answers.push(`m${i}:retry`),
    }));
    const warnings: string[] = [];
    const result = await consumeQueueBatch(
      { queue: "tickwork", messages },
      (body) => engine.runner.runPulled(body),
      { logger: { warn: (msg) => warnings.push(msg) } },
    );
    expect(answers.sort()).toEqual(messages.map((m) => `${m.id}:ack`).sort());
    expect(result).toEqual({ acked: messages.length, retried: 0, deferred: 0, failed: 0 });
    expect(warnings).toHaveLength(bodies.length);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    expect(await engine.store.getJob(job.id)).toMatchObject({ status: "succeeded", result: 7 });
    expect((await engine.store.listJobs({ limit: 100 })).items).toHaveLength(1);
  });
});
