/**
 * `serveRedisRest` with options the bridge refuses (a token with a space, which no client could
 * present): it rejects, and closes the connections it opened for the bridge, which would keep
 * the process alive. A private redis-server counts its clients.
 */
import { Redis as IORedis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveRedisRest } from "../../src/tools/redis-rest/index.ts";
import { type PrivateRedis, startPrivateRedis } from "./harness.ts";

let server: PrivateRedis;
let admin: IORedis;

beforeAll(async () => {
  server = await startPrivateRedis();
  admin = new IORedis(server.url);
});

afterAll(async () => {
  admin?.disconnect();
  await server?.stop();
});

const clients = async () =>
  String(await admin.client("LIST"))
    .trim()
    .split("\n").length;

describe("serveRedisRest refused", () => {
  it("rejects a token with a space and leaves no connection open", async () => {
    const before = await clients();
    await expect(
      serveRedisRest({ redisUrl: server.url, token: "two words", port: 0, signals: false }),
    ).rejects.toThrow(/without spaces/);
    // The server sees a closed connection when it reads it: ask until it has.
    await expect.poll(clients, { timeout: 5_000 }).toBe(before);
  });
});
