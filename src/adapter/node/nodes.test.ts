import { afterEach, describe, expect, it, vi } from "vitest";
import type { Logger } from "../../engine/logger.ts";
import { MemoryStore } from "../../store/memory/index.ts";
import type { NodeInfo, NodeRegistry } from "../../store/port.ts";
import { parseCapabilities, serverOptionsFromEnv } from "./env.ts";
import { ConfigError, StartError } from "./errors.ts";
import { heartbeatSettings, packageVersion, startNodeHeartbeat } from "./nodes.ts";
import { startServer } from "./start.ts";

function recordingLogger() {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const log =
    (level: string) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      lines.push({ level, msg, ...(fields ? { fields } : {}) });
    };
  const logger: Logger = {
    debug: log("debug"),
    info: log("info"),
    warn: log("warn"),
    error: log("error"),
    child: () => logger,
  };
  return { logger, lines };
}

const info = (inFlight = 0): NodeInfo => ({
  id: "n1",
  roles: ["all"],
  version: "1.0.0",
  handlers: [],
  capabilities: {},
  concurrency: 0,
  inFlight,
  transport: "local",
  hostname: "h",
  pid: 1,
  startedAt: 0,
});

describe("TICKWORK_CAPABILITIES", () => {
  it("reads a JSON object of strings", () => {
    expect(parseCapabilities('{"region":"eu-west-1","gpu":"a100"}')).toEqual({
      region: "eu-west-1",
      gpu: "a100",
    });
    expect(parseCapabilities(undefined)).toBeUndefined();
    expect(
      serverOptionsFromEnv({ TICKWORK_CAPABILITIES: ' {"zone":"b"} ' }, "dev").capabilities,
    ).toEqual({ zone: "b" });
  });

  it.each([
    ["{region:eu}", /TICKWORK_CAPABILITIES is not JSON/],
    ['["a"]', /TICKWORK_CAPABILITIES must be a JSON object of strings/],
    ['"eu"', /must be a JSON object of strings/],
    ['{"gpu":1}', /"gpu" must be a string, got number/],
    ['{"gpu":null}', /"gpu" must be a string, got null/],
    ['{"":"x"}', /names must be 1 to 200 characters/],
    [`{"k":"${"v".repeat(201)}"}`, /"k" must be at most 200 characters/],
    [
      JSON.stringify(Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, "v"]))),
      /at most 32 entries, got 33/,
    ],
  ])("refuses %s with a ConfigError naming the variable", (text, message) => {
    let failed: unknown;
    try {
      parseCapabilities(text);
    } catch (error) {
      failed = error;
    }
    expect(failed).toBeInstanceOf(ConfigError);
    expect((failed as Error).message).toMatch(message);
    expect(failed).toMatchObject({ variable: "TICKWORK_CAPABILITIES", field: "capabilities" });
  });

  it("startServer refuses bad capabilities or heartbeat settings before opening anything", async () => {
    const base = { handlers: {}, dev: true, port: 0, signals: false, print: false } as const;
    const bad = await startServer({ ...base, capabilities: { gpu: 1 as never } }).catch(
      (error: unknown) => error,
    );
    expect(bad).toBeInstanceOf(StartError);
    expect(bad).toMatchObject({ field: "capabilities" });
    const slow = await startServer({ ...base, heartbeat: { everyMs: 5_000, ttlMs: 5_000 } }).catch(
      (error: unknown) => error,
    );
    expect(slow).toMatchObject({ field: "heartbeat" });
    expect((slow as Error).message).toMatch(/everyMs must be .* below ttlMs \(5000\)/);
  });
});

