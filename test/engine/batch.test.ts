/**
 * `broker.submitMany` (src/engine/batch.ts) on the engine's publishing paths and its admission:
 * the stored jobs reach the queue in its publish batches whether the submit awaits its publish,
 * hands it to `defer` (Workers, Vercel) or sends it in the background (`backgroundPublish`); at
 * `critical` with `reject` every job not replayed answers 503; a store without `submitJobs` gets
 * the jobs one by one with the same outcomes. On the memory store and on Redis.
 */
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine, type EngineConfig, silentLogger } from "../../src/engine/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { MAX_SUBMIT_CHUNK_BYTES, type Store, type SubmitItem } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { recordingTransport } from "../support/recording-transport.ts";

const redis = new Redis("redis://127.0.0.1:6379");
const prefixes: string[] = [];
afterAll(async () => {
  for (const prefix of prefixes) {
    const found = await redis.keys(`{${prefix}}:*`);
    if (found.length > 0) await redis.del(...found);
  }
  redis.disconnect();
});

const stores: [string, () => Store][] = [
  ["memory", () => new MemoryStore()],
  [
    "redis",
    () => {
      const prefix = `batch-engine-${Math.random().toString(36).slice(2, 10)}`;
      prefixes.push(prefix);
      return new RedisStore({ client: fromIoredis(redis), prefix });
    },
  ],
];

/** A queue that takes every message and remembers each publish call's messages. */

const handlers = { work: { run: () => null } };
const jobs = (n: number, key?: string) =>
  Array.from({ length: n }, (_, i) => ({
    handler: "work" as const,
    input: i,
    ...(key ? { idempotencyKey: `${key}-${i}` } : {}),
  }));

describe.each(stores)("broker.submitMany on %s", (_name, makeStore) => {
  it.each(["awaited", "defer", "backgroundPublish"] as const)(
    "publishes every stored job in the queue's batches (%s)",
    async (mode) => {
      const transport = recordingTransport();
      const deferred: Promise<unknown>[] = [];
      const config: EngineConfig<typeof handlers> = {
        store: makeStore(),
        transport,
        handlers,
        logger: silentLogger,
        tick: { publishBatch: 100 },
        ...(mode === "defer"
          ? { defer: (work: Promise<unknown>) => void deferred.push(work) }
          : {}),
        ...(mode === "backgroundPublish" ? { backgroundPublish: true } : {}),
      };
      const engine = createEngine(config);
      const { items } = await engine.broker.submitMany(jobs(1_000));
      expect(items.every((i) => i.outcome === "accepted")).toBe(true);
      if (mode === "defer") await Promise.all(deferred);
      await engine.broker.settled();
      const ids = items.map((i) => (i.outcome === "accepted" ? i.job.id : ""));
      expect(
        transport.calls
          .flat()
          .map((m) => m.id)
          .sort(),
      ).toEqual([...ids].sort());
      expect(Math.max(...transport.calls.map((c) => c.length))).toBeLessThanOrEqual(100);
      // Batches, not a request per job.
      expect(transport.calls.length).toBeLessThanOrEqual(20);
    },
  );

  it("at critical with reject: every job not replayed answers 503, nothing written for it", async () => {
    const store = makeStore();
    const engine = createEngine({
      store,
      transport: recordingTransport(),
      handlers,
      logger: silentLogger,
      degradation: {
        queueDepth: { normal: 1, degraded: 2, critical: 3 },
        debounceMs: 0,
        // Degraded jobs run at once, so the backlog keeps growing to critical.
        degradedDelayMs: 0,
        critical: "reject",
        retryAfterMs: 7_000,
        evaluateEveryMs: 0,
      },
    });
    // A backlog the controller sees (published, never delivered), and one keyed job stored first.
    const first = await engine.broker.submit({ handler: "work", idempotencyKey: "kept" });
    for (let i = 0; i < 5; i++) await engine.broker.submit({ handler: "work" }).catch(() => {});
    const submitted = (await store.stats()).totals.submitted;
    expect((await engine.stats()).degradation.level).toBe("critical");
    const { items } = await engine.broker.submitMany([
      { handler: "work" },
      { handler: "work", idempotencyKey: "kept" },
      { handler: "work" },
    ]);
    expect(items.map((i) => i.outcome)).toEqual(["failed", "replayed", "failed"]);
    for (const item of [items[0]!, items[2]!]) {
      expect(item.outcome === "failed" && item.error).toMatchObject({
        status: 503,
        retryAfterMs: 7_000,
      });
    }
    expect(items[1]!.outcome === "replayed" && items[1]!.job.id).toBe(first.job.id);
    expect((await store.stats()).totals.submitted).toBe(submitted);
  });

  it("a store without submitJobs gets the jobs one by one, with the same outcomes", async () => {
    const real = makeStore();
    const { submitJobs: _, ...rest } = Object.fromEntries(
      Object.getOwnPropertyNames(Object.getPrototypeOf(real))
        .filter((name) => name !== "constructor")
        .map((name) => [name, (real as unknown as Record<string, unknown>)[name]]),
    );
    const plain = Object.fromEntries(
      Object.entries(rest).map(([name, fn]) => [
        name,
        typeof fn === "function" ? fn.bind(real) : fn,
      ]),
    ) as unknown as Store;
    expect(plain.submitJobs).toBeUndefined();
    const engine = createEngine({
      store: plain,
      transport: recordingTransport(),
      handlers,
      logger: silentLogger,
    });
    const { items } = await engine.broker.submitMany([
      { handler: "work", idempotencyKey: "a" },
      { handler: "work", after: ["j_00000000000000000000x"] },
      { handler: "work", idempotencyKey: "a" },
      { handler: "nope" as "work" },
    ]);
    expect(
      items.map((i) => (i.outcome === "failed" ? (i.error as { code: string }).code : i.outcome)),
    ).toEqual(["accepted", "unknown_dependencies", "replayed", "unknown_handler"]);
    expect((await real.stats()).totals.submitted).toBe(1);
  });
});

describe("broker.submitMany chunks", () => {
  it("cuts chunks by the UTF-8 bytes of their jobs (what the store sends), not their UTF-16 length", async () => {
    const store = new MemoryStore();
    const chunks: SubmitItem[][] = [];
    const submitJobs = store.submitJobs.bind(store);
    store.submitJobs = (items, timing, admission) => {
      chunks.push(items);
      return submitJobs(items, timing, admission);
    };
    const engine = createEngine({
      store,
      transport: recordingTransport(),
      handlers,
      logger: silentLogger,
    });
    // 150,000 UTF-16 units each, but 450,000 UTF-8 bytes: two do not fit in one chunk.
    const input = "€".repeat(150_000);
    const { items } = await engine.broker.submitMany(
      Array.from({ length: 4 }, () => ({ handler: "work" as const, input })),
    );
    expect(items.every((i) => i.outcome === "accepted")).toBe(true);
    const utf8 = new TextEncoder();
    const bytes = (chunk: SubmitItem[]) =>
      chunk.reduce((n, { job }) => n + utf8.encode(JSON.stringify(job)).byteLength, 0);
    expect(chunks.map((c) => c.length)).toEqual([1, 1, 1, 1]);
    for (const chunk of chunks) expect(bytes(chunk)).toBeLessThanOrEqual(MAX_SUBMIT_CHUNK_BYTES);
  });
});
