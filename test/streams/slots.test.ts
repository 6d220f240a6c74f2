/**
 * The `PullWorker`'s slots on a real Redis: a delivery holds a slot until its handler returns, so
 * the next pull goes out while earlier outcomes are still being recorded; at most `concurrency`
 * handlers run at once, and at most as many deliveries more are finishing.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine, PullWorker, silentLogger } from "../../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { REDIS_URL } from "../support/stores.ts";

const redis = new Redis(REDIS_URL);
afterAll(() => redis.disconnect());

describe("PullWorker slots", () => {
  it("runs new handlers while earlier outcomes are being recorded, never more than concurrency at once", async () => {
    const prefix = `slots-${randomUUID()}`;
    const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
    // Recording an outcome waits for the gate: the store is real, its finishes are held back.
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    let held = 0;
    const gated = new Proxy(store, {
      get(target, key) {
        if (key === "finishRun") {
          return async (...args: Parameters<RedisStore["finishRun"]>) => {
            held++;
            await gate;
            return target.finishRun(...args);
          };
        }
        const value = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const streams = new RedisStreams({ redis, prefix });
    let active = 0;
    let peak = 0;
    let started = 0;
    let fourStarted!: () => void;
    const four = new Promise<void>((resolve) => {
      fourStarted = resolve;
    });
    const engine = createEngine({
      store: gated,
      transport: streams,
      handlers: {
        work: {
          run: async () => {
            active++;
            peak = Math.max(peak, active);
            if (++started === 4) fourStarted();
            await new Promise((resolve) => setImmediate(resolve));
            active--;
          },
        },
      },
      logger: silentLogger,
    });
    for (let n = 0; n < 6; n++) await engine.broker.submit({ handler: "work", input: { n } });
    // No read-ahead: this counts what is pulled for free slots alone (read-ahead.test.ts).
    const worker = new PullWorker({
      runner: engine.runner,
      queue: streams,
      concurrency: 2,
      readAhead: 0,
    });
    await worker.start();
    try {
      // Two ran and wait to be recorded: their slots are free, so two more were pulled and ran.
      await four;
      while (held < 4) await new Promise((resolve) => setImmediate(resolve));
      // Four are finishing: no more is pulled (two round trips to Redis give a pull that went
      // out anyway time to come back).
      await redis.ping();
      await redis.ping();
      expect(worker.stats()).toMatchObject({ pulled: 4, inFlight: 4 });
      expect(started).toBe(4);
      openGate();
      // Succeeded in the store, then acknowledged by the worker (acks go in batches).
      while ((await engine.stats()).totals.succeeded < 6 || worker.stats().acked < 6) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(started).toBe(6);
      expect(peak).toBe(2);
      expect(worker.stats()).toMatchObject({ acked: 6, failed: 0 });
    } finally {
      openGate();
      await worker.stop({ deadlineMs: 1_000 });
      await streams.close();
    }
  });
});
