/**
 * The Redis Streams transport end to end on a real Redis: submit (dispatched inside the submit's
 * script) → `PullWorker` (XREADGROUP) → runner → ack; delays, retries with backoff, dead letters,
 * a busy job deferred, a stopped consumer's deliveries taken over, and what the queue reports.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { NonRetryableError } from "../../src/core/errors.ts";
import { defineHandlers } from "../../src/engine/handlers.ts";
import {
  createEngine,
  type Engine,
  type Handlers,
  PullWorker,
  silentLogger,
} from "../../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { REDIS_URL } from "../support/stores.ts";

const clients: Redis[] = [];
afterAll(async () => {
  for (const c of clients) c.disconnect();
});

interface Rig {
  engine: Engine;
  streams: RedisStreams;
  worker: PullWorker;
  prefix: string;
  redis: Redis;
}
const rigs: Rig[] = [];
afterEach(async () => {
  for (const rig of rigs.splice(0)) {
    await rig.worker.stop({ deadlineMs: 1_000 });
    await rig.streams.close();
  }
});

/** Resolves once `check` holds, re-checking after each event of `tick` (here: every 20 ms). */
async function until(check: () => Promise<boolean> | boolean, what: string, ms = 20_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function rig(
  handlers: Handlers,
  opts: { prefix?: string; concurrency?: number; claimIdleMs?: number; start?: boolean } = {},
) {
  const redis = new Redis(REDIS_URL);
  clients.push(redis);
  const prefix = opts.prefix ?? `streams-${randomUUID()}`;
  const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
  const streams = new RedisStreams({
    redis,
    prefix,
    backoff: () => 50,
    claimIdleMs: opts.claimIdleMs ?? 30_000,
    maintainEveryMs: 100,
  });
  const engine: Engine = createEngine({
    store,
    transport: streams,
    handlers,
    logger: silentLogger,
  });
  const worker = new PullWorker({
    runner: engine.runner,
    queue: streams,
    concurrency: opts.concurrency ?? 8,
    idleWaitMs: 1_000,
  });
  const r = { engine, streams, worker, prefix, redis };
  rigs.push(r);
  return r;
}

describe("Redis Streams transport", () => {
  it("runs submitted jobs once each; the submit publishes nothing and the stream ends empty", async () => {
    const seen = new Map<number, number>();
    const { engine, worker, streams } = rig(
      defineHandlers({
        count: {
          run: async (input: unknown) => {
            const n = (input as { n: number }).n;
            seen.set(n, (seen.get(n) ?? 0) + 1);
            return n;
          },
        },
      }),
    );
    const ids: string[] = [];
    for (let n = 0; n < 200; n++) {
      const { job } = await engine.broker.submit({ handler: "count", input: { n } });
      ids.push(job.id);
    }
    expect((await streams.stats()).length).toBe(200);
    await worker.start();
    await until(async () => (await engine.stats()).totals.succeeded === 200, "200 succeeded");
    expect([...seen.values()].every((v) => v === 1)).toBe(true);
    expect(seen.size).toBe(200);
    const job = await engine.broker.getJob(ids[7] as string);
    expect(job).toMatchObject({ status: "succeeded", result: 7, attempts: 1 });
    await until(async () => (await streams.stats()).length === 0, "stream drained");
    expect(await streams.stats()).toMatchObject({ length: 0, pending: 0, delayed: 0 });
  });

  it("holds a delayed job until its time, then runs it", async () => {
    let ranAt = 0;
    const { engine, worker, streams } = rig(
      defineHandlers({
        later: {
          run: async () => {
            ranAt = Date.now();
          },
        },
      }),
    );
    await worker.start();
    const { job } = await engine.broker.submit({ handler: "later", delay: 700 });
    expect((await streams.stats()).delayed).toBe(1);
    await until(async () => (await engine.broker.getJob(job.id)).status === "succeeded", "run");
    expect(ranAt).toBeGreaterThanOrEqual(job.runAt - 50);
  });

  it("retries a failing attempt after its backoff, then dead-letters it with retries spent", async () => {
    let calls = 0;
    const { engine, worker } = rig(
      defineHandlers({
        flaky: {
          run: async () => {
            calls++;
            throw new Error("boom");
          },
        },
      }),
    );
    await worker.start();
    const { job } = await engine.broker.submit({ handler: "flaky", retries: 2 });
    await until(async () => (await engine.broker.getJob(job.id)).status === "dead", "dead");
    expect(calls).toBe(3);
    const dead = await engine.broker.listDead({ limit: 10 });
    expect(dead.items.map((j) => j.id)).toContain(job.id);
    // A dead letter retried from the list runs again through the stream (the outbox path).
    await engine.broker.retryDead(job.id);
    await until(async () => calls === 6, "three more attempts");
  });

  it("a NonRetryableError ends the job at once", async () => {
    let calls = 0;
    const { engine, worker } = rig(
      defineHandlers({
        never: {
          run: async () => {
            calls++;
            throw new NonRetryableError("no");
          },
        },
      }),
    );
    await worker.start();
    const { job } = await engine.broker.submit({ handler: "never", retries: 5 });
    await until(async () => (await engine.broker.getJob(job.id)).status === "dead", "dead");
    expect(calls).toBe(1);
  });

  it("a stopped consumer's delivery is taken over and its job runs once its lease lapsed", async () => {
    const prefix = `streams-${randomUUID()}`;
    let runs = 0;
    const handlers = defineHandlers({ once: { run: async () => void runs++ } });
    // The first consumer reads the delivery and dies before running it (never answers).
    const dead = rig(handlers, { prefix });
    const { job } = await dead.engine.broker.submit({ handler: "once" });
    await dead.streams.open();
    const taken = await dead.streams.pull(1, 100);
    expect(taken).toHaveLength(1);
    await dead.streams.close();
    // Another process takes it over once it has been idle claimIdleMs.
    const live = rig(handlers, { prefix, claimIdleMs: 200 });
    await live.worker.start();
    await until(
      async () => (await live.engine.broker.getJob(job.id)).status === "succeeded",
      "run",
    );
    expect(runs).toBe(1);
    expect((await live.streams.stats()).claimed).toBeGreaterThanOrEqual(1);
  });

  it("a job whose attempts keep dying mid-handler is dead past its last attempt, not run again", async () => {
    let runs = 0;
    const { engine, worker, streams } = rig(
      defineHandlers({ crashy: { run: async () => void runs++ } }),
    );
    const { job } = await engine.broker.submit({ handler: "crashy", retries: 1 });
    // Two attempts begin and never finish (their workers died): leases of 1 ms lapse at once.
    const spec = { ...job, input: job.input ?? null };
    for (let attempt = 1; attempt <= 2; attempt++) {
      await until(
        async () => (await engine.store.beginRun(spec, 1)).kind === "run",
        `attempt ${attempt} begun`,
      );
    }
    // The delivery still on the stream is the third attempt: past retries + 1, so it is dead.
    await worker.start();
    await until(async () => (await engine.broker.getJob(job.id)).status === "dead", "dead");
    const dead = await engine.broker.getJob(job.id);
    expect(dead.error).toMatchObject({ name: "DeliveryFailed" });
    expect(dead.attempts).toBe(3);
    expect(runs).toBe(0);
    await until(async () => (await streams.stats()).length === 0, "acknowledged");
  });

  it("a worker without the job's handler hands it back; a worker with it runs it (a rolling deploy)", {
    timeout: 90_000,
  }, async () => {
    // The older version: no `report.v2`. The newer one submits it and has it.
    const older = rig(defineHandlers({ count: { run: async () => 1 } }));
    let ran = 0;
    const newer = rig(defineHandlers({ "report.v2": { run: async () => void ran++ } }), {
      prefix: older.prefix,
    });
    await older.worker.start();
    const { job } = await newer.engine.broker.submit({ handler: "report.v2", retries: 0 });
    // The older worker pulled it and handed it back, not as an attempt: it waits, queued.
    await until(async () => (await older.streams.stats()).delayed === 1, "handed back");
    expect(await newer.engine.broker.getJob(job.id)).toMatchObject({
      status: "queued",
      attempts: 0,
    });
    await newer.worker.start();
    await until(
      async () => (await newer.engine.broker.getJob(job.id)).status === "succeeded",
      "run by the newer worker",
      // Handed back for about a second (a pulled delivery's recheck), then due for any worker.
      60_000,
    );
    expect(ran).toBe(1);
    expect(await newer.engine.broker.getJob(job.id)).toMatchObject({ attempts: 1 });
  });

  it("refuses pushed deliveries: verify is false for any request", async () => {
    const { streams } = rig(defineHandlers({}));
    expect(await streams.verify()).toBe(false);
  });
});

describe("Redis Streams transport, recovery", () => {
  it("a worker whose stream and group were deleted makes them again and keeps running jobs", async () => {
    let runs = 0;
    const { engine, worker, streams, redis, prefix } = rig(
      defineHandlers({ count: { run: async () => void runs++ } }),
    );
    await worker.start();
    await engine.broker.submit({ handler: "count" });
    await until(() => runs === 1, "first job");
    // Everything under the prefix goes (a FLUSHDB, say): the group with it.
    const keys = await redis.keys(`{${prefix}}*`);
    if (keys.length > 0) await redis.del(...keys);
    await engine.broker.submit({ handler: "count" });
    await until(() => runs === 2, "a job after the group was deleted");
    expect((await streams.stats()).consumers).toBe(1);
  });
});
