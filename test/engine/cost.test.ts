/**
 * Cost is counted, not guessed (invariant I4, docs/architecture.md): round trips through a
 * counting Redis client, and billed commands (EVAL/EVALSHA plus every `redis.call` inside, as
 * Upstash bills) from a private Redis's
 * `INFO commandstats`. Admission control (quotas, degradation) and observability (counters,
 * histograms, the event stream) live inside the same scripts: they add billed commands, never
 * round trips. The billed figures asserted here are the ones README's cost table shows.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createEngine,
  type Engine,
  type EngineOptions,
  silentLogger,
} from "../../src/engine/index.ts";
import { deliveryResponse } from "../../src/http/delivery.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { scripts } from "../../src/store/redis/scripts.generated.ts";
import { scheduleRecord } from "../contract/fixtures.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { countingClient, withoutFunctions } from "../support/counting-client.ts";
import { prng } from "../support/prng.ts";
import {
  billedBetween,
  commandsExecuted,
  type PrivateRedis,
  startRedisServer,
} from "../support/redis-server.ts";

let server: PrivateRedis;
let redis: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  redis = new Redis(server.url);
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

async function setup(
  prefix: string,
  opts: { eventsMaxLen?: number; engine?: Pick<EngineOptions, "degradation" | "tick"> } = {},
) {
  const { client, counter } = countingClient(withoutFunctions(fromIoredis(redis)));
  const store = new RedisStore({
    client,
    prefix,
    ...(opts.eventsMaxLen !== undefined ? { eventsMaxLen: opts.eventsMaxLen } : {}),
  });
  const queue = new ChaosQueue(prng(1));
  const engine = createEngine({
    store,
    transport: queue,
    handlers: { work: { run: () => null } },
    logger: silentLogger,
    ...opts.engine,
  });
  // Load every script, so counts below are steady-state (no NOSCRIPT → EVAL fallbacks).
  for (const script of Object.values(scripts)) await redis.script("LOAD", script.source);
  return { engine, store, counter, queue };
}

/** A tenant whose submits are guarded by a three-window quota (per minute, hour and day). */
const QUOTA_ACTOR = {
  tenant: "acme",
  manifest: { quotas: { submit: { perMinute: 1_000, perHour: 10_000, perDay: 100_000 } } },
};

/** Round trips and billed commands of one call. */
async function measure(counter: { roundTrips: number }, fn: () => Promise<unknown>) {
  const before = await commandsExecuted(redis);
  const rt0 = counter.roundTrips;
  await fn();
  const roundTrips = counter.roundTrips - rt0;
  const billed = billedBetween(before, await commandsExecuted(redis));
  return { roundTrips, billed };
}

/** A due-able "1h" schedule with a given id and next run. */
function schedule(id: string, nextRunAt: number) {
  return scheduleRecord({
    id,
    handler: "work",
    schedule: "1h",
    input: null,
    nextRunAt,
    rev: 0,
    runs: 0,
  });
}

/** Store `total` schedules of which `due` are due now; the rest are far in the future. */
async function seed(engine: Engine, total: number, due: number): Promise<void> {
  const now = await engine.store.now();
  const hour = 3_600_000;
  const dueAt = Math.floor(now / hour) * hour;
  const batch: Promise<unknown>[] = [];
  for (let i = 0; i < total; i++) {
    const at = i < due ? dueAt : dueAt + 30 * 24 * hour;
    batch.push(engine.store.putSchedule(schedule(`s${i}`, at)));
    if (batch.length === 500) await Promise.all(batch.splice(0));
  }
  await Promise.all(batch);
}

