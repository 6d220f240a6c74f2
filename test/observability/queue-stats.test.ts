/**
 * The transport's queue in `/metrics` and `/v1/stats` (`engine.queueStats()`): on the Redis
 * Streams transport (a real Redis, no worker) the figures follow submits, pulls, acks and a
 * takeover; on the local and QStash transports there is no `queue` member and no queue family.
 * Both reads of a scrape run at the same time, and the README's queue table lists exactly the
 * queue families.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createEngine, defineHandlers, type Engine, silentLogger } from "../../src/engine/index.ts";
import { createApp } from "../../src/http/index.ts";
import { renderPrometheus } from "../../src/http/prometheus.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { StoreStats } from "../../src/store/port.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { LocalTransport } from "../../src/transport/local/index.ts";
import type { QueueStats, Transport } from "../../src/transport/port.ts";
import { QStashTransport } from "../../src/transport/qstash/index.ts";
import { REDIS_URL } from "../support/stores.ts";
import { type Family, parsePrometheus, sampleValue } from "./prometheus-parser.ts";

const handlers = defineHandlers({ echo: { run: (input: unknown) => input } });

/** The queue families and their types. */
const QUEUE_FAMILIES = {
  tickwork_queue_length: "gauge",
  tickwork_queue_pending: "gauge",
  tickwork_queue_oldest_pending_seconds: "gauge",
  tickwork_queue_delayed: "gauge",
  tickwork_queue_consumers: "gauge",
  tickwork_queue_claimed_total: "counter",
} as const;

type App = ReturnType<typeof createApp>;

async function metrics(app: App): Promise<Map<string, Family>> {
  const res = await app.request("/metrics");
  expect(res.status).toBe(200);
  return parsePrometheus(await res.text());
}

// biome-ignore lint/suspicious/noExplicitAny: the JSON answer is inspected freely
async function stats(app: App): Promise<any> {
  const res = await app.request("/v1/stats");
  expect(res.status).toBe(200);
  return res.json();
}

/** The queue families of an exposition as the JSON's fields (seconds back to ms). */
function queueFromMetrics(m: Map<string, Family>) {
  return {
    length: sampleValue(m, "tickwork_queue_length"),
    pending: sampleValue(m, "tickwork_queue_pending"),
    oldestPendingMs: sampleValue(m, "tickwork_queue_oldest_pending_seconds") * 1000,
    delayed: sampleValue(m, "tickwork_queue_delayed"),
    consumers: sampleValue(m, "tickwork_queue_consumers"),
    claimed: sampleValue(m, "tickwork_queue_claimed_total"),
  };
}

