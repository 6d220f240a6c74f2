/**
 * The Cloudflare Queues transport end to end in real workerd: `test/cloudflare/queues/worker.ts`
 * (`createWorker` with a `TICKWORK_QUEUE` producer binding and the same Worker as the queue's
 * consumer, `test/cloudflare/queues/wrangler.toml`) under wrangler's `unstable_startWorker`, whose
 * Miniflare runs the queue locally (batches, per-message ack and retry, delays, redelivery after a
 * consumer throws). Redis sits behind the Upstash-compatible REST bridge; no QStash anywhere: the
 * binding alone selects the transport.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { Redis as IORedis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { unstable_startWorker } from "wrangler";
import type { RedisStore } from "../../src/store/redis/index.ts";
import type { RedisRestServer } from "../../src/tools/redis-rest/index.ts";
import { freePort, secret, startRedisBehindRest, text } from "./harness.ts";

type Worker = Awaited<ReturnType<typeof unstable_startWorker>>;
interface Seen {
  runs: Record<string, number>;
  seen: { jobId: string; attempts: number; at: number }[];
  crashed: string[];
}

const API_KEY = secret("key");
const REST_TOKEN = secret("rest");
const PREFIX = `cfq${randomBytes(4).toString("hex")}`;
/** Generous: workerd, Miniflare's queue and the bridge share two cores with other test files. */
const WAIT = { timeout: 30_000, interval: 150 };

let redis: IORedis;
let bridge: RedisRestServer;
let worker: Worker | undefined;
let origin: string;
let store: RedisStore;

beforeAll(async () => {
  ({ redis, store, bridge } = await startRedisBehindRest(PREFIX, REST_TOKEN));
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  worker = await unstable_startWorker({
    config: join(import.meta.dirname, "queues", "wrangler.toml"),
    envFiles: [],
    sendMetrics: false,
    bindings: {
      UPSTASH_REDIS_REST_URL: text(bridge.url),
      UPSTASH_REDIS_REST_TOKEN: text(REST_TOKEN),
      TICKWORK_API_KEY: text(API_KEY),
      CRON_SECRET: text(secret("cron")),
      TICKWORK_PREFIX: text(PREFIX),
    },
    dev: {
      server: { hostname: "127.0.0.1", port },
      inspector: false,
      persist: false,
      watch: false,
      logLevel: "warn",
    },
  });
  await worker.ready;
}, 60_000);

