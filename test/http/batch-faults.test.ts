/**
 * Batch submit when Redis fails half-way (docs/adr/0020-batch-submit.md): the store is reached
 * through a TCP fault proxy (bench/chaos/redis-proxy.ts) that cuts every connection just before
 * the third chunk's script is sent. The chunks Redis acknowledged stay stored and are answered
 * `accepted` (and published); the jobs of the failed chunk and after it are answered 503
 * `store_unavailable`, each; nothing of them is written. Sent again with the same idempotency
 * keys once Redis is back, the stored ones replay and the rest are stored: no job lost, none twice.
 * And a chunk whose script ran but whose answer was lost (the proxy throws the reply away): 503,
 * yet stored; the resend replays it, and its jobs, never published by a request, wait in the
 * outbox for the tick.
 */
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { RedisFaultProxy } from "../../bench/chaos/redis-proxy.ts";
import { MAX_SUBMIT_CHUNK } from "../../src/store/port.ts";
import { fromIoredis, RedisStore, type ScriptClient } from "../../src/store/redis/index.ts";
import { scripts } from "../../src/store/redis/scripts.generated.ts";
import { recordingTransport } from "../support/recording-transport.ts";
import { type Answer, call, type Harness, startHarness } from "./harness.ts";

const direct = new Redis("redis://127.0.0.1:6379");
const prefix = `batch-fault-${Math.random().toString(36).slice(2, 10)}`;
afterAll(async () => {
  const keys = await direct.keys(`{${prefix}}:*`);
  if (keys.length > 0) await direct.del(...keys);
  direct.disconnect();
});

