/**
 * `RedisStore({ blocking })`'s `waitForEvents` on a real Redis: it wakes when a store operation
 * writes an event above the waiter's id (XREAD BLOCK on a connection of its own), wakes at once
 * a waiter whose id is below an event already written, ends at its timeout or abort, and never
 * holds up the store's shared connection while it blocks. A store without a blocking client (as
 * on Upstash over REST) has no `waitForEvents`: the streams poll it. A waiter whose id lies past the
 * log's end (a schedule's stream opened on a quiet log, a Last-Event-ID from the future) does not
 * make the reader wake every later waiter at once: open job streams still read the store about
 * once per `pollMs`.
 */
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defineHandlers } from "../../src/engine/handlers.ts";
import type { EventWait } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { jobSpec } from "../contract/fixtures.ts";
import { call, type Harness, startHarness, until } from "./harness.ts";

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

  it("a waiter whose id is past the log's end does not wake the later ones at once", async () => {
    // A schedule's stream opened on a quiet log waits from "now", past the log's last event; a
    // client's Last-Event-ID may name any id. A read from there woke every later waiter (each
    // open job stream) at once, so each read the store every 100 ms instead of once a second.
    await submit();
    const { last } = await store.events({ limit: 1_000 });
    const ahead = new AbortController();
    const far = store.waitForEvents?.("9999999999999999-0", 60_000, ahead.signal);
    const started = Date.now();
    await store.waitForEvents?.(last, 300, new AbortController().signal);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    // Still woken at once by a new event.
    let woke = false;
    const waiting = store.waitForEvents?.(last, 60_000, new AbortController().signal).then(() => {
      woke = true;
    });
    await submit();
    await waiting;
    expect(woke).toBe(true);
    expect(duplicates).toHaveLength(1);
    ahead.abort();
    await far;
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

describe("open job streams beside one waiting past the log's end (Redis over TCP)", () => {
  let redis: Redis;
  let prefix: string;
  let h: Harness | undefined;
  let store: RedisStore | undefined;
  beforeEach(() => {
    redis = new Redis(REDIS_URL);
    prefix = `sp${Math.random().toString(36).slice(2, 10)}`;
  });
  afterEach(async () => {
    await h?.close();
    h = undefined;
    await store?.close();
    const keys = await redis.keys(`{${prefix}}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it.each([
    ["a schedule's stream opened on a quiet log", "/v1/schedules/nightly/stream", {}],
    [
      "a job's stream resumed from an id past the log's end",
      "/v1/jobs/:id/stream",
      { "last-event-id": "9999999999999999-0.0.running" },
    ],
  ])(
    "%s: the job streams' waits end at their timeout, not at once",
    async (_name, path, headers) => {
      store = new RedisStore({ client: fromIoredis(redis), prefix, blocking: redis });
      let release!: () => void;
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      const handlers = defineHandlers({
        wait: { run: () => released.then(() => "released") },
        echo: { run: (input: unknown) => input },
      });
      h = await startHarness({ store, handlers });
      const job = await call(h.origin, "POST", "/v1/jobs", { json: { handler: "wait" } });
      const created = await call(h.origin, "POST", "/v1/schedules", {
        json: { id: "nightly", handler: "echo", schedule: "0 3 * * *" },
      });
      expect(created.status).toBe(201);
      await until(async () => (await store!.getJob(job.body.id))?.status === "running");
      // The job streams' waits for the log: each of a round ends at its timeout (no event comes),
      // never at once (a wake without an event sent each stream round again every 100 ms).
      const jobWaits: { tookMs: number; timeoutMs: number }[] = [];
      let waits = 0;
      const wait = store.waitForEvents!.bind(store);
      (store as EventWait).waitForEvents = async (after, timeoutMs, signal) => {
        waits += 1;
        const began = performance.now();
        const woken = await wait(after, timeoutMs, signal);
        if (waits > 1) jobWaits.push({ tookMs: performance.now() - began, timeoutMs });
        return woken;
      };
      const abort = new AbortController();
      const first = await fetch(`${h.origin}${path.replace(":id", job.body.id)}`, {
        headers,
        signal: abort.signal,
      });
      expect(first.status).toBe(200);
      void first.body?.pipeTo(new WritableStream()).catch(() => {});
      // Alone, it waits past the log's end; the job streams open after it.
      await until(() => waits >= 1);
      const streams = 3;
      for (let i = 0; i < streams; i++) {
        const response = await fetch(`${h.origin}/v1/jobs/${job.body.id}/stream`, {
          signal: abort.signal,
        });
        void response.body?.pipeTo(new WritableStream()).catch(() => {});
      }
      await until(() => jobWaits.length >= 2 * streams, 30_000);
      // A wait ends at its timeout or later (a loaded machine), never well before it.
      for (const w of jobWaits) expect(w.tookMs).toBeGreaterThanOrEqual(w.timeoutMs / 2);
      abort.abort();
      release();
    },
  );
});