afterAll(async () => {
  await worker?.dispose();
  await bridge?.close();
  if (redis) {
    let cursor = "0";
    do {
      const [next, found] = await redis.scan(cursor, "MATCH", `{${PREFIX}}:*`, "COUNT", 1000);
      if (found.length > 0) await redis.del(...found);
      cursor = next;
    } while (cursor !== "0");
    redis.disconnect();
  }
}, 30_000);

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(`${origin}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${API_KEY}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function seen(): Promise<Seen> {
  return (await (await fetch(`${origin}/__test`)).json()) as Seen;
}

describe("Cloudflare Queues transport in workerd", { timeout: 60_000 }, () => {
  it("runs a submitted job: POST /v1/jobs → sendBatch → queue() → succeeded in Redis", async () => {
    const submitted = await api("POST", "/v1/jobs", { handler: "echo", input: { via: "queue" } });
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;
    await vi.waitFor(async () => {
      expect((await api("GET", `/v1/jobs/${id}`)).body).toMatchObject({
        id,
        status: "succeeded",
        result: { via: "queue" },
      });
    }, WAIT);
    expect(await store.getJob(id)).toMatchObject({ status: "succeeded", attempts: 1 });
    const log = await seen();
    expect(log.runs[id]).toBe(1);
    expect(log.seen.filter((s) => s.jobId === id)).toEqual([
      expect.objectContaining({ attempts: 1 }),
    ]);
    // The worker route is not a way in: nothing is pushed to it on this transport.
    const forged = await fetch(`${origin}/v1/worker`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: "j_forged", handler: "echo", input: null }),
    });
    expect(forged.status).toBe(401);
  });

  it("refuses an input a queue message could not hold with 413, storing nothing", async () => {
    const before = await redis.zcard(`{${PREFIX}}:outbox`);
    const big = await api("POST", "/v1/jobs", { handler: "echo", input: "x".repeat(110_000) });
    expect(big.status).toBe(413);
    expect(big.body).toMatchObject({ status: 413 });
    expect(await redis.zcard(`{${PREFIX}}:outbox`)).toBe(before);
  });

  it("fires a schedule from the Cron Trigger: scheduled() → tick → sendBatch with delays → queue()", async () => {
    const scheduleId = `every-second-${PREFIX}`;
    const created = await api("POST", "/v1/schedules", {
      id: scheduleId,
      handler: "echo",
      schedule: "1s",
      maxRuns: 2,
      input: { tick: "cron" },
    });
    expect(created.status).toBe(201);
    const fired = await fetch(`${origin}/cdn-cgi/handler/scheduled?cron=*+*+*+*+*`);
    expect(fired.status).toBe(200);
    await fired.text();
    await vi.waitFor(async () => {
      const direct = await store.listJobs({ scheduleId, limit: 10 });
      expect(direct.items.map((job) => [job.status, job.attempts])).toEqual([
        ["succeeded", 1],
        ["succeeded", 1],
      ]);
    }, WAIT);
    expect(await store.getSchedule(scheduleId)).toMatchObject({ status: "completed", runs: 2 });
    const log = await seen();
    const ids = (await store.listJobs({ scheduleId, limit: 10 })).items.map((job) => job.id);
    for (const id of ids) expect(log.runs[id]).toBe(1);
  });

  it("retries a failing handler with its backoff, then it is dead in tickwork's dead letters", async () => {
    const submitted = await api("POST", "/v1/jobs", { handler: "fail", input: null, retries: 2 });
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;
    await vi.waitFor(async () => {
      expect(await store.getJob(id)).toMatchObject({ status: "dead", attempts: 3 });
    }, WAIT);
    const dead = await api("GET", "/v1/dlq");
    expect((dead.body.items as { id: string }[]).map((j) => j.id)).toContain(id);
    const log = await seen();
    expect(log.runs[id]).toBe(3);
    // Three deliveries of one message, each after the backoff asked for (1 s, then 2 s).
    const deliveries = log.seen.filter((s) => s.jobId === id);
    expect(deliveries.map((d) => d.attempts)).toEqual([1, 2, 3]);
    expect(deliveries[1]!.at - deliveries[0]!.at).toBeGreaterThanOrEqual(1_000);
    expect(deliveries[2]!.at - deliveries[1]!.at).toBeGreaterThanOrEqual(2_000);
  });

  it("loses nothing and doubles nothing when the consumer throws mid-batch", async () => {
    const tag = `crash-${PREFIX}`;
    // Due together, so the queue hands them over in one batch (or a few).
    const runAt = new Date(Date.now() + 3_000).toISOString();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const submitted = await api("POST", "/v1/jobs", {
        handler: "echo",
        input: { crashConsumer: tag, i },
        runAt,
      });
      expect(submitted.status).toBe(202);
      ids.push(submitted.body.id as string);
    }
    await vi.waitFor(async () => {
      for (const id of ids) {
        expect(await store.getJob(id)).toMatchObject({ status: "succeeded", attempts: 1 });
      }
    }, WAIT);
    const log = await seen();
    expect(log.crashed).toContain(tag);
    // Every handler ran exactly once, though a message whose run finished lost its ack and came
    // back (attempts 2): beginRun found its job final.
    for (const id of ids) expect(log.runs[id]).toBe(1);
    const redelivered = log.seen.filter((s) => ids.includes(s.jobId) && s.attempts > 1);
    expect(redelivered.length).toBeGreaterThan(0);
  });
});
