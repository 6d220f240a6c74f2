/**
 * ioredis 6 (npm's `latest` since 6.0.0, installed here as `ioredis6`) speaks RESP3 by default,
 * and XREADGROUP's reply then arrives as a flat `[stream, entries]`: a Streams worker took the
 * stream's name for an entry and failed every pull (jobs stayed queued), and a store's wait for
 * events woke on nothing. Both replies are now read in either shape (src/store/redis/read-reply.ts):
 * on RESP3 and on RESP2 the whole path (submit, pull, run, acknowledge, stats) works as on
 * ioredis 5, with writes coalesced as `tickwork start` coalesces them; tickwork's own
 * connections ask for RESP2.
 */
import { randomUUID } from "node:crypto";
import { Command as Command6, Redis as Redis6 } from "ioredis6";
import { afterAll, describe, expect, it } from "vitest";
import { coalesceWrites } from "../../src/adapter/node/coalesce.ts";
import { connectIoredis } from "../../src/adapter/node/ioredis.ts";
import { defineHandlers } from "../../src/engine/handlers.ts";
import { createEngine, PullWorker, silentLogger } from "../../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { sendsCommandsDirectly } from "../../src/store/redis/script.ts";
import { newJob } from "../support/redis-store-fixtures.ts";
import { REDIS_URL } from "../support/stores.ts";

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe.each([
  ["RESP3 (its default)", {}],
  ["RESP2", { protocol: 2 as const }],
])("ioredis 6 on %s", (_, options) => {
  it.each([
    ["its command methods", false],
    ["commands built with its Command class, as tickwork start sends them", true],
  ])("a Streams deployment runs every job once and drains its stream (%s)", async (_, direct) => {
    const redis = coalesceWrites(new Redis6(REDIS_URL, options));
    if (direct) sendsCommandsDirectly(redis, Command6);
    cleanups.push(() => redis.disconnect());
    const prefix = `v6-${randomUUID()}`;
    const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
    const streams = new RedisStreams({ redis, prefix, maintainEveryMs: 100 });
    const seen = new Map<number, number>();
    const engine = createEngine({
      store,
      transport: streams,
      handlers: defineHandlers({
        count: {
          run: async (input: unknown) => {
            const n = (input as { n: number }).n;
            seen.set(n, (seen.get(n) ?? 0) + 1);
            return n;
          },
        },
      }),
      logger: silentLogger,
    });
    const worker = new PullWorker({ runner: engine.runner, queue: streams, concurrency: 8 });
    cleanups.push(async () => {
      await worker.stop({ deadlineMs: 1_000 });
      await streams.close();
    });
    // Submitted at once, as concurrent requests are: their writes share a socket write.
    await Promise.all(
      Array.from({ length: 100 }, (_, n) =>
        engine.broker.submit({ handler: "count", input: { n } }),
      ),
    );
    expect((await streams.stats()).length).toBe(100);
    await worker.start();
    const deadline = Date.now() + 20_000;
    while ((await engine.stats()).totals.succeeded < 100) {
      if (Date.now() > deadline) throw new Error("the worker did not run 100 jobs");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(seen.size).toBe(100);
    expect([...seen.values()].every((runs) => runs === 1)).toBe(true);
    while ((await streams.stats()).length > 0) {
      if (Date.now() > deadline) throw new Error("the stream was not trimmed");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await streams.stats()).toMatchObject({ length: 0, pending: 0 });
  });

  it("a wait for events (XREAD BLOCK) wakes on the next event, not at its timeout", async () => {
    const redis = new Redis6(REDIS_URL, options);
    cleanups.push(() => redis.disconnect());
    const store = new RedisStore({ client: fromIoredis(redis), prefix: `v6-${randomUUID()}` });
    cleanups.push(() => store.close?.());
    const { last } = await store.events({ limit: 1 });
    const woken = store.waitForEvents?.(last, 60_000, new AbortController().signal);
    await store.submitJob(newJob(), { delayMs: 0, recoverGraceMs: 0 });
    // Within the test's own timeout, far below the wait's 60 s.
    await woken;
    expect((await store.events({ after: last, limit: 10 })).events.length).toBeGreaterThan(0);
  });
});

describe("tickwork's connections", () => {
  it("tickwork's own connections ask for RESP2", async () => {
    const { redis, close } = await connectIoredis({
      url: REDIS_URL,
      purpose: "the test",
      maxRetriesPerRequest: 1,
    });
    cleanups.push(close);
    expect((redis.options as { protocol?: unknown }).protocol).toBe(2);
  });
});
