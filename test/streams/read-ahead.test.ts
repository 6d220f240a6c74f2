/**
 * The `PullWorker`'s read-ahead on a real Redis: once deliveries show that slots free quickly, it
 * pulls up to `readAhead` more than it has free slots and starts them as slots free; one held
 * ahead past `readAheadHoldMs` goes back to the queue for another worker, and so does every one
 * still held ahead when the worker stops.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine, PullWorker, silentLogger } from "../../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { REDIS_URL } from "../support/stores.ts";

const redis = new Redis(REDIS_URL);
afterAll(() => redis.disconnect());

/** Resolves once `check()` holds, looking again after each round trip to Redis. */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await redis.ping();
}

/** A worker of its own (engine, consumer) on a shared store; `ran` lists the jobs it ran. */
function rig(store: RedisStore, prefix: string, gate: Promise<void>) {
  const streams = new RedisStreams({ redis, prefix });
  const ran: string[] = [];
  let running = 0;
  let peak = 0;
  const engine = createEngine({
    store,
    transport: streams,
    handlers: {
      fast: { run: async (_input, ctx) => void ran.push(ctx.jobId) },
      held: {
        run: async (_input, ctx) => {
          ran.push(ctx.jobId);
          running++;
          peak = Math.max(peak, running);
          await gate;
          running--;
        },
      },
    },
    logger: silentLogger,
  });
  return { streams, engine, ran, peak: () => peak };
}

function gated() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { gate, open };
}

/**
 * Two workers on one queue: the first (1 slot, `readAhead` 2) runs three quick jobs, then a held
 * one that keeps its slot until `open()`, and holds the two jobs after it ahead; the second
 * (not started) runs what comes back.
 */
async function oneSlotTaken(readAheadHoldMs: number) {
  const prefix = `ahead-${randomUUID()}`;
  const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
  const { gate, open } = gated();
  const a = rig(store, prefix, gate);
  const b = rig(store, prefix, Promise.resolve());
  for (let n = 0; n < 3; n++) await a.engine.broker.submit({ handler: "fast", input: { n } });
  const blocker = (await a.engine.broker.submit({ handler: "held", input: {} })).job;
  const later: string[] = [];
  for (let n = 0; n < 2; n++) {
    later.push((await a.engine.broker.submit({ handler: "fast", input: { later: n } })).job.id);
  }
  const first = new PullWorker({
    runner: a.engine.runner,
    queue: a.streams,
    concurrency: 1,
    readAhead: 2,
    readAheadHoldMs,
  });
  const second = new PullWorker({ runner: b.engine.runner, queue: b.streams, concurrency: 4 });
  await first.start();
  // The blocker holds the only slot; the two later ones wait ahead of it.
  await until(() => first.stats().waiting === 2 && a.ran.includes(blocker.id));
  const close = async () => {
    open();
    await first.stop({ deadlineMs: 1_000 });
    await second.stop({ deadlineMs: 1_000 });
    await a.streams.close();
    await b.streams.close();
  };
  return { a, b, first, second, later, open, close };
}

describe("PullWorker read-ahead", () => {
  it("pulls up to readAhead more than its free slots once slots free quickly, and runs them as slots free", async () => {
    const prefix = `ahead-${randomUUID()}`;
    const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
    const { gate, open } = gated();
    const a = rig(store, prefix, gate);
    await a.engine.broker.submit({ handler: "fast", input: {} });
    for (let n = 0; n < 8; n++) await a.engine.broker.submit({ handler: "held", input: { n } });
    const worker = new PullWorker({
      runner: a.engine.runner,
      queue: a.streams,
      concurrency: 2,
      readAhead: 3,
      // A long hold: nothing is handed back while this test looks.
      readAheadHoldMs: 300_000,
    });
    await worker.start();
    try {
      // The fast one freed its slot at once: two held handlers run, three wait ahead of a slot.
      await until(() => worker.stats().waiting === 3 && a.peak() === 2);
      await redis.ping();
      expect(worker.stats()).toMatchObject({ pulled: 6, waiting: 3, handedBack: 0 });
      open();
      await until(async () => (await a.engine.stats()).totals.succeeded === 9);
      // The worker acknowledges after the store records the success (acks go in batches).
      await until(() => worker.stats().acked === 9);
      expect(a.peak()).toBe(2);
      expect(worker.stats()).toMatchObject({ pulled: 9, acked: 9, waiting: 0, failed: 0 });
    } finally {
      open();
      await worker.stop({ deadlineMs: 1_000 });
      await a.streams.close();
    }
  });

  it("hands back what it held ahead too long to another worker, and pauses reading ahead", async () => {
    const { a, b, first, second, later, open, close } = await oneSlotTaken(3_000);
    try {
      await second.start();
      // Past the hold they go back to the stream, and the second worker runs them.
      await until(() => first.stats().handedBack === 2);
      await until(() => b.ran.length === 2);
      // Read-ahead is paused now: the first worker holds nothing ahead while its slot is taken.
      expect(first.stats().waiting).toBe(0);
      expect(a.ran).not.toContain(later[0]);
      expect(a.ran).not.toContain(later[1]);
      expect(b.ran.sort()).toEqual([...later].sort());
      const stopping = first.stop({ deadlineMs: 10_000 });
      open();
      expect(await stopping).toEqual({ left: 0 });
      await until(async () => (await a.engine.stats()).totals.succeeded === 6);
      expect(a.ran.length + b.ran.length).toBe(6); // nothing ran twice
    } finally {
      await close();
    }
  });

  it("hands back what it holds ahead when it stops", async () => {
    const { a, b, first, second, later, open, close } = await oneSlotTaken(300_000);
    try {
      // Stopping waits for the blocker, but gives back the two waiting ones at once.
      const stopping = first.stop({ deadlineMs: 10_000 });
      await until(() => first.stats().handedBack === 2);
      await second.start();
      await until(() => b.ran.length === 2);
      expect(b.ran.sort()).toEqual([...later].sort());
      expect(a.ran).toHaveLength(4);
      open();
      expect(await stopping).toEqual({ left: 0 });
      await until(async () => (await a.engine.stats()).totals.succeeded === 6);
    } finally {
      await close();
    }
  });
});
