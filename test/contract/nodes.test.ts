/**
 * The node registry (the port's `NodeRegistry`) on every store: the memory store, the Redis store
 * over ioredis and over `@upstash/redis` through the REST bridge. Heartbeats upsert; a node is
 * `stale` once its TTL passes and dropped after 10 × its TTL, judged by the store's clock (tiny
 * TTLs, waiting on the listing, never a fixed sleep); `removeNode` deregisters; input outside the
 * bounds is refused with nothing written; a full registry evicts. The Redis part checks the keys
 * the scripts build against `keys.ts`, the bounded pruning and the scripts' own checks.
 */
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  NODE_LIMITS,
  type NodeInfo,
  type NodeRecord,
  type NodeRegistry,
  nodeRegistry,
} from "../../src/store/port.ts";
import { keys } from "../../src/store/redis/keys.ts";
import { scripts } from "../../src/store/redis/scripts.generated.ts";
import { makeRedisStore, REDIS_URL, type StoreHandle, storeFactories } from "../support/stores.ts";

function nodeInfo(overrides: Partial<NodeInfo> = {}): NodeInfo {
  return {
    id: "node-a",
    roles: ["api", "worker"],
    version: "1.2.3",
    handlers: ["email.send", "report"],
    capabilities: { region: "eu-west-1", gpu: "none" },
    concurrency: 10,
    inFlight: 2,
    transport: "streams",
    hostname: "host-1",
    pid: 4242,
    startedAt: 1_700_000_000_000,
    ...overrides,
  };
}

/** Wait (polling the listing) until `accept` holds for it; fails after `timeout`. */
async function listingWhere(
  registry: NodeRegistry,
  accept: (nodes: NodeRecord[]) => boolean,
  timeout = 5_000,
): Promise<NodeRecord[]> {
  return vi.waitFor(
    async () => {
      const nodes = await registry.listNodes();
      if (!accept(nodes)) throw new Error(`listing not there yet: ${JSON.stringify(nodes)}`);
      return nodes;
    },
    { timeout, interval: 5 },
  );
}

