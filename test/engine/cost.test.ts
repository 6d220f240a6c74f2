/**
 * Cost is counted, not guessed (I4): round trips through a counting Redis client, and billed
 * commands (EVAL/EVALSHA plus every `redis.call` inside, as Upstash bills) from a private Redis's
 * `INFO commandstats`.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine, silentLogger } from "../../src/engine/index.ts";
import { fromIoredis, RedisStore, type ScriptClient } from "../../src/store/redis/index.ts";
import { scripts } from "../../src/store/redis/scripts.generated.ts";
import { scheduleRecord } from "../contract/fixtures.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { prng } from "../support/prng.ts";
import {
  billedBetween,
  commandsExecuted,
  type PrivateRedis,
  startRedisServer,
} from "../support/redis-server.ts";

/** Wraps a script client and counts calls: each is one round trip. */
function counting(client: ScriptClient) {
  const counter = { roundTrips: 0 };
  const wrapped: ScriptClient = {
    evalsha: (...args) => {
      counter.roundTrips++;
      return client.evalsha(...args);
    },
    eval: (...args) => {
      counter.roundTrips++;
      return client.eval(...args);
    },
  };
  return { client: wrapped, counter };
}

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

async function setup(prefix: string) {
  const { client, counter } = counting(fromIoredis(redis));
  const store = new RedisStore({ client, prefix });
  const engine = createEngine({
    store,
    transport: new ChaosQueue(prng(1)),
    handlers: { work: { run: () => null } },
    logger: silentLogger,
  });
  // Load every script, so counts below are steady-state (no NOSCRIPT → EVAL fallbacks).
  for (const script of Object.values(scripts)) await redis.script("LOAD", script.source);
  return { engine, store, counter };
}

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
  it("submit is one Redis round trip", async () => {
    const { engine, counter } = await setup("cost-submit");
    const m = await measure(counter, () =>
      engine.broker.submit({ handler: "work", input: { a: 1 } }),
    );
    const replay = await measure(counter, async () => {
      await engine.broker.submit({ handler: "work", idempotencyKey: "k" });
      await engine.broker.submit({ handler: "work", idempotencyKey: "k" });
    });
    console.log("submit:", m, "submit + replay:", replay);
    expect(m.roundTrips).toBe(1);
    expect(replay.roundTrips).toBe(2);
  });

  it("an idle tick is at most 3 round trips and at most 5 billed commands", async () => {
    const { engine, counter } = await setup("cost-idle");
    await seed(engine, 50, 0);
    const m = await measure(counter, () => engine.ticker.tick());
    console.log("idle tick:", m);
    expect(m.roundTrips).toBeLessThanOrEqual(3);
    expect(m.billed).toBeLessThanOrEqual(5);
  });

  it("a tick costs the same with 10 and with 10,000 stored schedules (same number due)", async () => {
    const small = await setup("cost-10");
    const large = await setup("cost-10k");
    await seed(small.engine, 10, 5);
    await seed(large.engine, 10_000, 5);
    const a = await measure(small.counter, () => small.engine.ticker.tick());
    const b = await measure(large.counter, () => large.engine.ticker.tick());
    console.log("tick with 5 due of 10:", a, "of 10,000:", b);
    expect(a.roundTrips).toBeGreaterThan(0);
    expect(b.roundTrips).toBe(a.roundTrips);
    expect(b.billed).toBe(a.billed);
  });
});
