/**
 * Regression: beginRun's answer arrives after more than leaseGraceMs (but less than the lease).
 * The handler's time counts from when begin-run was asked, so its abort comes a full grace before
 * the lease lapses; before, it got its full timeout from its own start, ran past the lease, and a
 * second delivery began a new attempt while the first handler still ran.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { expect, it } from "vitest";
import { createEngine, PullWorker, silentLogger } from "../../src/engine/index.ts";
import type { Store } from "../../src/store/port.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { REDIS_URL } from "../support/stores.ts";

it("a beginRun answer arriving late shortens the handler's time: no second attempt starts while it still runs", async () => {
  const prefix = `repro-${randomUUID()}`;
  const redis = new Redis(REDIS_URL);
  const real = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
  let slowOnce = true;
  // The first beginRun is applied at once; its answer takes 600 ms (a stalled process or network).
  const slow = new Proxy(real, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop === "beginRun") {
        return async (...args: Parameters<Store["beginRun"]>) => {
          const r = await target.beginRun(...args);
          if (slowOnce) {
            slowOnce = false;
            await new Promise((res) => setTimeout(res, 600));
          }
          return r;
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const running = new Map<number, { start: number; end?: number }>();
  const handlers = {
    work: {
      run: (_input: unknown, ctx: { attempt: number; signal: AbortSignal }) =>
        new Promise((resolve, reject) => {
          const run: { start: number; end?: number } = { start: performance.now() };
          running.set(ctx.attempt, run);
          const t = setTimeout(() => {
            run.end = performance.now();
            resolve("ok");
          }, 900);
          ctx.signal.addEventListener("abort", () => {
            clearTimeout(t);
            run.end = performance.now();
            reject(ctx.signal.reason);
          });
        }),
    },
  };
  const opts = { logger: silentLogger, leaseGraceMs: 100 };
  const streamsA = new RedisStreams({ redis, prefix, consumer: "a" });
  const a = createEngine({ ...opts, store: slow, transport: streamsA, handlers });
  const redisB = new Redis(REDIS_URL);
  const storeB = new RedisStore({ client: fromIoredis(redisB), prefix, dispatch: "streams" });
  const streamsB = new RedisStreams({ redis: redisB, prefix, consumer: "b", maintainEveryMs: 50 });
  const b = createEngine({ ...opts, store: storeB, transport: streamsB, handlers });
  const { job } = await a.broker.submit({ handler: "work", timeout: 1_000 });
  const wa = new PullWorker({ runner: a.runner, queue: streamsA, concurrency: 1, idleWaitMs: 200 });
  await wa.start();
  // Attempt 1 began on A (lease 1.1 s); A's handler starts ~600 ms later and runs 900 ms.
  while (!running.has(1)) await new Promise((r) => setTimeout(r, 10));
  // A second delivery of the job (a duplicate publish, a tick's recovery) reaches B.
  const record = (await storeB.getJob(job.id))!;
  const { status: _s, attempts: _a, startedAt: _t, ...spec } = record;
  await streamsB.publish([{ id: job.id, dedupId: job.id, job: spec, notBefore: 0, recoverAt: 0 }]);
  const wb = new PullWorker({ runner: b.runner, queue: streamsB, concurrency: 1, idleWaitMs: 200 });
  await wb.start();
  const deadline = Date.now() + 5_000;
  while (!(running.get(1)?.end && running.get(2)?.end) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 20));
  await wa.stop({ deadlineMs: 2_000 });
  await wb.stop({ deadlineMs: 2_000 });
  const [r1, r2] = [running.get(1), running.get(2)];
  console.log({ r1, r2, final: await storeB.getJob(job.id) });
  redis.disconnect();
  redisB.disconnect();
  expect(
    r2 === undefined || (r1?.end ?? Infinity) <= r2.start,
    "attempt 2 began while attempt 1 still ran",
  ).toBe(true);
});
