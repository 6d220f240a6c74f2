/**
 * Regression: the wake-up of a delayed delivery is read by one consumer only. A worker that stops
 * gracefully before the delivery is due hands the next delayed time over (a new wake-up), so
 * another worker runs the job on time instead of when its idle read times out.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { expect, it } from "vitest";
import { createEngine, PullWorker, silentLogger } from "../../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { REDIS_URL } from "../support/stores.ts";

const IDLE_WAIT_MS = 6_000;

it("a worker that stops hands the next delayed time over: the job runs on time on another worker", async () => {
  const prefix = `repro-${randomUUID()}`;
  let ranAt = 0;
  const handlers = {
    work: {
      run: async () => {
        ranAt = Date.now();
      },
    },
  };
  const rig = (name: string) => {
    const redis = new Redis(REDIS_URL, { connectionName: `${prefix}-${name}` });
    const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
    const streams = new RedisStreams({ redis, prefix, consumer: name });
    const engine = createEngine({ store, transport: streams, handlers, logger: silentLogger });
    const worker = new PullWorker({
      runner: engine.runner,
      queue: streams,
      idleWaitMs: IDLE_WAIT_MS,
    });
    return { redis, store, streams, engine, worker };
  };
  const a = rig("a");
  const b = rig("b");
  await a.worker.start();
  const root = `{${prefix}}`;
  const client = (name: string) => async () => {
    const list = (await a.redis.call("CLIENT", "LIST")) as string;
    return list
      .split("\n")
      .filter((l) => l.includes("cmd=xreadgroup") && l.includes(`name=${prefix}-${name} `)).length;
  };
  // Both idle, blocked on the stream (A first, so Redis hands A the next entry).
  while ((await client("a")()) < 1) await new Promise((r) => setTimeout(r, 10));
  await b.worker.start();
  while ((await client("b")()) < 1) await new Promise((r) => setTimeout(r, 10));
  const { job } = await a.engine.broker.submit({ handler: "work", delay: 300 });
  // A reads the wake-up (and acknowledges it: the stream is empty again) ...
  while ((await a.redis.xlen(`${root}:q`)) > 0) await new Promise((r) => setTimeout(r, 5));
  // ... and stops before the job is due (a scale-down, a deploy).
  await a.worker.stop({ deadlineMs: 1_000 });
  await a.streams.close(); // as `tickwork start` shuts down
  while (ranAt === 0 && Date.now() < job.runAt + IDLE_WAIT_MS + 2_000)
    await new Promise((r) => setTimeout(r, 20));
  const lateMs = ranAt - job.runAt;
  console.log({ lateMs });
  await b.worker.stop({ deadlineMs: 1_000 });
  a.redis.disconnect();
  b.redis.disconnect();
  expect(ranAt).toBeGreaterThan(0);
  expect(lateMs).toBeLessThan(1_500);
}, 20_000);
