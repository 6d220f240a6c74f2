/**
 * `tickwork redis-rest` in front of a read-only replica: it starts (the store refuses a replica,
 * whose writes all fail; the bridge serves its reads), answers a read with the primary's data
 * and a write with Redis's READONLY error. Two private redis-servers, the second a replica of the
 * first.
 */
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { type RedisRestServer, serveRedisRest } from "../../src/tools/redis-rest/index.ts";
import { type PrivateRedis, startRedisServer } from "../support/redis-server.ts";

const started: PrivateRedis[] = [];
let bridge: RedisRestServer | undefined;
afterAll(async () => {
  await bridge?.close();
  for (const server of started) await server.stop();
});

describe("redis-rest in front of a replica", () => {
  it("serves reads, and answers a write with Redis's READONLY", async () => {
    const primary = await startRedisServer();
    started.push(primary);
    const replica = await startRedisServer(20_000, [
      "--replicaof",
      "127.0.0.1",
      String(primary.port),
    ]);
    started.push(replica);
    const writer = new Redis(primary.url);
    const reader = new Redis(replica.url);
    try {
      await writer.set("k", "from the primary");
      await expect.poll(() => reader.get("k"), { timeout: 15_000 }).toBe("from the primary");
    } finally {
      writer.disconnect();
      reader.disconnect();
    }
    bridge = await serveRedisRest({
      redisUrl: replica.url,
      token: "replica-token",
      port: 0,
      signals: false,
      log: () => {},
    });
    const post = async (command: unknown[]) => {
      const res = await fetch(bridge!.url, {
        method: "POST",
        headers: { authorization: "Bearer replica-token", "content-type": "application/json" },
        body: JSON.stringify(command),
      });
      return { status: res.status, body: await res.json() };
    };
    expect(await post(["get", "k"])).toEqual({ status: 200, body: { result: "from the primary" } });
    const write = await post(["set", "k", "x"]);
    expect(write.status).toBe(400);
    expect(write.body.error).toMatch(/^READONLY /);
  }, 60_000);
});
