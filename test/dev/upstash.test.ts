/**
 * `UPSTASH_REDIS_REST_URL=… npm run dev`: the dev server keeps its state in "Upstash" — the REST
 * bridge (`tickwork redis-rest`), started here in-process in front of the local Redis — and runs
 * jobs and schedules on it, through `@upstash/redis` as on Workers and Vercel.
 */
import { Redis as IORedis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createClient, type TickworkClient } from "../../src/client/index.ts";
import { type RedisRestServer, serveRedisRest } from "../../src/tools/redis-rest/index.ts";
import {
  type DevServer,
  deletePrefix,
  REDIS_URL,
  randomPrefix,
  startDevServer,
  waitFor,
} from "./server.ts";

const TOKEN = `dev-${Math.random().toString(36).slice(2)}`;

describe.concurrent("npm run dev with UPSTASH_REDIS_REST_URL", () => {
  const prefix = randomPrefix();
  let bridge: RedisRestServer;
  let server: DevServer;
  let client: TickworkClient;

  beforeAll(async () => {
    bridge = await serveRedisRest({
      redisUrl: REDIS_URL,
      token: TOKEN,
      port: 0,
      signals: false,
      log: () => {},
    });
    server = await startDevServer({
      command: "npm",
      env: {
        UPSTASH_REDIS_REST_URL: bridge.url,
        UPSTASH_REDIS_REST_TOKEN: TOKEN,
        TICKWORK_PREFIX: prefix,
      },
    });
    client = createClient({ url: server.url });
  });

  afterAll(async () => {
    await server?.stop();
    await bridge?.close();
    await deletePrefix(prefix);
  });

  test("the banner says the store is Upstash over REST", () => {
    expect(server.banner).toContain(
      `  store      upstash ${new URL(bridge.url).href} (REST; key prefix "${prefix}")\n`,
    );
    expect(server.banner).toContain(`transport  local queue, delivers to ${server.url}/v1/worker`);
  });

  test("echo returns its input, and its record is in Redis behind the bridge", async () => {
    const job = await client.jobs.submit({ handler: "echo", input: { over: "rest" } });
    expect(await job.result({ timeout: "10s" })).toEqual({ over: "rest" });
    const redis = new IORedis(REDIS_URL);
    try {
      expect(await redis.exists(`{${prefix}}:j:${job.id}`)).toBe(1);
    } finally {
      redis.disconnect();
    }
  });

  test('a "1s" schedule runs once a second, each with a distinct fireAt', async () => {
    const s = await client.schedules.create({ handler: "echo", schedule: "1s", input: "tick" });
    const runs = await waitFor(async () => {
      const page = await client.jobs.list({ scheduleId: s.id, status: "succeeded" }).toArray();
      return page.length >= 3 ? page : undefined;
    }, "3 successful runs");
    await s.delete();
    const fires = runs.map((run) => Date.parse(run.fireAt ?? "")).sort((a, b) => a - b);
    expect(new Set(fires).size).toBe(fires.length);
    for (let i = 1; i < fires.length; i++) expect(fires[i]! - fires[i - 1]!).toBe(1000);
    for (const run of runs) expect(run).toMatchObject({ attempts: 1, result: "tick" });
  });
});