describe.each(storeFactories)("node registry on $name", (factory) => {
  let handle: StoreHandle;
  let registry: NodeRegistry;

  beforeEach(async () => {
    handle = await factory.make();
    const found = nodeRegistry(handle.store);
    if (!found) throw new Error(`${factory.name} keeps no node registry`);
    registry = found;
  });

  afterEach(async () => {
    await handle.cleanup();
  });

  it("upserts by id: the last heartbeat's fields, lastSeen from the store's clock", async () => {
    const before = await handle.store.now();
    await registry.heartbeatNode(nodeInfo(), 45_000);
    const [first] = await registry.listNodes();
    const after = await handle.store.now();
    expect(first).toEqual({
      ...nodeInfo(),
      lastSeen: first!.lastSeen,
      ttlMs: 45_000,
      status: "live",
    });
    expect(first!.lastSeen).toBeGreaterThanOrEqual(before);
    expect(first!.lastSeen).toBeLessThanOrEqual(after);

    await registry.heartbeatNode(nodeInfo({ inFlight: 7, capabilities: {} }), 30_000);
    await registry.heartbeatNode(nodeInfo({ id: "node-b", roles: ["tick"] }), 45_000);
    const nodes = await registry.listNodes();
    expect(nodes.map((n) => n.id)).toEqual(["node-a", "node-b"]);
    expect(nodes[0]).toMatchObject({ inFlight: 7, capabilities: {}, ttlMs: 30_000 });
    expect(nodes[0]!.lastSeen).toBeGreaterThanOrEqual(first!.lastSeen);
    expect(nodes[1]).toMatchObject({ roles: ["tick"], status: "live" });
  });

  it("reports a node stale once its TTL passes, then drops it after 10 × its TTL", async () => {
    // Long enough that the first listing is certainly within it on a loaded machine.
    const ttlMs = 1_000;
    await registry.heartbeatNode(nodeInfo({ id: "short" }), ttlMs);
    await registry.heartbeatNode(nodeInfo({ id: "long" }), 60_000);
    const [seen] = (await registry.listNodes()).filter((n) => n.id === "short");
    expect(seen!.status).toBe("live");

    const stale = await listingWhere(registry, (nodes) =>
      nodes.some((n) => n.id === "short" && n.status === "stale"),
    );
    const now = await handle.store.now();
    expect(now - seen!.lastSeen).toBeGreaterThan(ttlMs);
    expect(stale.find((n) => n.id === "short")!.lastSeen).toBe(seen!.lastSeen);
    expect(stale.find((n) => n.id === "long")!.status).toBe("live");

    const gone = await listingWhere(
      registry,
      (nodes) => !nodes.some((n) => n.id === "short"),
      30_000,
    );
    expect((await handle.store.now()) - seen!.lastSeen).toBeGreaterThanOrEqual(10 * ttlMs);
    expect(gone.map((n) => n.id)).toEqual(["long"]);

    // A heartbeat brings it back, live.
    await registry.heartbeatNode(nodeInfo({ id: "short" }), ttlMs);
    const back = await registry.listNodes();
    expect(back.find((n) => n.id === "short")?.status).toBe("live");
  }, 60_000);

  it("removeNode deregisters; an unknown id is ignored", async () => {
    await registry.heartbeatNode(nodeInfo({ id: "x" }), 45_000);
    await registry.heartbeatNode(nodeInfo({ id: "y" }), 45_000);
    await registry.removeNode("x");
    await registry.removeNode("never-registered");
    expect((await registry.listNodes()).map((n) => n.id)).toEqual(["y"]);
    await registry.removeNode("y");
    expect(await registry.listNodes()).toEqual([]);
  });

  it("refuses input outside the bounds and writes nothing", async () => {
    const long = "x".repeat(NODE_LIMITS.stringChars + 1);
    const tooManyCapabilities = Object.fromEntries(
      Array.from({ length: NODE_LIMITS.capabilities + 1 }, (_, i) => [`k${i}`, "v"]),
    );
    const refused: [Partial<NodeInfo>, number, RegExp][] = [
      [{ id: "" }, 1_000, /id must not be empty/],
      [{ id: "i".repeat(NODE_LIMITS.idChars + 1) }, 1_000, /id must be a string of at most 200/],
      [{ capabilities: tooManyCapabilities }, 1_000, /at most 32 entries/],
      [{ capabilities: { k: long } }, 1_000, /capabilities\.k must be a string of at most 200/],
      [{ capabilities: { [long]: "v" } }, 1_000, /capability name/],
      [{ capabilities: { k: 1 as unknown as string } }, 1_000, /capabilities\.k/],
      [{ hostname: long }, 1_000, /hostname/],
      [{ handlers: [long] }, 1_000, /handlers\[0\]/],
      [{ handlers: Array.from({ length: 257 }, (_, i) => `h${i}`) }, 1_000, /handlers/],
      [{ roles: Array.from({ length: 9 }, () => "api") }, 1_000, /roles/],
      [{ inFlight: -1 }, 1_000, /inFlight/],
      [{ pid: 1.5 }, 1_000, /pid/],
      [{}, 0, /ttlMs/],
      [{}, 1.5, /ttlMs/],
      [{}, NODE_LIMITS.maxTtlMs + 1, /ttlMs/],
      [{ handlers: Array.from({ length: 200 }, (_, i) => `${i}`.padEnd(199, "h")) }, 1, /bytes/],
    ];
    for (const [overrides, ttlMs, message] of refused) {
      await expect(registry.heartbeatNode(nodeInfo(overrides), ttlMs)).rejects.toThrow(message);
    }
    expect(await registry.listNodes()).toEqual([]);
    // At the bounds exactly: accepted.
    await registry.heartbeatNode(
      nodeInfo({
        id: "i".repeat(NODE_LIMITS.idChars),
        capabilities: Object.fromEntries(
          Array.from({ length: NODE_LIMITS.capabilities }, (_, i) => [`k${i}`, "v".repeat(200)]),
        ),
      }),
      NODE_LIMITS.maxTtlMs,
    );
    expect(await registry.listNodes()).toHaveLength(1);
  });

  it("keeps at most NODE_LIMITS.nodes: a new node evicts the one closest to being dropped", async () => {
    await registry.heartbeatNode(nodeInfo({ id: "n0000" }), 60_000);
    const ids = Array.from(
      { length: NODE_LIMITS.nodes - 1 },
      (_, i) => `n${String(i + 1).padStart(4, "0")}`,
    );
    for (let i = 0; i < ids.length; i += 100) {
      await Promise.all(
        ids.slice(i, i + 100).map((id) => registry.heartbeatNode(nodeInfo({ id }), 120_000)),
      );
    }
    expect(await registry.listNodes()).toHaveLength(NODE_LIMITS.nodes);
    await registry.heartbeatNode(nodeInfo({ id: "newcomer" }), 120_000);
    const nodes = await registry.listNodes();
    expect(nodes).toHaveLength(NODE_LIMITS.nodes);
    expect(nodes.some((n) => n.id === "n0000")).toBe(false);
    expect(nodes.some((n) => n.id === "newcomer")).toBe(true);
    // A known node's heartbeat evicts nobody.
    await registry.heartbeatNode(nodeInfo({ id: "n0001" }), 1_000);
    expect(await registry.listNodes()).toHaveLength(NODE_LIMITS.nodes);
  });
});

