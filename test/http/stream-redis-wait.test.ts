/**
 * `RedisStore({ blocking })`'s `waitForEvents` on a real Redis: it wakes when a store operation
 * writes an event above the waiter's id (XREAD BLOCK on a connection of its own), wakes at once
 * a waiter whose id is below an event already written, ends at its timeout or abort, and never
 * holds up the store's shared connection while it blocks. A store without a blocking client (as
 * on Upstash over REST) has no `waitForEvents`: the streams poll it.
 */
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { jobSpec } from "../contract/fixtures.ts";

const REDIS_URL = "redis://127.0.0.1:6379";

describe("RedisStore waitForEvents (XREAD BLOCK)", () => {
  let redis: Redis;
  let store: RedisStore;
  let prefix: string;
  let duplicates: Redis[];

  beforeEach(() => {
    redis = new Redis(REDIS_URL);
    prefix = `sw${Math.random().toString(36).slice(2, 10)}`;
    duplicates = [];
    // Record the connections the waiter opens.
    const blocking = {
      duplicate: () => {
        const connection = redis.duplicate();
        duplicates.push(connection);
        return connection;
      },
    };
    store = new RedisStore({ client: fromIoredis(redis), prefix, blocking });
  });

  afterEach(async () => {
    await store.close();
    const keys = await redis.keys(`{${prefix}}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  const submit = () => store.submitJob(jobSpec(), { delayMs: 0, recoverGraceMs: 60_000 });

  it("wakes on a new event, on its own connection, while the shared one keeps answering", async () => {
    await submit();
    const { last } = await store.events({ limit: 1_000 });
    const signal = new AbortController().signal;
    let woke = false;
    const waiting = store.waitForEvents?.(last, 60_000, signal).then(() => {
      woke = true;
    });
    expect(waiting).toBeDefined();
    // The blocking read is under way on a duplicate; the shared connection still answers.
    await expect(redis.ping()).resolves.toBe("PONG");
    expect(await store.now()).toBeGreaterThan(0);
    expect(woke).toBe(false);
    expect(duplicates).toHaveLength(1);
    await submit();
    await waiting;
    expect(woke).toBe(true);
  });

  it("wakes at once when an event above the id is already written", async () => {
    await submit();
    await submit();
    const { events } = await store.events({ limit: 1_000 });
    const signal = new AbortController().signal;
    await store.waitForEvents?.(events[0]?.id, 60_000, signal); // would time out the test if not
    await store.waitForEvents?.(undefined, 60_000, signal);
  });

  it("ends at its timeout and at once on abort", async () => {
    await submit();
    const { last } = await store.events({ limit: 1_000 });
    await store.waitForEvents?.(last, 30, new AbortController().signal);
    const abort = new AbortController();
    const waiting = store.waitForEvents?.(last, 60_000, abort.signal);
    abort.abort();
    await waiting;
  });

  it("is absent without a blocking client (Upstash over REST): the streams poll", () => {
    expect(new RedisStore({ client: fromIoredis(redis), prefix }).waitForEvents).toBeUndefined();
  });
});
