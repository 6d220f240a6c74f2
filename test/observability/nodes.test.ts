/**
 * `GET /v1/nodes` and the `tickwork_nodes` gauges of `/metrics` over a real socket, on the memory
 * store and on Redis: nodes that heartbeat are listed live, then stale once their TTL passes
 * (waiting on the answer, never a fixed sleep); the route follows `/v1/stats`'s guard (a key
 * with the `read` scope, whatever its tenant); serverless platforms and stores without a
 * registry answer an empty list with a note, and `/metrics` then has no `tickwork_nodes`.
 */
import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTickwork } from "../../src/adapter/cloudflare/tickwork.ts";
import { createVercelApp } from "../../src/adapter/vercel/app.ts";
import { TickworkError } from "../../src/core/errors.ts";
import type { Scope } from "../../src/engine/broker.ts";
import type { Authorize } from "../../src/http/index.ts";
import { renderNodeMetrics } from "../../src/http/prometheus.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { NodeInfo, NodeRegistry, Store } from "../../src/store/port.ts";
import {
  call,
  expectProblem,
  type Harness,
  startHarness,
  testHandlers,
  until,
} from "../http/harness.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import { parsePrometheus, sampleValue } from "./prometheus-parser.ts";

const factories = storeFactories.filter((f) => f.name === "memory" || f.name === "redis");

const KEYS: Record<string, { tenant: string; scopes: Scope[] }> = {
  reader: { tenant: "t1", scopes: ["read"] },
  otherTenant: { tenant: "t2", scopes: ["read"] },
  writer: { tenant: "t1", scopes: ["jobs:write", "schedules:write"] },
};
const authorize: Authorize = (c) => {
  const key = /^Bearer (\S+)$/.exec(c.req.header("authorization") ?? "")?.[1];
  const actor = key === undefined ? undefined : KEYS[key];
  if (!actor) throw new TickworkError(401, "unauthorized", "missing or invalid API key");
  return actor;
};

function nodeInfo(id: string, overrides: Partial<NodeInfo> = {}): NodeInfo {
  return {
    id,
    roles: ["api", "worker"],
    version: "9.9.9",
    handlers: ["echo"],
    capabilities: { region: "eu" },
    concurrency: 10,
    inFlight: 3,
    transport: "streams",
    hostname: "box",
    pid: 77,
    startedAt: Date.UTC(2026, 0, 1),
    ...overrides,
  };
}

describe.each(factories)("GET /v1/nodes on $name", (factory) => {
  let handle: StoreHandle;
  let registry: NodeRegistry;
  const servers: Harness[] = [];

  async function start(options: Partial<Parameters<typeof startHarness>[0]> = {}) {
    const h = await startHarness({
      store: handle.store,
      handlers: testHandlers().handlers,
      ...options,
    });
    servers.push(h);
    return h;
  }

  async function nodeGauges(h: Harness, headers: Record<string, string> = {}) {
    const res = await call(h.origin, "GET", "/metrics", { headers });
    expect(res.status).toBe(200);
    const families = parsePrometheus(res.body as string);
    const family = families.get("tickwork_nodes");
    if (!family) return undefined;
    expect(family.type).toBe("gauge");
    return {
      live: sampleValue(families, "tickwork_nodes", { status: "live" }),
      stale: sampleValue(families, "tickwork_nodes", { status: "stale" }),
    };
  }

  beforeEach(async () => {
    handle = await factory.make();
    registry = handle.store as Store & NodeRegistry;
  });

  afterEach(async () => {
    await Promise.all(servers.splice(0).map((h) => h.close()));
    await handle.cleanup();
  });

  it("lists the nodes that heartbeat, live then stale, with the gauges following", async () => {
    const h = await start({ app: { platform: "node" } });
    const empty = await call(h.origin, "GET", "/v1/nodes");
    expect(empty.status).toBe(200);
    expect(empty.headers.get("cache-control")).toBe("no-store");
    expect(empty.body).toEqual({ nodes: [], deployment: "node" });
    expect(await nodeGauges(h)).toEqual({ live: 0, stale: 0 });

    await registry.heartbeatNode(nodeInfo("node-b"), 60_000);
    await registry.heartbeatNode(nodeInfo("node-a", { transport: "local", inFlight: 0 }), 150);
    const listed = await call(h.origin, "GET", "/v1/nodes");
    expect(listed.body.deployment).toBe("node");
    expect(listed.body.nodes.map((n: { id: string }) => n.id)).toEqual(["node-a", "node-b"]);
    const b = listed.body.nodes[1];
    expect(b).toEqual({
      id: "node-b",
      status: "live",
      roles: ["api", "worker"],
      version: "9.9.9",
      handlers: ["echo"],
      capabilities: { region: "eu" },
      concurrency: 10,
      inFlight: 3,
      transport: "streams",
      hostname: "box",
      pid: 77,
      startedAt: "2026-01-01T00:00:00.000Z",
      lastSeen: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      ttlMs: 60_000,
    });
    expect(Math.abs(Date.parse(b.lastSeen) - (await handle.store.now()))).toBeLessThan(5_000);

    // node-a's 150 ms TTL passes: stale in the listing and in the gauges.
    await until(async () => {
      const res = await call(h.origin, "GET", "/v1/nodes");
      return res.body.nodes[0]?.status === "stale";
    });
    // Stale until dropped, 1.5 s after its heartbeat.
    expect(await nodeGauges(h)).toEqual({ live: 1, stale: 1 });
    // …then dropped: no longer listed, nor counted.
    await until(async () => (await call(h.origin, "GET", "/v1/nodes")).body.nodes.length === 1);
    expect(await nodeGauges(h)).toEqual({ live: 1, stale: 0 });
  });

  it("follows /v1/stats's guard: the read scope of any tenant sees the same fleet", async () => {
    const h = await start({ app: { dev: false, authorize, tickSecret: "tick" } });
    await registry.heartbeatNode(nodeInfo("node-a"), 60_000);
    expectProblem(await call(h.origin, "GET", "/v1/nodes"), 401);
    expectProblem(
      await call(h.origin, "GET", "/v1/nodes", { headers: { authorization: "Bearer writer" } }),
      403,
      /read/,
    );
    for (const key of ["reader", "otherTenant"]) {
      const res = await call(h.origin, "GET", "/v1/nodes", {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(res.status).toBe(200);
      expect(res.body.nodes.map((n: { id: string }) => n.id)).toEqual(["node-a"]);
      expect(res.body.deployment).toBe("custom");
    }
    expect(await nodeGauges(h, { authorization: "Bearer reader" })).toEqual({ live: 1, stale: 0 });
  });

  it("is served to the observer and api roles, not to tick or worker", async () => {
    for (const [roles, status] of [
      [["observer"], 200],
      [["api"], 200],
      [["worker"], 404],
    ] as const) {
      const h = await start({ app: { roles: [...roles] } });
      expect((await call(h.origin, "GET", "/v1/nodes")).status, roles.join()).toBe(status);
    }
  });

  it.each(["cloudflare", "vercel"] as const)(
    "on %s (serverless) answers no nodes with a note, and /metrics has no node gauges",
    async (platform) => {
      await registry.heartbeatNode(nodeInfo("somewhere-else"), 60_000);
      const h = await start({ app: { platform } });
      const res = await call(h.origin, "GET", "/v1/nodes");
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        nodes: [],
        deployment: platform,
        note: expect.stringMatching(/serverless: no long-lived nodes/),
      });
      expect(await nodeGauges(h)).toBeUndefined();
    },
  );
});

