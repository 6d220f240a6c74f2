/**
 * A Redis Streams worker stops while Redis is unreachable: its blocking read is ended (ioredis
 * leaves a command on a reconnecting connection unanswered for good after `disconnect()`), and
 * every wait of `stop()` is bounded, so a SIGTERM ends the process instead of hanging until a
 * SIGKILL. On a private redis-server the test stops; ioredis as `tickwork start` opens it
 * (`maxRetriesPerRequest: 2`, reconnecting with a backoff).
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterEach, expect, it } from "vitest";
import { createEngine, PullWorker, silentLogger } from "../../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { startRedisServer } from "../support/redis-server.ts";

const opened: Redis[] = [];
afterEach(() => {
  for (const redis of opened.splice(0)) redis.disconnect();
});

it("a worker's stop ends while Redis is down, its blocking read included", async () => {
  const server = await startRedisServer();
  let stopped = false;
  try {
    const redis = new Redis(server.url, {
      maxRetriesPerRequest: 2,
      retryStrategy: (times) => Math.min(times * 100, 2_000),
    });
    opened.push(redis);
    let errors = 0;
    redis.on("error", () => errors++);
    const prefix = `down-${randomUUID()}`;
    const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
    const streams = new RedisStreams({ redis, prefix });
    const engine = createEngine({
      store,
      transport: streams,
      handlers: { echo: { run: (input: unknown) => input } },
      logger: silentLogger,
    });
    const worker = new PullWorker({ runner: engine.runner, queue: streams, concurrency: 2 });
    await worker.start();
    // The worker blocks in its read on a connection of its own.
    await expect
      .poll(async () => String(await redis.client("LIST")).match(/xreadgroup/i)?.length ?? 0)
      .toBeGreaterThan(0);
    await server.stop();
    stopped = true;
    // Reconnecting now, with the backoff `tickwork start` uses.
    await expect.poll(() => errors, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    // Ends: before, it waited on the read for good (the test's own timeout then failed it).
    expect(await worker.stop({ deadlineMs: 500 })).toEqual({ left: 0 });
    await streams.close();
  } finally {
    if (!stopped) await server.stop();
  }
});