describe("batch submit with Redis failing mid-batch", () => {
  it("keeps what Redis acknowledged, answers 503 for the rest, and a resend completes it exactly once", async () => {
    const proxy = await RedisFaultProxy.start(6379);
    // No reconnects: a command caught by the cut fails at once ("Connection is closed.").
    const connect = async () => {
      const redis = new Redis(`redis://127.0.0.1:${proxy.port}`, { retryStrategy: () => null });
      redis.on("error", () => {});
      await redis.ping();
      return redis;
    };
    let proxied = await connect();
    // Cuts the connection as the third chunk is about to be sent (a real connection loss, not a
    // stub): the proxy drops both sockets, so the script never reaches Redis.
    let chunks = 0;
    let cut = true;
    const client: ScriptClient = {
      evalsha: (sha1, keys, args) => {
        if (sha1 === scripts.submitMany.sha1 && ++chunks === 3 && cut) proxy.fault("drop");
        return fromIoredis(proxied).evalsha(sha1, keys, args);
      },
      eval: (script, keys, args) => fromIoredis(proxied).eval(script, keys, args),
    };
    const store = new RedisStore({ client, prefix });
    const transport = recordingTransport();
    let h: Harness | undefined;
    try {
      h = await startHarness({
        store,
        transport,
        handlers: { echo: { run: (input) => input } },
      });
      const jobs = Array.from({ length: 1_000 }, (_, i) => ({
        handler: "echo",
        input: i,
        idempotencyKey: `f-${i}`,
      }));
      const stored = 2 * MAX_SUBMIT_CHUNK;

      const first: Answer = await call(h.origin, "POST", "/v1/jobs/batch", { json: { jobs } });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ accepted: stored, replayed: 0, failed: 1_000 - stored });
      const items = first.body.items as {
        outcome: string;
        status: number;
        problem?: { type: string };
      }[];
      expect(items.slice(0, stored).every((i) => i.outcome === "accepted")).toBe(true);
      for (const item of items.slice(stored)) {
        expect(item).toMatchObject({
          outcome: "failed",
          status: 503,
          problem: { status: 503, type: "urn:tickwork:problem:store_unavailable" },
        });
      }
      // What was acknowledged is stored and was published; nothing else was written.
      const truth = new RedisStore({ client: fromIoredis(direct), prefix });
      expect((await truth.stats()).totals.submitted).toBe(stored);
      const acknowledged = items
        .slice(0, stored)
        .map((i) => (i as unknown as { job: { id: string } }).job.id);
      for (const id of [acknowledged[0]!, acknowledged[stored - 1]!]) {
        expect(await truth.getJob(id)).toMatchObject({ id, status: "queued" });
      }
      expect(new Set(transport.published.map((m) => m.id))).toEqual(new Set(acknowledged));

      // Redis is back: the same batch again stores the rest, and replays the rest.
      cut = false;
      proxied.disconnect();
      proxied = await connect();
      const again = await call(h.origin, "POST", "/v1/jobs/batch", { json: { jobs } });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ accepted: 1_000 - stored, replayed: stored, failed: 0 });
      expect(
        again.body.items.slice(0, stored).map((i: { job: { id: string } }) => i.job.id),
      ).toEqual(acknowledged);
      expect((await truth.stats()).totals.submitted).toBe(1_000);
      expect(new Set(transport.published.map((m) => m.id)).size).toBe(1_000);
    } finally {
      await h?.close();
      proxied.disconnect();
      await proxy.close();
    }
  });

  it("a chunk whose script ran but whose answer was lost: 503, stored; a resend replays it and publishes nothing twice", async () => {
    const proxy = await RedisFaultProxy.start(6379);
    // No reconnects, so no re-send of the script by ioredis: its caller only sees the loss.
    const connect = async () => {
      const redis = new Redis(`redis://127.0.0.1:${proxy.port}`, { retryStrategy: () => null });
      redis.on("error", () => {});
      await redis.ping();
      return redis;
    };
    let proxied = await connect();
    let chunks = 0;
    let lose = true;
    const client: ScriptClient = {
      evalsha: (sha1, keys, args) => {
        if (sha1 === scripts.submitMany.sha1 && ++chunks === 3 && lose) proxy.fault("reply_lost");
        return fromIoredis(proxied).evalsha(sha1, keys, args);
      },
      eval: (script, keys, args) => fromIoredis(proxied).eval(script, keys, args),
    };
    const lostPrefix = `${prefix}-lost`;
    const store = new RedisStore({ client, prefix: lostPrefix });
    const transport = recordingTransport();
    let h: Harness | undefined;
    try {
      h = await startHarness({ store, transport, handlers: { echo: { run: (input) => input } } });
      const jobs = Array.from({ length: 1_000 }, (_, i) => ({
        handler: "echo",
        input: i,
        idempotencyKey: `l-${i}`,
      }));
      const acked = 2 * MAX_SUBMIT_CHUNK;
      const ran = 3 * MAX_SUBMIT_CHUNK;
      const first: Answer = await call(h.origin, "POST", "/v1/jobs/batch", { json: { jobs } });
      expect(first.body).toMatchObject({ accepted: acked, replayed: 0, failed: 1_000 - acked });
      expect(first.body.items[acked]).toMatchObject({ outcome: "failed", status: 503 });
      const truth = new RedisStore({ client: fromIoredis(direct), prefix: lostPrefix });
      expect((await truth.stats()).totals.submitted).toBe(ran);

      lose = false;
      proxied.disconnect();
      proxied = await connect();
      const again: Answer = await call(h.origin, "POST", "/v1/jobs/batch", { json: { jobs } });
      expect(again.body).toMatchObject({ accepted: 1_000 - ran, replayed: ran, failed: 0 });
      expect((await truth.stats()).totals.submitted).toBe(1_000);
      const ids = again.body.items.map((i: { job: { id: string } }) => i.job.id as string);
      expect(new Set(ids).size).toBe(1_000);
      // Published once each, by the request that stored it; the lost chunk's jobs wait in the
      // outbox for the tick's recover step (nothing lost, nothing sent twice).
      const published = transport.published.map((m) => m.id);
      expect(published).toHaveLength(1_000 - MAX_SUBMIT_CHUNK);
      expect(new Set(published).size).toBe(published.length);
      const lost = ids.slice(acked, ran);
      expect(lost.some((id: string) => published.includes(id))).toBe(false);
      const outbox = new Set(await direct.zrange(`{${lostPrefix}}:outbox`, 0, -1));
      expect(lost.every((id: string) => outbox.has(id))).toBe(true);
    } finally {
      await h?.close();
      proxied.disconnect();
      await proxy.close();
      const keys = await direct.keys(`{${lostPrefix}}:*`);
      if (keys.length > 0) await direct.del(...keys);
    }
  });
});
