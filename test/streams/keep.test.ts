/**
 * A live handler that runs longer than `claimIdleMs` keeps its delivery: its worker claims it
 * again now and then (`PullQueue.keep`), so no worker (its own included) takes it over as a
 * stopped consumer's. Before, at `claimIdleMs` a worker's maintenance took the delivery over, and
 * the running worker's guard queued it again every second until the handler returned.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterEach, expect, it, vi } from "vitest";
import { createEngine, PullWorker, silentLogger } from "../../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import type { PulledMessage, PullQueue } from "../../src/transport/port.ts";
import { startRedisServer } from "../support/redis-server.ts";
import { REDIS_URL } from "../support/stores.ts";

const CLAIM_IDLE_MS = 1_500;
const opened: Redis[] = [];
afterEach(() => {
  for (const redis of opened.splice(0)) redis.disconnect();
});

/** A worker's queue that reports each pull: when it started, and what it answered. */
function watched(queue: RedisStreams, onPull: (startedAt: number, got: PulledMessage[]) => void) {
  return new Proxy(queue, {
    get(target, prop, receiver) {
      if (prop === "pull") {
        return async (max: number, waitMs: number) => {
          const startedAt = performance.now();
          const got = await target.pull(max, waitMs);
          onPull(startedAt, got);
          return got;
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as PullQueue;
}

it("a handler running past claimIdleMs keeps its delivery: no worker takes it over, nothing is queued again", async () => {
  const prefix = `keep-${randomUUID()}`;
  const [redisA, redisB] = [new Redis(REDIS_URL), new Redis(REDIS_URL)];
  opened.push(redisA, redisB);
  let started: (at: number) => void = () => {};
  const handlerStarted = new Promise<number>((resolve) => {
    started = resolve;
  });
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let runs = 0;
  const handlers = {
    long: {
      run: async () => {
        runs++;
        started(performance.now());
        await released;
        return "done";
      },
    },
  };
  const streams = (redis: Redis, consumer: string) =>
    new RedisStreams({
      redis,
      prefix,
      consumer,
      claimIdleMs: CLAIM_IDLE_MS,
      maintainEveryMs: 50,
    });
  const store = (redis: Redis) =>
    new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
  const streamsA = streams(redisA, "a");
  const streamsB = streams(redisB, "b");
  const a = createEngine({
    store: store(redisA),
    transport: streamsA,
    handlers,
    logger: silentLogger,
  });
  const b = createEngine({
    store: store(redisB),
    transport: streamsB,
    handlers,
    logger: silentLogger,
  });
  const { job } = await a.broker.submit({ handler: "long", timeout: "60s" });

  // Worker A runs the handler; worker B, idle, maintains the stream on every short pull, and so
  // would take over any delivery idle for claimIdleMs.
  const claimedSeen: PulledMessage[] = [];
  const wa = new PullWorker({
    runner: a.runner,
    queue: watched(streamsA, (_, got) => claimedSeen.push(...got.filter((m) => m.claimed))),
    concurrency: 1,
    idleWaitMs: 100,
  });
  await wa.start();
  const since = await handlerStarted;
  let bPulledLateEnough: () => void = () => {};
  const bLate = new Promise<void>((resolve) => {
    bPulledLateEnough = resolve;
  });
  const wb = new PullWorker({
    runner: b.runner,
    queue: watched(streamsB, (startedAt, got) => {
      claimedSeen.push(...got.filter((m) => m.claimed));
      // A pull that began two claim periods after the handler: its maintenance ran while the
      // delivery, unkept, would have been idle past claimIdleMs.
      if (startedAt >= since + 2 * CLAIM_IDLE_MS) bPulledLateEnough();
    }),
    concurrency: 1,
    idleWaitMs: 100,
  });
  await wb.start();
  await bLate;

  expect(claimedSeen).toEqual([]);
  expect(wa.stats()).toMatchObject({ deferred: 0, inFlight: 1 });
  expect(wb.stats()).toMatchObject({ pulled: 0, deferred: 0 });
  // Still A's, read once.
  const pending = (await redisA.xpending(`{${prefix}}:q`, "tickwork", "-", "+", 10)) as [
    string,
    string,
    number,
    number,
  ][];
  expect(pending.map(([, consumer, , deliveries]) => [consumer, deliveries])).toEqual([["a", 1]]);

  release();
  await expect.poll(() => a.broker.getJob(job.id).then((j) => j.status)).toBe("succeeded");
  await Promise.all([wa.stop({ deadlineMs: 2_000 }), wb.stop({ deadlineMs: 2_000 })]);
  expect(runs).toBe(1);
  expect((await a.broker.getJob(job.id)).attempts).toBe(1);
  // Nothing left on the stream: the delivery was acknowledged, not queued again.
  expect(await redisA.xlen(`{${prefix}}:q`)).toBe(0);
  expect(await redisA.zcard(`{${prefix}}:q:delayed`)).toBe(0);
}, 30_000);

it("a stopped worker's deliveries are kept no longer: another takes them over", async () => {
  const prefix = `keep-${randomUUID()}`;
  const [redisA, redisB] = [new Redis(REDIS_URL), new Redis(REDIS_URL)];
  opened.push(redisA, redisB);
  const streamsA = new RedisStreams({ redis: redisA, prefix, consumer: "a", claimIdleMs: 300 });
  const streamsB = new RedisStreams({
    redis: redisB,
    prefix,
    consumer: "b",
    claimIdleMs: 300,
    maintainEveryMs: 20,
  });
  await streamsA.open();
  await streamsA.publish([
    { id: "j1", dedupId: "j1", job: { id: "j1" } as never, notBefore: 0, recoverAt: 0 },
  ]);
  const [delivery] = await streamsA.pull(1, 100);
  expect(delivery?.claimed).toBe(false);
  // Kept while A works on it ...
  await streamsA.keep([delivery!.id]);
  // ... but B, for which it is someone else's, never takes it with keep.
  await streamsB.keep([delivery!.id]);
  const owner = async () =>
    (
      (await redisA.xpending(`{${prefix}}:q`, "tickwork", "-", "+", 10)) as [string, string][]
    )[0]?.[1];
  expect(await owner()).toBe("a");
  // A stops keeping it (stopped, killed): B takes it over once it is idle for claimIdleMs.
  await expect
    .poll(async () => (await streamsB.pull(1, 50)).map((m) => [m.id, m.claimed]), {
      timeout: 10_000,
      interval: 50,
    })
    .toEqual([[delivery!.id, true]]);
  expect(await owner()).toBe("b");
  // A keeps it no more: its keep leaves B's delivery alone.
  await streamsA.keep([delivery!.id]);
  expect(await owner()).toBe("b");
});

it("a worker's blocking-read connection reports no unhandled error while Redis is down", async () => {
  const server = await startRedisServer();
  const redis = new Redis(server.url, { maxRetriesPerRequest: 1, retryStrategy: () => 20 });
  opened.push(redis);
  let errors = 0;
  redis.on("error", () => errors++);
  const streams = new RedisStreams({ redis, prefix: "down" });
  await streams.open();
  const printed: string[] = [];
  const spy = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => {
    printed.push(args.map(String).join(" "));
  });
  let stopped = false;
  try {
    // A blocking read holds the reader's own connection when Redis goes away.
    const reading = streams.pull(1, 60_000).catch(() => []);
    await expect
      .poll(async () => String(await redis.client("LIST")).match(/xreadgroup/i)?.length ?? 0)
      .toBeGreaterThan(0);
    await server.stop();
    stopped = true;
    // Both connections retry every 20 ms: once the shared one has failed a few times, so has
    // the reader's.
    await expect.poll(() => errors, { timeout: 10_000 }).toBeGreaterThanOrEqual(5);
    streams.interrupt();
    await reading;
    expect(printed.filter((line) => line.includes("Unhandled error event"))).toEqual([]);
  } finally {
    spy.mockRestore();
    if (!stopped) await server.stop();
  }
});

it("a stopped consumer's delivery is taken over behind any number of kept ones", async () => {
  const prefix = `keep-${randomUUID()}`;
  const redis = new Redis(REDIS_URL);
  opened.push(redis);
  const make = (consumer: string) =>
    new RedisStreams({ redis, prefix, consumer, claimIdleMs: 300, maintainEveryMs: 20 });
  const [long, dead, taker] = [make("long"), make("dead"), make("taker")];
  await long.open();
  await long.publish(
    Array.from({ length: 13 }, (_, i) => ({
      id: `j${i}`,
      dedupId: `j${i}`,
      job: { id: `j${i}` } as never,
      notBefore: 0,
      recoverAt: 0,
    })),
  );
  // Twelve live deliveries at the head of the pending list, the thirteenth a stopped consumer's.
  const held = await long.pull(12, 100);
  expect(held).toHaveLength(12);
  const [lost] = await dead.pull(1, 100);
  const idleOf = async (id: string) =>
    (
      (await redis.xpending(`{${prefix}}:q`, "tickwork", id, id, 1)) as [string, string, number][]
    )[0]?.[2] ?? 0;
  await expect
    .poll(() => idleOf(lost!.id), { timeout: 10_000, interval: 50 })
    .toBeGreaterThanOrEqual(300);
  await long.keep(held.map((m) => m.id));
  // A taker with one free slot: before, its takeover looked at the first ten pending entries
  // only (XAUTOCLAIM COUNT 1 from the head), all of them kept, and never reached the lost one.
  const taken = await taker.pull(1, 50);
  expect(taken.map((m) => [m.id, m.claimed])).toEqual([[lost!.id, true]]);
});