describe("heartbeat settings", () => {
  it("default to every 15 s with a TTL of 45 s, three beats per TTL when only the TTL is set", () => {
    expect(heartbeatSettings({})).toEqual({ everyMs: 15_000, ttlMs: 45_000 });
    expect(heartbeatSettings({ ttlMs: 3_000 })).toEqual({ everyMs: 1_000, ttlMs: 3_000 });
    expect(heartbeatSettings({ ttlMs: 0 })).toMatch(/ttlMs must be/);
    expect(heartbeatSettings({ everyMs: 0 })).toMatch(/everyMs must be/);
  });

  it("reads the package version", () => {
    expect(packageVersion()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

/** A heartbeat of process `pid` under node id `n1` into `store` (every 1 s, TTL 3 s), and its log. */
async function heartbeatAs(store: MemoryStore, pid: number) {
  const { logger, lines } = recordingLogger();
  const beating = await startNodeHeartbeat({
    registry: store,
    info: () => ({ ...info(), pid }),
    everyMs: 1_000,
    ttlMs: 3_000,
    logger,
  });
  return { beating, lines };
}

describe("startNodeHeartbeat", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("beats before it resolves, then every everyMs, never after stop(), which deregisters", async () => {
    vi.useFakeTimers();
    const store = new MemoryStore();
    const calls: number[] = [];
    const registry: NodeRegistry = {
      heartbeatNode: (node, ttlMs) => {
        calls.push(node.inFlight);
        return store.heartbeatNode(node, ttlMs);
      },
      removeNode: (id) => store.removeNode(id),
      listNodes: () => store.listNodes(),
    };
    let inFlight = 0;
    const { logger } = recordingLogger();
    const beating = await startNodeHeartbeat({
      registry,
      info: () => info(inFlight++),
      everyMs: 1_000,
      ttlMs: 3_000,
      logger,
    });
    expect(calls).toEqual([0]);
    expect((await store.listNodes()).map((n) => n.id)).toEqual(["n1"]);
    await vi.advanceTimersByTimeAsync(999);
    expect(calls).toEqual([0]);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toEqual([0, 1]);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(calls).toEqual([0, 1, 2, 3]);
    expect((await store.listNodes())[0]).toMatchObject({ inFlight: 3, ttlMs: 3_000 });

    await beating.stop();
    expect(await store.listNodes()).toEqual([]);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls).toHaveLength(4);
    expect(await store.listNodes()).toEqual([]);
  });

  it("two processes under one node id: each warns once, and neither's graceful stop removes the entry the other beats under", async () => {
    vi.useFakeTimers();
    const store = new MemoryStore();
    const start = (pid: number) => heartbeatAs(store, pid);
    const a = await start(1);
    await vi.advanceTimersByTimeAsync(500);
    const b = await start(2);
    await vi.advanceTimersByTimeAsync(3_000);
    for (const { lines } of [a, b]) {
      const warned = lines.filter((l) => l.level === "warn");
      expect(warned).toHaveLength(1);
      expect(warned[0]!.msg).toMatch(/TICKWORK_NODE_ID/);
    }
    // B beat last: its stop leaves the entry A still beats under; A's stop leaves it too (the
    // registry drops it once silent: neither knows the other has gone).
    expect((await store.listNodes()).map((n) => n.pid)).toEqual([2]);
    await b.beating.stop();
    expect((await store.listNodes()).map((n) => n.pid)).toEqual([2]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await store.listNodes()).map((n) => n.pid)).toEqual([1]);
    await a.beating.stop();
    expect((await store.listNodes()).map((n) => n.status)).toEqual(["live"]);
  });

  it("one started long after: the first warns within 20 beats, the second at its second", async () => {
    vi.useFakeTimers();
    const store = new MemoryStore();
    const start = (pid: number) => heartbeatAs(store, pid);
    const warnings = (lines: { level: string }[]) => lines.filter((l) => l.level === "warn");
    const a = await start(1);
    await vi.advanceTimersByTimeAsync(5_500);
    const b = await start(2);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(warnings(b.lines)).toHaveLength(1);
    expect(warnings(a.lines)).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(14_000);
    expect(warnings(a.lines)).toHaveLength(1);
    // Warned once each, however long they run.
    await vi.advanceTimersByTimeAsync(60_000);
    expect([warnings(a.lines).length, warnings(b.lines).length]).toEqual([1, 1]);
    await a.beating.stop();
    await b.beating.stop();
  });

  it("a process restarted under the id of one that crashed does not warn", async () => {
    vi.useFakeTimers();
    const store = new MemoryStore();
    // The crashed process's entry, still live for its TTL.
    await store.heartbeatNode({ ...info(), pid: 9 }, 3_000);
    const { logger, lines } = recordingLogger();
    const beating = await startNodeHeartbeat({
      registry: store,
      info: () => ({ ...info(), pid: 3 }),
      everyMs: 1_000,
      ttlMs: 3_000,
      logger,
    });
    await vi.advanceTimersByTimeAsync(3_000);
    expect(lines.filter((l) => l.level === "warn")).toEqual([]);
    await beating.stop();
    expect(await store.listNodes()).toEqual([]);
  });

  it("logs a failed heartbeat once per outage, never throws, and beats on", async () => {
    vi.useFakeTimers();
    let down = true;
    const store = new MemoryStore();
    const registry: NodeRegistry = {
      heartbeatNode: async (node, ttlMs) => {
        if (down) throw new Error("ECONNREFUSED");
        return store.heartbeatNode(node, ttlMs);
      },
      removeNode: async () => {
        if (down) throw new Error("ECONNREFUSED");
      },
      listNodes: () => store.listNodes(),
    };
    const { logger, lines } = recordingLogger();
    const beating = await startNodeHeartbeat({
      registry,
      info: () => info(),
      everyMs: 100,
      ttlMs: 300,
      logger,
    });
    await vi.advanceTimersByTimeAsync(500);
    expect(lines.map((l) => `${l.level} ${l.msg}`)).toEqual([
      "warn tickwork: node heartbeat failed; retrying on the next one",
    ]);
    expect(lines[0]!.fields).toMatchObject({ node: "n1", error: "Error: ECONNREFUSED" });
    down = false;
    await vi.advanceTimersByTimeAsync(100);
    expect(lines.at(-1)?.msg).toBe("tickwork: node heartbeat recovered");
    expect((await store.listNodes()).map((n) => n.id)).toEqual(["n1"]);
    down = true;
    await beating.stop();
    expect(lines.at(-1)?.msg).toBe("tickwork: could not deregister the node");
  });
});

describe("startServer in the node registry", () => {
  it("registers itself before it resolves and deregisters when closed", async () => {
    const server = await startServer({
      handlers: { "email.send": { run: () => null }, report: { run: () => null } },
      dev: true,
      port: 0,
      signals: false,
      print: false,
      capabilities: { region: "test" },
      engine: { instanceId: "node-under-test" },
    });
    // `startServer` opens its own store (memory here): read the registry through its engine.
    const registry = server.engine.store as unknown as NodeRegistry;
    const [node] = await registry.listNodes();
    expect(node).toMatchObject({
      id: "node-under-test",
      roles: ["all"],
      handlers: ["email.send", "report"],
      capabilities: { region: "test" },
      concurrency: 0,
      inFlight: 0,
      transport: "local",
      pid: process.pid,
      version: packageVersion(),
      status: "live",
      ttlMs: 45_000,
    });
    await server.close();
    expect(await registry.listNodes()).toEqual([]);
  });
});