describe("cost (I4)", () => {
  it("submit is one Redis round trip, with or without admission control and events", async () => {
    // Bare: no degradation controller, no quota, no event stream (counters only).
    const bare = await setup("cost-submit-bare", {
      eventsMaxLen: 0,
      engine: { degradation: false },
    });
    // Events on (the default), still no admission control.
    const events = await setup("cost-submit-events", { engine: { degradation: false } });
    // Everything on: the default degradation policy and a three-window quota, events on.
    const full = await setup("cost-submit-full");
    const job = { handler: "work" as const, input: { a: 1 } };
    await full.engine.broker.submit(job, QUOTA_ACTOR); // first write of the quota counter

    const b = await measure(bare.counter, () => bare.engine.broker.submit(job));
    const e = await measure(events.counter, () => events.engine.broker.submit(job));
    const f = await measure(full.counter, () => full.engine.broker.submit(job, QUOTA_ACTOR));
    const replay = await measure(full.counter, async () => {
      const keyed = { ...job, idempotencyKey: "k" };
      await full.engine.broker.submit(keyed, QUOTA_ACTOR);
      await full.engine.broker.submit(keyed, QUOTA_ACTOR);
    });
    console.log("submit:", { bare: b, events: e, admissionAndEvents: f, "keyed + replay": replay });
    expect([b.roundTrips, e.roundTrips, f.roundTrips]).toEqual([1, 1, 1]);
    expect(replay.roundTrips).toBe(2);
    // Bare: EVALSHA, TIME, HSET + ZADD job, ZADD outbox (the job's first message: the entry, no
    // body), ZADD pending, 2 x HINCRBY.
    expect(b.billed).toBe(8);
    // + XADD of the `job.created` event.
    expect(e.billed).toBe(9);
    // + HMGET of the stored degradation level (evaluated less than `evaluateEveryMs` ago, by the
    // first submit: not evaluated again), GET + SET quota.
    expect(f.billed).toBe(12);
    // An idempotency key adds GET + SET; its replay is EVALSHA, TIME, GET key, HMGET first job.
    expect(replay.billed).toBe(f.billed + 2 + 4);
  });

  it("an idle tick is one round trip and at most 5 billed commands", async () => {
    const { engine, counter } = await setup("cost-idle");
    await seed(engine, 50, 0);
    const m = await measure(counter, () => engine.ticker.tick());
    console.log("idle tick:", m);
    expect(m.roundTrips).toBe(1);
    expect(m.billed).toBeLessThanOrEqual(5);
  });

  it("a worker delivery (beginRun + finishRun) is two round trips", async () => {
    const { engine, counter, queue } = await setup("cost-delivery");
    await engine.broker.submit({ handler: "work", input: null });
    const worker = (d: Parameters<typeof engine.runner.deliver>[0]) =>
      engine.runner.deliver(d).then(deliveryResponse);
    const dead = (d: Parameters<typeof engine.runner.dead>[0]) =>
      engine.runner.dead(d).then(deliveryResponse);
    const m = await measure(counter, () => queue.deliverSome(worker, dead, 1));
    console.log("worker delivery:", m);
    expect(queue.stats.delivered).toBe(1);
    expect(m.roundTrips).toBe(2);
    // beginRun 12: EVALSHA, TIME, GET + SET the delivery's token (replay guard), HMGET job,
    // ZREM pending, HSET job, ZADD + HSET the attempt's watch (the outbox message), HMGET + HSET
    // metrics, XADD. finishRun 14: EVALSHA, HMGET job, TIME, HDEL run lease, HSET job,
    // PEXPIRE + ZADD retention, ZCARD (the finished-jobs cap), ZREM + HDEL the watch,
    // HMGET + HSET metrics, XADD, ZRANGEBYSCORE sweep.
    expect(m.billed).toBe(26);
  });

  it("a tick costs the same with 10 and with 10,000 stored schedules (same number due)", async () => {
    // No look-ahead: in the last minute of an hour the next hourly occurrence would be due too.
    const small = await setup("cost-10", { engine: { tick: { horizonMs: 0 } } });
    const large = await setup("cost-10k", { engine: { tick: { horizonMs: 0 } } });
    await seed(small.engine, 10, 5);
    await seed(large.engine, 10_000, 5);
    const a = await measure(small.counter, () => small.engine.ticker.tick());
    const b = await measure(large.counter, () => large.engine.ticker.tick());
    console.log("tick with 5 due of 10:", a, "of 10,000:", b);
    expect(a.roundTrips).toBe(3);
    expect(b.roundTrips).toBe(a.roundTrips);
    expect(b.billed).toBe(a.billed);
    // With the engine's defaults: the leader evaluates the degradation controller and records
    // this instance as the new holder; 5 occurrences committed (an HMGET and an HSET per schedule;
    // due-index, outbox and backlog writes batched) with their 5 `job.dispatched` events; the end
    // acks them (TIME, one HMGET, one ZADD and one HSET turn them into watches) and records the
    // report.
    expect(a.billed).toBe(54);
  });
});

describe("a flow's check of its children's dependencies", () => {
  it("reads each distinct named job's status and tenant once, never the job whole", async () => {
    const { engine } = await setup("flowdeps");
    // 50 finished jobs with 10 KB inputs, named by every one of 20 children.
    const input = "x".repeat(10_000);
    const named: string[] = [];
    for (let i = 0; i < 50; i++) {
      named.push((await engine.broker.submit({ handler: "work", input })).job.id);
    }
    const bytesOut = async () =>
      Number(/total_net_output_bytes:(\d+)/.exec(await redis.info("stats"))?.[1]);
    const before = await bytesOut();
    const flow = await engine.broker.submitFlow({
      children: Array.from({ length: 20 }, () => ({ handler: "work", after: named })),
      parent: { handler: "work" },
    });
    const read = (await bytesOut()) - before;
    expect(flow.children).toHaveLength(20);
    // Reading the 50 jobs whole once per child was 20 × 50 × 10 KB = 10 MB; the flow's own
    // writes and answers are a few kilobytes per job.
    expect(read).toBeLessThan(500_000);
  });
});
