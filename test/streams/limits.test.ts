/**
 * A handler's `concurrency` end to end on Redis Streams: two worker processes (two `PullWorker`s
 * with their own connections and consumers, 8 slots each) drain 20 jobs of a handler with
 * `concurrency: 2`. Never more than 2 run at once across both, all 20 succeed on their first
 * attempt (a delivery held back by the limit is deferred, not retried), and the store counted the
 * deliveries it held back. A rate limit alone parks a held delivery for its window's wait.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine, type Engine, PullWorker, silentLogger } from "../../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { REDIS_URL } from "../support/stores.ts";

const clients: Redis[] = [];
afterAll(() => {
  for (const c of clients) c.disconnect();
});

/** Resolves once `check` holds (re-checked every 20 ms), or fails naming `what`. */
async function until(check: () => Promise<boolean> | boolean, what: string, ms = 30_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("Redis Streams transport with a concurrency limit", () => {
  it("20 jobs of a handler with concurrency 2 on two workers: at most 2 at once, all succeed", async () => {
    const prefix = `streams-limit-${randomUUID()}`;
    let active = 0;
    let peak = 0;
    const ran = new Map<string, number>();
    const handlers = {
      report: {
        concurrency: 2,
        run: async (_: unknown, ctx: { jobId: string }) => {
          active++;
          peak = Math.max(peak, active);
          ran.set(ctx.jobId, (ran.get(ctx.jobId) ?? 0) + 1);
          // The work: long enough that the other deliveries pile up against the limit.
          await new Promise((r) => setTimeout(r, 40));
          active--;
          return ctx.jobId;
        },
      },
    };

    /** One worker process: its own connection, store, queue consumer and engine. */
    function node(): { engine: Engine; streams: RedisStreams; worker: PullWorker } {
      const redis = new Redis(REDIS_URL);
      clients.push(redis);
      const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
      const streams = new RedisStreams({ redis, prefix, backoff: () => 50, maintainEveryMs: 100 });
      const engine = createEngine({ store, transport: streams, handlers, logger: silentLogger });
      const worker = new PullWorker({
        runner: engine.runner,
        queue: streams,
        concurrency: 8,
        idleWaitMs: 1_000,
      });
      return { engine, streams, worker };
    }
    const nodes = [node(), node()];
    const [first] = nodes as [ReturnType<typeof node>];
    try {
      const ids: string[] = [];
      for (let n = 0; n < 20; n++) {
        ids.push((await first.engine.broker.submit({ handler: "report", input: { n } })).job.id);
      }
      for (const { worker } of nodes) await worker.start();
      await until(
        async () => (await first.engine.stats()).totals.succeeded === 20,
        "all 20 jobs to succeed",
      );

      expect(peak).toBe(2); // the limit was reached, and never passed
      expect([...ran.values()]).toEqual(Array(20).fill(1));
      for (const id of ids) {
        expect(await first.engine.broker.getJob(id)).toMatchObject({
          status: "succeeded",
          attempts: 1,
        });
      }
      const totals = (await first.engine.stats()).totals;
      expect(totals.started).toBe(20);
      expect(totals.failed).toBe(0);
      expect(totals.limited).toBeGreaterThan(0);
      const deferred = nodes.reduce((sum, n) => sum + n.worker.stats().deferred, 0);
      const retried = nodes.reduce((sum, n) => sum + n.worker.stats().retried, 0);
      expect(deferred).toBe(totals.limited);
      expect(retried).toBe(0);
      await until(async () => (await first.streams.stats()).length === 0, "the stream drained");
    } finally {
      for (const { worker, streams } of nodes) {
        await worker.stop({ deadlineMs: 1_000 });
        await streams.close();
      }
      const redis = clients[0] as Redis;
      const keys = await redis.keys(`{${prefix}}*`);
      if (keys.length > 0) await redis.del(...keys);
    }
  }, 60_000);

  it("a rate limit alone: a held delivery is parked for its window's wait, not re-read every second", async () => {
    const prefix = `streams-rate-${randomUUID()}`;
    const redis = new Redis(REDIS_URL);
    clients.push(redis);
    const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
    const streams = new RedisStreams({ redis, prefix, maintainEveryMs: 100 });
    const handlers = { hourly: { rateLimit: { limit: 1, period: "1h" }, run: () => "ran" } };
    const engine = createEngine({ store, transport: streams, handlers, logger: silentLogger });
    const worker = new PullWorker({ runner: engine.runner, queue: streams, idleWaitMs: 1_000 });
    try {
      const first = (await engine.broker.submit({ handler: "hourly" })).job.id;
      const second = (await engine.broker.submit({ handler: "hourly" })).job.id;
      await worker.start();
      await until(() => worker.stats().deferred === 1, "the second to be held back");
      const before = Date.now();
      expect((await engine.stats()).totals).toMatchObject({ succeeded: 1, limited: 1 });
      expect(await engine.broker.getJob(first)).toMatchObject({ status: "succeeded" });
      expect(await engine.broker.getJob(second)).toMatchObject({ status: "queued", attempts: 0 });
      // Parked until its window lets it begin, about an hour from now.
      const [delayed] = await redis.keys(`{${prefix}}*:delayed`);
      if (!delayed) throw new Error("no delayed set");
      const entries = await redis.zrange(delayed, 0, -1, "WITHSCORES");
      expect(entries).toHaveLength(2);
      expect(entries[0]).toContain(second);
      const due = Number(entries[1]);
      expect(due - before).toBeGreaterThan(3_500_000);
      expect(due - before).toBeLessThanOrEqual(3_600_000);
    } finally {
      await worker.stop({ deadlineMs: 1_000 });
      await streams.close();
      const keys = await redis.keys(`{${prefix}}*`);
      if (keys.length > 0) await redis.del(...keys);
    }
  });
});