describe("GET /v1/nodes on a store without a registry", () => {
  it("answers no nodes with a note, and /metrics has no node gauges", async () => {
    // A third-party store written before the registry: the Store methods only.
    const memory = new MemoryStore();
    const hidden = new Set<PropertyKey>(["heartbeatNode", "removeNode", "listNodes"]);
    const store = new Proxy(memory, {
      get(target, name) {
        if (hidden.has(name)) return undefined;
        const value = Reflect.get(target, name, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as Store;
    const h = await startHarness({ store, handlers: testHandlers().handlers });
    try {
      const res = await call(h.origin, "GET", "/v1/nodes");
      expect(res.body).toEqual({
        nodes: [],
        deployment: "custom",
        note: "this store keeps no node registry",
      });
      const metrics = await call(h.origin, "GET", "/metrics");
      expect(parsePrometheus(metrics.body as string).has("tickwork_nodes")).toBe(false);
    } finally {
      await h.close();
    }
  });
});

describe("the README's node metrics table", () => {
  it("lists exactly the families renderNodeMetrics writes", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const table = readme.slice(readme.indexOf("| node metric (`tickwork_…`)"));
    const rows = table.slice(0, table.indexOf("\n\n")).split("\n").slice(2);
    const listed = rows.flatMap((row) =>
      [...(row.split(/(?<!\\)\|/)[1] ?? "").matchAll(/`([a-z_]+)[{`]/g)].map(
        (m) => `tickwork_${m[1]}`,
      ),
    );
    const families = parsePrometheus(renderNodeMetrics({ live: 2, stale: 1 }));
    expect(listed).toEqual([...families.keys()]);
    expect(sampleValue(families, "tickwork_nodes", { status: "stale" })).toBe(1);
  });
});

describe("GET /v1/nodes on the serverless entries", () => {
  // The route answers without reading the store: clients that fail if they are ever called.
  const unreachable = () => {
    throw new Error("the store must not be read");
  };
  const handlers = { echo: { run: () => null } };
  const qstash = { token: "q", currentSigningKey: "c", nextSigningKey: "n" };
  const auth = { headers: { authorization: "Bearer key-1" } };

  it("createTickwork (Workers) reports cloudflare", async () => {
    const tickwork = createTickwork({
      handlers,
      redis: { eval: unreachable, evalsha: unreachable },
      qstash,
      publicUrl: "https://tickwork.example.workers.dev",
      apiKeys: "key-1",
      tickSecret: "cron",
    });
    const res = await tickwork.app.request("/v1/nodes", auth);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ nodes: [], deployment: "cloudflare" });
  });

  it("createVercelApp reports vercel", async () => {
    const app = createVercelApp(
      {
        UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9",
        UPSTASH_REDIS_REST_TOKEN: "t",
        QSTASH_TOKEN: "q",
        QSTASH_CURRENT_SIGNING_KEY: "c",
        QSTASH_NEXT_SIGNING_KEY: "n",
        TICKWORK_PUBLIC_URL: "https://app.example.com",
        CRON_SECRET: "cron",
        TICKWORK_API_KEY: "key-1",
      },
      { handlers },
    );
    const res = await app.request("/v1/nodes", auth);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      nodes: [],
      deployment: "vercel",
      note: expect.stringMatching(/^vercel is serverless: no long-lived nodes/),
    });
  });
});
