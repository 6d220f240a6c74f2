/**
 * The Redis Streams queue against what it did not write and against its own peers: a malformed
 * delayed body, a consumer leaving the group, and a retry whose entry another consumer acked.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine, type Engine, PullWorker, silentLogger } from "../../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { keys } from "../../src/store/redis/keys.ts";
import { REDIS_URL } from "../support/stores.ts";

const redis = new Redis(REDIS_URL);
afterAll(() => redis.disconnect());

async function until(check: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function rig(prefix: string, handlers = { ok: { run: async () => "done" } }) {
  const streams = new RedisStreams({ redis, prefix, claimIdleMs: 200, maintainEveryMs: 50 });
  const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
  const engine: Engine = createEngine({
    store,
    transport: streams,
    handlers,
    logger: silentLogger,
  });
  return { streams, engine, stream: `${keys(prefix).root}:q` };
}

async function consumers(stream: string): Promise<number> {
  const groups = (await redis.xinfo("GROUPS", stream)) as unknown[][];
  const g = groups[0] as unknown[];
  return Number(g[g.indexOf("consumers") + 1]);
}

async function consumerList(stream: string): Promise<Record<string, unknown>[]> {
  const list = (await redis.xinfo("CONSUMERS", stream, "tickwork")) as unknown[][];
  return list.map((c) => {
    const out: Record<string, unknown> = {};
    for (let i = 0; i + 1 < c.length; i += 2) out[String(c[i])] = c[i + 1];
    return out;
  });
}

async function consumerNames(stream: string): Promise<string[]> {
  return (await consumerList(stream)).map((c) => String(c.name)).sort();
}

/** How long `name` has not read (ms), by the server's clock; -1 when it is not in the group. */
async function idleMs(stream: string, name: string): Promise<number> {
  const c = (await consumerList(stream)).find((x) => x.name === name);
  return c ? Number(c.idle) : -1;
}

describe("Redis Streams, robustness", () => {
  it("a malformed delayed body is dropped; the workers keep running and nothing is copied twice", async () => {
    const prefix = `rob-${randomUUID()}`;
    const { streams, engine, stream } = rig(prefix);
    await redis.zadd(`${stream}:delayed`, 1, "bad", 2, "worse");
    await redis.hset(`${stream}:bodies`, "bad", "garbage", "worse", "");
    const { job } = await engine.broker.submit({ handler: "ok", delay: 1 });
    const worker = new PullWorker({ runner: engine.runner, queue: streams, idleWaitMs: 1_000 });
    await worker.start();
    await until(
      async () => (await engine.broker.getJob(job.id)).status === "succeeded",
      "the job behind the bad bodies",
    );
    await worker.stop({ deadlineMs: 1_000 });
    expect(await redis.zcard(`${stream}:delayed`)).toBe(0);
    expect(await redis.hlen(`${stream}:bodies`)).toBe(0);
    expect(await redis.xlen(stream)).toBe(0);
    await streams.close();
  });

  it("a consumer that stops with nothing pending leaves the group; one holding a delivery stays", async () => {
    const prefix = `rob-${randomUUID()}`;
    const a = rig(prefix);
    const b = rig(prefix);
    await a.engine.broker.submit({ handler: "ok" });
    await a.engine.broker.submit({ handler: "ok" });
    await a.streams.open();
    const held = await a.streams.pull(1, 100);
    expect(held).toHaveLength(1);
    // b reads the other delivery (which makes it a consumer of the group) and is done with it.
    const [done] = await b.streams.pull(1, 100);
    await b.streams.ack([done!.id]);
    expect(await consumers(a.stream)).toBe(2);
    await b.streams.close();
    expect(await consumers(a.stream)).toBe(1);
    // a holds an unacknowledged delivery: leaving would discard it, so it stays.
    await a.streams.close();
    expect(await consumers(a.stream)).toBe(1);
    expect((await redis.xpending(a.stream, "tickwork")) as unknown[]).toContain(1);
  });

  it("a takeover that empties a killed consumer's pending list deletes the consumer", async () => {
    const prefix = `rob-${randomUUID()}`;
    const killed = rig(prefix);
    const b = rig(prefix);
    await killed.engine.broker.submit({ handler: "ok" });
    await killed.streams.open();
    expect(await killed.streams.pull(1, 100)).toHaveLength(1);
    // Its process dies holding the delivery (no ack, no close). Once the delivery has been
    // pending claimIdleMs (200), b's next pull takes it over. (The consumer read no later than
    // the delivery was handed to it, so it has been idle at least as long.)
    await until(
      async () =>
        (await redis.xpending(killed.stream, "tickwork", "IDLE", 200, "-", "+", 10)).length === 1,
      "the delivery idle for claimIdleMs",
    );
    const taken = await b.streams.pull(1, 100);
    expect(taken.map((m) => m.claimed)).toEqual([true]);
    expect(await consumerNames(killed.stream)).toEqual([b.streams.consumer]);
    await b.streams.ack([taken[0]!.id]);
    await b.streams.close();
  });

  it("a consumer that stops deletes the others that hold nothing and have not read for claimIdleMs", async () => {
    const prefix = `rob-${randomUUID()}`;
    const idle = rig(prefix);
    const holding = rig(prefix);
    const stopping = rig(prefix);
    await idle.engine.broker.submit({ handler: "ok" });
    await idle.engine.broker.submit({ handler: "ok" });
    await idle.streams.open();
    // Both processes die without leaving: `idle` after finishing its delivery, `holding` while
    // it still holds one.
    const [done] = await idle.streams.pull(1, 100);
    await idle.streams.ack([done!.id]);
    expect(await holding.streams.pull(1, 100)).toHaveLength(1);
    await until(async () => (await idleMs(idle.stream, idle.streams.consumer)) >= 200, "idle");
    await until(
      async () => (await idleMs(idle.stream, holding.streams.consumer)) >= 200,
      "holding idle",
    );
    // A third process that read nothing stops: the consumer that holds nothing goes; the one
    // holding a delivery stays for its takeover (deleting it would discard the delivery).
    await stopping.streams.close();
    expect(await consumerNames(idle.stream)).toEqual([holding.streams.consumer]);
    expect((await redis.xpending(idle.stream, "tickwork")) as unknown[]).toContain(1);
  });

  it("a retry is put back even when another consumer acknowledged its entry meanwhile", async () => {
    const prefix = `rob-${randomUUID()}`;
    const a = rig(prefix);
    const { job } = await a.engine.broker.submit({ handler: "ok" });
    await a.streams.open();
    const [message] = await a.streams.pull(1, 100);
    // Another consumer (say, one frozen past its lease that woke up) acknowledges the entry.
    await rig(prefix).streams.ack([message!.id]);
    await a.streams.retryLater(message!, 60_000, 1);
    expect(await redis.zscore(`${a.stream}:delayed`, job.id)).not.toBeNull();
    await a.streams.close();
  });
});
