/**
 * Job dependencies end to end on Redis Streams (ADR 0014): C waits for A and B and runs only after
 * both succeeded — released inside the finishing script, straight onto the stream — and a failed
 * dependency cancels its dependents, which never run.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { NonRetryableError } from "../../src/core/errors.ts";
import { defineHandlers } from "../../src/engine/handlers.ts";
import { createEngine, type Engine, PullWorker, silentLogger } from "../../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { REDIS_URL } from "../support/stores.ts";

const redis = new Redis(REDIS_URL);
afterAll(() => redis.disconnect());
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

async function until(check: () => Promise<boolean> | boolean, what: string, ms = 20_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("job dependencies on Redis Streams", () => {
  it("C waits for A and B, and runs only after both succeeded", async () => {
    const prefix = `deps-${randomUUID()}`;
    const gates = new Map<string, () => void>();
    const ran: string[] = [];
    let seenAtC: (string | undefined)[] = [];
    let engine!: Engine;
    const handlers = defineHandlers({
      gated: {
        run: async (input: unknown) => {
          const name = (input as { name: string }).name;
          ran.push(name);
          await new Promise<void>((resolve) => gates.set(name, resolve));
          return name;
        },
      },
      last: {
        run: async (input: unknown) => {
          ran.push("C");
          const { a, b } = input as { a: string; b: string };
          const [ja, jb] = await Promise.all([engine.broker.getJob(a), engine.broker.getJob(b)]);
          seenAtC = [ja.status, jb.status];
          return "done";
        },
      },
    });
    const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
    const streams = new RedisStreams({ redis, prefix, backoff: () => 50, maintainEveryMs: 100 });
    engine = createEngine({ store, transport: streams, handlers, logger: silentLogger });
    const worker = new PullWorker({ runner: engine.runner, queue: streams, concurrency: 4 });
    stops.push(async () => {
      await worker.stop({ deadlineMs: 1_000 });
      await streams.close();
    });

    const a = (await engine.broker.submit({ handler: "gated", input: { name: "A" } })).job;
    const b = (await engine.broker.submit({ handler: "gated", input: { name: "B" } })).job;
    const c = (
      await engine.broker.submit({
        handler: "last",
        input: { a: a.id, b: b.id },
        after: [a.id, b.id],
      })
    ).job;
    expect(c.status).toBe("waiting");
    // Only A and B are on the stream.
    expect((await streams.stats()).length).toBe(2);
    expect((await engine.stats()).jobs).toMatchObject({ waiting: 1, queued: 2 });
    await worker.start();
    await until(() => gates.has("A") && gates.has("B"), "A and B running");
    gates.get("A")?.();
    await until(async () => (await engine.broker.getJob(a.id)).status === "succeeded", "A done");
    expect((await engine.broker.getJob(c.id)).status).toBe("waiting");
    expect(ran).not.toContain("C");
    gates.get("B")?.();
    await until(async () => (await engine.broker.getJob(c.id)).status === "succeeded", "C done");
    expect(seenAtC).toEqual(["succeeded", "succeeded"]);
    expect(ran.filter((r) => r === "C")).toHaveLength(1);
    expect((await engine.stats()).jobs).toMatchObject({ waiting: 0, queued: 0 });
    // Nothing went through the outbox: the release put C on the stream itself.
    expect(await redis.zcard(`{${prefix}}:outbox`)).toBe(0);
  });

  it("a dead dependency cancels the chain after it; nothing of it runs", async () => {
    const prefix = `deps-${randomUUID()}`;
    const ran: string[] = [];
    const handlers = defineHandlers({
      fail: {
        run: async () => {
          throw new NonRetryableError("no");
        },
      },
      ok: {
        run: async (input: unknown) => {
          ran.push((input as { name: string }).name);
        },
      },
    });
    const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
    const streams = new RedisStreams({ redis, prefix, backoff: () => 50, maintainEveryMs: 100 });
    const engine = createEngine({ store, transport: streams, handlers, logger: silentLogger });
    const worker = new PullWorker({ runner: engine.runner, queue: streams, concurrency: 4 });
    stops.push(async () => {
      await worker.stop({ deadlineMs: 1_000 });
      await streams.close();
    });
    const a = (await engine.broker.submit({ handler: "fail", retries: 0 })).job;
    const b = (await engine.broker.submit({ handler: "ok", input: { name: "B" }, after: [a.id] }))
      .job;
    const c = (await engine.broker.submit({ handler: "ok", input: { name: "C" }, after: [b.id] }))
      .job;
    const d = (
      await engine.broker.submit({
        handler: "ok",
        input: { name: "D" },
        after: [b.id],
        onFailure: "run",
      })
    ).job;
    await worker.start();
    await until(async () => (await engine.broker.getJob(d.id)).status === "succeeded", "D ran");
    expect((await engine.broker.getJob(a.id)).status).toBe("dead");
    expect((await engine.broker.getJob(b.id)).status).toBe("cancelled");
    expect((await engine.broker.getJob(c.id)).status).toBe("cancelled");
    expect(ran).toEqual(["D"]);
  });
});