function queueFamilyNames(m: Map<string, Family>): string[] {
  // `tickwork_queue_depth` is the store's backlog, on every transport.
  return [...m.keys()].filter(
    (n) => n.startsWith("tickwork_queue_") && n !== "tickwork_queue_depth",
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("queue stats on the Redis Streams transport", () => {
  const clients: Redis[] = [];
  const streamsToClose: RedisStreams[] = [];
  const prefixes: string[] = [];

  afterAll(async () => {
    for (const s of streamsToClose) await s.close();
    const redis = new Redis(REDIS_URL);
    for (const prefix of prefixes) {
      let cursor = "0";
      do {
        const [next, found] = await redis.scan(cursor, "MATCH", `{${prefix}}:*`, "COUNT", 1000);
        if (found.length > 0) await redis.del(...found);
        cursor = next;
      } while (cursor !== "0");
    }
    redis.disconnect();
    for (const c of clients) c.disconnect();
  });

  /** An engine and app on the streams transport under `prefix` (a fresh one by default). */
  function rig(prefix = `qs-${randomUUID()}`, claimIdleMs?: number) {
    const redis = new Redis(REDIS_URL);
    clients.push(redis);
    if (!prefixes.includes(prefix)) prefixes.push(prefix);
    const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
    const streams = new RedisStreams({ redis, prefix, ...(claimIdleMs ? { claimIdleMs } : {}) });
    streamsToClose.push(streams);
    const engine: Engine = createEngine({
      store,
      transport: streams,
      handlers,
      logger: silentLogger,
    });
    const app = createApp({ engine, dev: true });
    return { prefix, redis, streams, engine, app };
  }

  async function submit(app: App, body: Record<string, unknown>): Promise<string> {
    const res = await app.request("/v1/jobs", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ handler: "echo", input: null, ...body }),
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { id: string }).id;
  }

  it("reports length, delayed, pending and the oldest pending age in /metrics and /v1/stats", async () => {
    const { app, engine, streams } = rig();

    // Nothing yet (the consumer group does not exist before a worker opens the queue).
    const empty = {
      kind: "redis-streams",
      length: 0,
      pending: 0,
      oldestPendingMs: 0,
      delayed: 0,
      consumers: 0,
      claimed: 0,
    };
    expect((await stats(app)).queue).toEqual(empty);
    expect(await engine.queueStats()).toEqual(empty);
    const m0 = await metrics(app);
    for (const [name, type] of Object.entries(QUEUE_FAMILIES)) {
      expect(m0.get(name)?.type, name).toBe(type);
      expect(m0.get(name)?.help.length, name).toBeGreaterThan(10);
      expect(sampleValue(m0, name), name).toBe(0);
    }

    // Three due jobs: on the stream, nobody has read them.
    for (let n = 0; n < 3; n++) await submit(app, { input: { n } });
    expect((await stats(app)).queue).toEqual({ ...empty, length: 3 });
    expect(queueFromMetrics(await metrics(app))).toEqual({
      length: 3,
      pending: 0,
      oldestPendingMs: 0,
      delayed: 0,
      consumers: 0,
      claimed: 0,
    });

    // Two delayed jobs wait in the delayed set. The first one to become the earliest also puts a
    // wake-up entry on the stream (for a blocked worker); the second, later one does not.
    await submit(app, { delay: "1m" });
    await submit(app, { delay: "2m" });
    const withDelayed = (await stats(app)).queue;
    expect(withDelayed).toEqual({ ...empty, length: 4, delayed: 2 });
    expect(queueFromMetrics(await metrics(app))).toMatchObject({ length: 4, delayed: 2 });

    // A worker reads without acknowledging: the three deliveries are pending (the wake-up is
    // dropped by the read), and the oldest has an age.
    await streams.open();
    const pulled = await streams.pull(10, 100);
    expect(pulled).toHaveLength(3);
    await sleep(30);
    const read = (await stats(app)).queue;
    expect(read).toMatchObject({ length: 3, pending: 3, delayed: 2, consumers: 1, claimed: 0 });
    expect(read.oldestPendingMs).toBeGreaterThan(0);
    expect(read.oldestPendingMs).toBeLessThan(60_000);
    const m1 = queueFromMetrics(await metrics(app));
    expect(m1).toMatchObject({ length: 3, pending: 3, delayed: 2, consumers: 1, claimed: 0 });
    // Read after /v1/stats: the same delivery, a little older.
    expect(m1.oldestPendingMs).toBeGreaterThanOrEqual(read.oldestPendingMs);

    // One acknowledged: it leaves the stream and the pending list.
    await streams.ack([pulled[0]!.id]);
    expect((await stats(app)).queue).toMatchObject({ length: 2, pending: 2, delayed: 2 });

    // All acknowledged: nothing pending, so no age.
    await streams.ack(pulled.slice(1).map((p) => p.id));
    expect((await stats(app)).queue).toMatchObject({
      length: 0,
      pending: 0,
      oldestPendingMs: 0,
      delayed: 2,
    });
  });

  it("counts the deliveries taken over from a stopped consumer, the same in every process", async () => {
    const a = rig();
    await submit(a.app, {});
    await submit(a.app, {});
    await a.streams.open();
    expect(await a.streams.pull(10, 100)).toHaveLength(2);
    // `a` stops answering; `b` (same queue, another process) takes its deliveries over once idle.
    const b = rig(a.prefix, 50);
    await b.streams.open();
    await sleep(80);
    const taken = await b.streams.pull(10, 100);
    expect(taken.map((t) => t.claimed)).toEqual([true, true]);

    // The takeover emptied `a`, idle past claimIdleMs: it left the group (docs/streams.md).
    const seenByB = (await stats(b.app)).queue;
    expect(seenByB).toMatchObject({ length: 2, pending: 2, consumers: 1, claimed: 2 });
    expect(sampleValue(await metrics(b.app), "tickwork_queue_claimed_total")).toBe(2);
    // The counter is the deployment's: `a` took nothing over, and a process that only serves
    // the API (`--role api`: it never pulls) reads the same as `b`.
    expect((await stats(a.app)).queue).toMatchObject({ pending: 2, consumers: 1, claimed: 2 });
    expect(sampleValue(await metrics(a.app), "tickwork_queue_claimed_total")).toBe(2);
    const api = rig(a.prefix);
    expect((await stats(api.app)).queue).toMatchObject({ claimed: 2 });
    expect(sampleValue(await metrics(api.app), "tickwork_queue_claimed_total")).toBe(2);
  });
});

