/**
 * What the node registry costs, counted on a private Redis (`INFO commandstats`: EVALSHA plus
 * every `redis.call` inside, as Upstash bills): one round trip per operation; a heartbeat of a
 * registered node is 5 billed commands, so a node at the default period (15 s) costs 20 billed
 * commands a minute while idle. README's "Nodes" section quotes these figures.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_HEARTBEAT_MS } from "../../src/adapter/node/nodes.ts";
import type { NodeInfo } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { scripts } from "../../src/store/redis/scripts.generated.ts";
import { countingClient, withoutFunctions } from "../support/counting-client.ts";
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
  for (const script of Object.values(scripts)) await redis.script("LOAD", script.source);
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

const node = (id: string): NodeInfo => ({
  id,
  roles: ["api", "worker"],
  version: "1.0.0",
  handlers: ["email.send"],
  capabilities: { region: "eu" },
  concurrency: 10,
  inFlight: 0,
  transport: "streams",
  hostname: "host",
  pid: 1,
  startedAt: 0,
});

describe("node registry cost", () => {
  it("a heartbeat is one round trip and 5 billed commands: 20 a minute per idle node", async () => {
    const { client, counter } = countingClient(withoutFunctions(fromIoredis(redis)));
    const store = new RedisStore({ client, prefix: "cost-nodes" });
    const measure = async (fn: () => Promise<unknown>) => {
      const before = await commandsExecuted(redis);
      const trips = counter.roundTrips;
      await fn();
      return {
        roundTrips: counter.roundTrips - trips,
        billed: billedBetween(before, await commandsExecuted(redis)),
      };
    };

    // A new node: + ZCARD (the registry's cap).
    expect(await measure(() => store.heartbeatNode(node("a"), 45_000))).toEqual({
      roundTrips: 1,
      billed: 6,
    });
    // Steady state: EVALSHA, TIME, ZRANGEBYSCORE (prune), HSET, ZADD.
    const beats = 20;
    const steady = await measure(async () => {
      for (let i = 0; i < beats; i++) await store.heartbeatNode(node("a"), 45_000);
    });
    expect(steady).toEqual({ roundTrips: beats, billed: 5 * beats });
    const perMinute = (steady.billed / beats) * (60_000 / DEFAULT_HEARTBEAT_MS);
    expect(perMinute).toBe(20);

    // Pruning dropped nodes adds ZREM and HDEL (once, for up to 100 of them).
    await store.heartbeatNode(node("gone"), 1);
    await expect
      .poll(async () => (await store.listNodes()).some((n) => n.id === "gone"), { interval: 5 })
      .toBe(false);
    expect(await measure(() => store.heartbeatNode(node("a"), 45_000))).toEqual({
      roundTrips: 1,
      billed: 7,
    });

    // Reads and deregistration: EVALSHA, TIME, HVALS; EVALSHA, ZREM, HDEL.
    expect(await measure(() => store.listNodes())).toEqual({ roundTrips: 1, billed: 3 });
    expect(await measure(() => store.removeNode("a"))).toEqual({ roundTrips: 1, billed: 3 });
  });
});
