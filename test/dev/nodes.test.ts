/**
 * `tickwork start` in the node registry, as a process: it has registered by the time its banner
 * prints (the first heartbeat comes before it), with its pid, roles, handlers, capabilities from
 * `TICKWORK_CAPABILITIES` and its Streams worker's concurrency; `GET /v1/nodes` lists it; SIGTERM
 * deregisters it before the process exits.
 */
import { Redis } from "ioredis";
import { afterAll, describe, expect, test } from "vitest";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { deletePrefix, REDIS_URL, randomPrefix, startDevServer } from "./server.ts";

const API_KEY = "nodes-test-key";

describe("tickwork start in the node registry", () => {
  const redis = new Redis(REDIS_URL);
  const prefix = randomPrefix();
  afterAll(async () => {
    redis.disconnect();
    await deletePrefix(prefix);
  });

  test("registers before its banner and deregisters on SIGTERM", async () => {
    const store = new RedisStore({ client: fromIoredis(redis), prefix });
    const server = await startDevServer({
      command: { cli: ["start", "--host", "127.0.0.1"] },
      env: {
        REDIS_URL,
        TICKWORK_PREFIX: prefix,
        TICKWORK_API_KEY: API_KEY,
        TICKWORK_CAPABILITIES: '{"region":"test-1","gpu":"none"}',
      },
    });
    try {
      // No waiting: the banner is printed after the first heartbeat.
      const [node] = await store.listNodes();
      expect(node).toMatchObject({
        status: "live",
        pid: server.pid,
        roles: ["all"],
        transport: "streams",
        concurrency: 10,
        inFlight: 0,
        capabilities: { region: "test-1", gpu: "none" },
        ttlMs: 45_000,
      });
      expect(node!.handlers.length).toBeGreaterThan(0);
      expect(node!.id).toMatch(/^tw-/);

      const res = await fetch(`${server.url}/v1/nodes`, {
        headers: { authorization: `Bearer ${API_KEY}` },
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { nodes: { id: string }[]; deployment: string };
      expect(body.deployment).toBe("node");
      expect(body.nodes.map((n) => n.id)).toEqual([node!.id]);
    } finally {
      expect(await server.stop()).toBe(0);
    }
    expect(await store.listNodes()).toEqual([]);
    expect(await redis.exists(`{${prefix}}:nodes`, `{${prefix}}:nodes:expiry`)).toBe(0);
  });

  test("leaves the registry as soon as SIGTERM comes, while a request in flight still holds it up", async () => {
    const store = new RedisStore({ client: fromIoredis(redis), prefix });
    const server = await startDevServer({
      command: { cli: ["start", "--host", "127.0.0.1"] },
      env: { REDIS_URL, TICKWORK_PREFIX: prefix, TICKWORK_API_KEY: API_KEY },
    });
    const headers = { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" };
    let exited = false;
    try {
      // A job no node can run, and its event stream, open once its headers are answered: a
      // request the shutdown waits for, up to its timeout.
      const submitted = await fetch(`${server.url}/v1/jobs`, {
        method: "POST",
        headers,
        body: JSON.stringify({ handler: "echo", placement: { capabilities: { gpu: "none" } } }),
      });
      const { id } = (await submitted.json()) as { id: string };
      const stream = await fetch(`${server.url}/v1/jobs/${id}/stream`, { headers });
      expect(stream.status).toBe(200);
      expect(await store.listNodes()).toHaveLength(1);
      const stopped = server.stop().then((code) => {
        exited = true;
        return code;
      });
      // Before, it went on beating, listed live, until the stream ended with the drain.
      await expect.poll(() => store.listNodes(), { timeout: 8_000 }).toEqual([]);
      expect(exited).toBe(false);
      await stream.body?.cancel();
      expect(await stopped).toBe(0);
    } finally {
      await server.stop();
    }
  });
});
