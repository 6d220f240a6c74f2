/**
 * `TICKWORK_HEARTBEAT_MS` and `TICKWORK_NODE_TTL_MS` (src/adapter/node/env.ts `parseHeartbeat`):
 * what they map to, what they refuse (a `ConfigError` naming the variable), and that a server
 * started with what they give registers with that TTL and heartbeats at that interval.
 */
import { describe, expect, it } from "vitest";
import type { NodeRegistry } from "../../store/port.ts";
import { HEARTBEAT_ENV_LIMITS, parseHeartbeat, serverOptionsFromEnv } from "./env.ts";
import { ConfigError } from "./errors.ts";
import { startServer } from "./start.ts";

function refusal(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("TICKWORK_HEARTBEAT_MS and TICKWORK_NODE_TTL_MS", () => {
  it("map onto startServer's heartbeat: the TTL is 3 × the interval unless set", () => {
    expect(parseHeartbeat(undefined, undefined)).toBeUndefined();
    expect(parseHeartbeat("300", undefined)).toEqual({ everyMs: 300, ttlMs: 900 });
    expect(parseHeartbeat("300", "1000")).toEqual({ everyMs: 300, ttlMs: 1_000 });
    // The TTL alone: startServer derives the interval (a third, at most 15 s).
    expect(parseHeartbeat(undefined, "1200")).toEqual({ ttlMs: 1_200 });
    expect(parseHeartbeat("100", undefined)).toEqual({ everyMs: 100, ttlMs: 300 });
    expect(parseHeartbeat("300000", undefined)).toEqual({ everyMs: 300_000, ttlMs: 900_000 });
    expect(parseHeartbeat("1000", "86400000")).toEqual({ everyMs: 1_000, ttlMs: 86_400_000 });

    const env = { TICKWORK_HEARTBEAT_MS: " 250 ", TICKWORK_NODE_TTL_MS: "1000" };
    expect(serverOptionsFromEnv(env, "dev").heartbeat).toEqual({ everyMs: 250, ttlMs: 1_000 });
    expect(serverOptionsFromEnv({}, "dev")).not.toHaveProperty("heartbeat");
    // Empty is unset, like every other variable.
    expect(serverOptionsFromEnv({ TICKWORK_HEARTBEAT_MS: "" }, "dev")).not.toHaveProperty(
      "heartbeat",
    );
  });

  it.each([
    ["0"],
    ["99"],
    ["300001"],
    ["-100"],
    ["1.5"],
    ["1e3"],
    ["0x100"],
    ["9".repeat(400)],
    ["Infinity"],
    ["NaN"],
    ["__proto__"],
    ["１０００"],
    ["1000\u{d800}"],
  ])("refuses TICKWORK_HEARTBEAT_MS=%j, naming the variable", (text) => {
    const error = refusal(() => serverOptionsFromEnv({ TICKWORK_HEARTBEAT_MS: text }, "dev"));
    expect(error).toMatchObject({ variable: "TICKWORK_HEARTBEAT_MS", field: "heartbeat" });
    expect(error.message).toMatch(
      /^TICKWORK_HEARTBEAT_MS must be a whole number of milliseconds from 100 to 300000, got "/,
    );
    // The value is quoted, cut short: an oversized value does not flood the log.
    expect(error.message.length).toBeLessThan(160);
  });

  it.each([["0"], ["299"], ["86400001"], ["-1"], ["2.5"], ["constructor"], [`1${"0".repeat(12)}`]])(
    "refuses TICKWORK_NODE_TTL_MS=%j, naming the variable",
    (text) => {
      const error = refusal(() => parseHeartbeat(undefined, text));
      expect(error).toMatchObject({ variable: "TICKWORK_NODE_TTL_MS", field: "heartbeat" });
      expect(error.message).toMatch(/from 300 to 86400000/);
    },
  );

  it("refuses a TTL that is not above the interval", () => {
    for (const [every, ttl] of [
      ["1000", "1000"],
      ["1000", "999"],
      ["5000", "300"],
    ] as const) {
      const error = refusal(() =>
        serverOptionsFromEnv({ TICKWORK_HEARTBEAT_MS: every, TICKWORK_NODE_TTL_MS: ttl }, "dev"),
      );
      expect(error).toMatchObject({ variable: "TICKWORK_NODE_TTL_MS", field: "heartbeat" });
      expect(error.message).toContain(`TICKWORK_NODE_TTL_MS (${ttl}) must be above`);
    }
    expect(parseHeartbeat("1000", "1001")).toEqual({ everyMs: 1_000, ttlMs: 1_001 });
  });

  it("every value it gives is one startServer accepts", async () => {
    const L = HEARTBEAT_ENV_LIMITS;
    for (const heartbeat of [
      parseHeartbeat(String(L.minEveryMs), undefined),
      parseHeartbeat(undefined, String(L.minTtlMs)),
      parseHeartbeat(String(L.maxEveryMs), undefined),
      parseHeartbeat(undefined, String(L.maxTtlMs)),
    ]) {
      const server = await startServer({
        handlers: {},
        dev: true,
        port: 0,
        signals: false,
        print: false,
        ...(heartbeat ? { heartbeat } : {}),
      });
      const registry = server.engine.store as unknown as NodeRegistry;
      expect((await registry.listNodes())[0]?.ttlMs).toBe(heartbeat?.ttlMs);
      await server.close();
    }
  });

  it("a server started from the environment heartbeats at that interval with that TTL", async () => {
    const server = await startServer({
      handlers: {},
      ...serverOptionsFromEnv(
        { TICKWORK_HEARTBEAT_MS: "100", TICKWORK_NODE_TTL_MS: "5000" },
        "dev",
      ),
      port: 0,
      signals: false,
      print: false,
    });
    try {
      const registry = server.engine.store as unknown as NodeRegistry;
      const [first] = await registry.listNodes();
      expect(first).toMatchObject({ ttlMs: 5_000, status: "live" });
      // Beats again within a few intervals (polled with a deadline: a busy machine is slow).
      const deadline = Date.now() + 5_000;
      let seen = first!.lastSeen;
      while (seen === first!.lastSeen && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        seen = (await registry.listNodes())[0]!.lastSeen;
      }
      expect(seen).toBeGreaterThan(first!.lastSeen);
    } finally {
      await server.close();
    }
  });
});