describe("queue stats on a transport without them", () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  const transports: { name: string; make: () => Transport }[] = [
    {
      name: "local",
      make: () => {
        const local = new LocalTransport({
          workerUrl: "http://127.0.0.1:9/v1/worker",
          failureCallbackUrl: "http://127.0.0.1:9/v1/dead",
          signingKey: "sig_test_current",
          onError: () => {},
        });
        closers.push(() => local.close());
        return local;
      },
    },
    {
      name: "qstash",
      make: () =>
        new QStashTransport({
          token: "test-token",
          baseUrl: "http://127.0.0.1:9",
          workerUrl: "http://127.0.0.1:9/v1/worker",
          currentSigningKey: "sig_current",
          nextSigningKey: "sig_next",
          retry: false,
        }),
    },
  ];

  it.each(transports)("has no queue member and no queue families on $name", async ({ make }) => {
    const transport = make();
    expect(transport.queueStats).toBeUndefined();
    const engine = createEngine({
      store: new MemoryStore(),
      transport,
      handlers,
      logger: silentLogger,
    });
    expect(await engine.queueStats()).toBeUndefined();
    const app = createApp({ engine, dev: true, publicUrl: "http://127.0.0.1:9" });
    const body = await stats(app);
    expect(body).not.toHaveProperty("queue");
    expect(body.backlog).toBe(0);
    const m = await metrics(app);
    expect(queueFamilyNames(m)).toEqual([]);
    expect(m.has("tickwork_queue_depth")).toBe(true);
  });
});

describe("a scrape reads the store and the queue at the same time", () => {
  it("starts both reads before either answers, and shows only QueueStats' fields", async () => {
    const store = new MemoryStore();
    let storeStarted!: () => void;
    let queueStarted!: () => void;
    const bothStarted = Promise.all([
      new Promise<void>((r) => {
        storeStarted = r;
      }),
      new Promise<void>((r) => {
        queueStarted = r;
      }),
    ]);
    // Each read answers only once the other has begun: read one after the other, they never would.
    const bounded = <T>(work: Promise<T>) =>
      Promise.race([
        work,
        sleep(2_000).then(() => {
          throw new Error("the store and queue reads did not run at the same time");
        }),
      ]);
    const storeStats = store.stats.bind(store);
    store.stats = async (...args: Parameters<MemoryStore["stats"]>): Promise<StoreStats> => {
      storeStarted();
      await bounded(bothStarted);
      return storeStats(...args);
    };
    const figures: QueueStats = {
      kind: "test",
      length: 7,
      pending: 2,
      oldestPendingMs: 1_500,
      delayed: 1,
      consumers: 3,
      claimed: 4,
    };
    const transport: Transport = {
      publish: async (messages) =>
        messages.map((m) => ({ id: m.id, ok: true, messageId: m.dedupId, deduplicated: false })),
      verify: async () => false,
      queueStats: async () => {
        queueStarted();
        await bounded(bothStarted);
        // A transport's own extras do not reach the API.
        return { ...figures, internal: "not for the API" } as QueueStats;
      },
    };
    const engine = createEngine({ store, transport, handlers, logger: silentLogger });
    const app = createApp({ engine, dev: true });

    const m = await metrics(app);
    expect({ kind: "test", ...queueFromMetrics(m) }).toEqual(figures);
    expect(sampleValue(m, "tickwork_queue_oldest_pending_seconds")).toBe(1.5);
    expect((await stats(app)).queue).toEqual(figures);
  });
});

describe("the README's queue metrics table", () => {
  it("lists exactly the queue families of the exposition", async () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const table = readme.slice(readme.indexOf("| queue metric (`tickwork_…`)"));
    const rows = table.slice(0, table.indexOf("\n\n")).split("\n").slice(2);
    const listed = rows.flatMap((row) =>
      [...(row.split(/(?<!\\)\|/)[1] ?? "").matchAll(/`([a-z_]+)[{`]/g)].map(
        (match) => `tickwork_${match[1]}`,
      ),
    );
    const stats = await new MemoryStore().stats();
    const queue: QueueStats = {
      kind: "redis-streams",
      length: 1,
      pending: 1,
      oldestPendingMs: 1,
      delayed: 1,
      consumers: 1,
      claimed: 1,
    };
    const families = queueFamilyNames(parsePrometheus(renderPrometheus(stats, queue)));
    expect(listed.sort()).toEqual(families.sort());
    expect(families.sort()).toEqual(Object.keys(QUEUE_FAMILIES).sort());
  });
});
