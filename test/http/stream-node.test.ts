/**
 * The realtime stream on the Node server as `tickwork start` runs it (`startServer`), on Redis over
 * TCP with the Redis Streams transport: the store blocks on the event stream on a connection of
 * its own (`XREAD BLOCK`), a client follows a `sleep` job through `queued → running → succeeded`
 * to its result, and closing the server lets go of that connection too.
 */
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { handlers } from "../../functions/handlers.ts";
import { startServer } from "../../src/adapter/node/index.ts";
import { createClient } from "../../src/client/index.ts";
import { silentLogger } from "../../src/engine/index.ts";

const REDIS_URL = "redis://127.0.0.1:6379";

describe("GET /v1/jobs/:id/stream on startServer with Redis over TCP", () => {
  const prefix = `sn${Math.random().toString(36).slice(2, 10)}`;
  const redis = new Redis(REDIS_URL);
  let close: (() => Promise<void>) | undefined;

  afterEach(async () => {
    await close?.();
    const keys = await redis.keys(`{${prefix}}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it("follows a sleep job to its result, blocking on the event stream", async () => {
    const server = await startServer({
      handlers,
      dev: true,
      port: 0,
      hostname: "127.0.0.1",
      signals: false,
      print: false,
      redisUrl: REDIS_URL,
      prefix,
      engine: { logger: silentLogger },
    });
    close = () => server.close();
    expect(server.engine.store.waitForEvents).toBeDefined();
    const client = createClient<typeof handlers>({ url: server.url });
    const job = await client.jobs.submit({ handler: "sleep", input: { ms: 100 } });
    const seen: string[] = [];
    for await (const update of job.updates()) {
      if (update.type === "status") seen.push(update.status);
      if (update.type === "done") seen.push(`done:${JSON.stringify(update.job.result)}`);
    }
    expect(seen).toEqual(["queued", "running", "succeeded", 'done:{"slept":100}']);
    await server.close();
    close = undefined;
  });
});