describe("node registry on Redis: keys, pruning, the scripts' own checks", () => {
  const redis = new Redis(REDIS_URL);
  afterAll(() => redis.disconnect());
  let handle: Awaited<ReturnType<typeof makeRedisStore>>;
  let registry: NodeRegistry;

  beforeEach(async () => {
    handle = await makeRedisStore(new Redis(REDIS_URL));
    registry = nodeRegistry(handle.store)!;
  });
  afterEach(() => handle.cleanup());

  it("writes exactly the keys keys.ts names, and removeNode leaves none", async () => {
    const k = keys(handle.prefix);
    await registry.heartbeatNode(nodeInfo(), 45_000);
    expect((await redis.keys(`{${handle.prefix}}:*`)).sort()).toEqual(
      [k.nodes, k.nodesExpiry].sort(),
    );
    const record = JSON.parse((await redis.hget(k.nodes, "node-a"))!);
    expect(Number(await redis.zscore(k.nodesExpiry, "node-a"))).toBe(record.lastSeen + 10 * 45_000);
    await registry.removeNode("node-a");
    expect(await redis.keys(`{${handle.prefix}}:*`)).toEqual([]);
  });

  it("prunes dropped nodes inside heartbeats, at most 100 per call", async () => {
    const k = keys(handle.prefix);
    // A TTL long enough that none is dropped (10 × TTL) while the 150 register, even on a loaded
    // machine: each heartbeat prunes dropped nodes.
    await Promise.all(
      Array.from({ length: 150 }, (_, i) =>
        registry.heartbeatNode(nodeInfo({ id: `old${i}` }), 500),
      ),
    );
    expect(await redis.hlen(k.nodes)).toBe(150);
    // Dropped (5 s after their heartbeat) but still stored until a heartbeat prunes them.
    await listingWhere(registry, (nodes) => nodes.length === 0, 30_000);
    expect(await redis.hlen(k.nodes)).toBe(150);
    await registry.heartbeatNode(nodeInfo({ id: "fresh" }), 45_000);
    expect(await redis.hlen(k.nodes)).toBe(51);
    expect(await redis.zcard(k.nodesExpiry)).toBe(51);
    await registry.heartbeatNode(nodeInfo({ id: "fresh" }), 45_000);
    expect(await redis.hkeys(k.nodes)).toEqual(["fresh"]);
    expect(await redis.zrange(k.nodesExpiry, 0, -1)).toEqual(["fresh"]);
  }, 60_000);

  it("the heartbeat script refuses a bad id, record or TTL by itself and writes nothing", async () => {
    const root = keys(handle.prefix).root;
    const run = (id: string, record: string, ttl: string) =>
      redis.evalsha(
        scripts.heartbeatNode.sha1,
        1,
        root,
        id,
        record,
        ttl,
        10,
        100,
        1000,
        600,
        32_768,
      );
    await redis.script("LOAD", scripts.heartbeatNode.source);
    expect(await run("", "{}", "1000")).toBe(0);
    expect(await run("x".repeat(601), "{}", "1000")).toBe(0);
    expect(await run("x", "[1]", "1000")).toBe(0);
    expect(await run("x", `{"a":"${"b".repeat(32_768)}"}`, "1000")).toBe(0);
    expect(await run("x", "{}", "0")).toBe(0);
    expect(await run("x", "{}", "1.5")).toBe(0);
    expect(await run("x", "{}", "soon")).toBe(0);
    expect(await redis.keys(`{${handle.prefix}}:*`)).toEqual([]);
    expect(await run("x", "{}", "1000")).toBe(1);
  });
});
