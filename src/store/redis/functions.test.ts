/**
 * Scripts as Redis 7 functions (`safeEval` over `fromIoredis`): each script is FCALLed as the
 * function of its own library, loaded on first use and again after the server lost it; a server
 * without FCALL, or a user not allowed FUNCTION, gets the same answers through EVALSHA/EVAL.
 */
import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { privateRedis } from "../../../test/support/billed-redis.ts";
import { commandsExecuted, startRedisServer } from "../../../test/support/redis-server.ts";
import { fromIoredis, functionLibrary, type LuaScript, safeEval } from "./script.ts";
import { scripts } from "./scripts.generated.ts";

const all = Object.values(scripts) as LuaScript[];

/** Calls by command since `before` (commandstats names: `fcall`, `function|load`, `evalsha`…). */
async function callsSince(
  redis: Redis,
  before: Map<string, number>,
): Promise<Record<string, number>> {
  const after = await commandsExecuted(redis);
  const out: Record<string, number> = {};
  for (const [cmd, calls] of after) {
    const d = calls - (before.get(cmd) ?? 0);
    if (d > 0 && cmd !== "info") out[cmd] = d;
  }
  return out;
}

describe("on Redis 7: FCALL", () => {
  const priv = privateRedis();
  const calls = async (fn: () => Promise<unknown>) =>
    Object.fromEntries((await priv.billed(fn)).byCommand);

  it("every generated script loads as a library (its helpers within the limits of Redis's Lua)", async () => {
    for (const script of all) {
      expect(await priv.redis.function("LOAD", "REPLACE", functionLibrary(script))).toMatch(
        new RegExp(`^tickwork_${script.name}_`),
      );
    }
    await priv.redis.function("FLUSH");
  });

  it("runs a script as a function, loading its library once, and again after FUNCTION FLUSH", async () => {
    const client = fromIoredis(priv.redis);
    const now = async () => Number(await safeEval(client, scripts.now, [], []));
    let first = 0;
    // The first FCALL finds no function (a failed call, which commandstats counts), loads, calls.
    expect(
      await calls(async () => {
        first = await now();
        expect(await now()).toBeGreaterThanOrEqual(first);
      }),
    ).toEqual({ "function|load": 1, fcall: 3, time: 2 });

    await priv.redis.function("FLUSH");
    expect(await calls(async () => expect(await now()).toBeGreaterThanOrEqual(first))).toEqual({
      "function|load": 1,
      fcall: 2,
      time: 1,
    });
  });

  it("helpers defined once read each call's KEYS and ARGV", async () => {
    const helpers = "local function both() return KEYS[1] .. ARGV[1] end\n";
    const source = `${helpers}return both()\n`;
    const script: LuaScript = {
      name: "probe",
      numberOfKeys: 1,
      source,
      sha1: createHash("sha1").update(source).digest("hex"),
      bodyStart: helpers.length,
    };
    const client = fromIoredis(priv.redis);
    const seen = await calls(async () => {
      expect(await safeEval(client, script, ["k1"], ["a1"])).toBe("k1a1");
      expect(await safeEval(client, script, ["k2"], ["a2"])).toBe("k2a2");
    });
    expect(seen).toMatchObject({ fcall: 3, "function|load": 1 });
  });
});

describe("over maxmemory (noeviction)", () => {
  it("a read-only script still runs as a function; one that writes is refused", async () => {
    expect(scripts.getJob.readOnly).toBe(true);
    expect(scripts.submitJob.readOnly).toBeUndefined();
    const server = await startRedisServer(20_000, ["--maxmemory-policy", "noeviction"]);
    const redis = new Redis(server.url);
    try {
      const client = fromIoredis(redis);
      // Loaded while there is room; then every byte is over the limit.
      for (const script of [scripts.getJob, scripts.now, scripts.streamStats]) {
        await redis.function("LOAD", "REPLACE", functionLibrary(script));
      }
      await redis.xadd("{tw}:q", "*", "w", "1");
      await redis.xgroup("CREATE", "{tw}:q", "tickwork", "0");
      await redis.config("SET", "maxmemory", "1");
      const before = await commandsExecuted(redis);
      expect(await safeEval(client, scripts.getJob, ["tw"], ["nope"])).toBeNull();
      expect(await callsSince(redis, before)).toMatchObject({ fcall: 1 });
      // The queue's figures too, when a growing backlog has filled Redis.
      expect(await safeEval(client, scripts.streamStats, ["{tw}"], [])).toEqual([1, 0, 0, 0, 0, 0]);
      // A function that may write is refused as a whole, as Redis refuses any unflagged one.
      const writer: LuaScript = {
        name: "writer",
        numberOfKeys: 1,
        source: "redis.call('SET', KEYS[1], 'x')\nreturn 1\n",
        sha1: "0".repeat(40),
        bodyStart: 0,
      };
      await redis.config("SET", "maxmemory", "0");
      await redis.function("LOAD", "REPLACE", functionLibrary(writer));
      await redis.config("SET", "maxmemory", "1");
      await expect(safeEval(client, writer, ["k"], [])).rejects.toThrow(/OOM/);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});

describe("without functions", () => {
  it("a server without FCALL: EVALSHA, and the client stops trying FCALL", async () => {
    const server = await startRedisServer(20_000, ["--rename-command", "FCALL", ""]);
    const redis = new Redis(server.url);
    try {
      const client = fromIoredis(redis);
      const before = await commandsExecuted(redis);
      for (let i = 0; i < 3; i++)
        expect(Number(await safeEval(client, scripts.now, [], []))).toBeGreaterThan(0);
      const calls = await callsSince(redis, before);
      expect(calls.fcall).toBeUndefined();
      expect(calls["function|load"]).toBeUndefined();
      // The first EVALSHA finds nothing cached (NOSCRIPT, counted) and EVAL caches it; FCALL,
      // renamed away, is an unknown command (rejected, not counted).
      expect(calls).toMatchObject({ evalsha: 3, eval: 1, time: 3 });
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it("a user not allowed FUNCTION: the script runs as EVAL", async () => {
    const server = await startRedisServer();
    const admin = new Redis(server.url);
    await admin.acl("SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-function");
    const redis = new Redis(server.url, { username: "app", password: "pw" });
    try {
      const client = fromIoredis(redis);
      const before = await commandsExecuted(admin);
      for (let i = 0; i < 2; i++)
        expect(Number(await safeEval(client, scripts.now, [], []))).toBeGreaterThan(0);
      const calls = await callsSince(admin, before);
      expect(calls["function|load"]).toBeUndefined();
      expect(calls).toMatchObject({ time: 2 });
      expect((calls.evalsha ?? 0) + (calls.eval ?? 0)).toBeGreaterThanOrEqual(2);
    } finally {
      redis.disconnect();
      admin.disconnect();
      await server.stop();
    }
  });

  it("a read-only replica: the library cannot load there, and a read-only script runs as EVAL", async () => {
    const primary = await startRedisServer();
    const replica = await startRedisServer(20_000, [
      "--replicaof",
      "127.0.0.1",
      String(primary.port),
    ]);
    const redis = new Redis(replica.url);
    try {
      const client = fromIoredis(redis);
      expect(Number(await safeEval(client, scripts.now, [], []))).toBeGreaterThan(0);
      expect(await redis.function("LIST")).toEqual([]);
    } finally {
      redis.disconnect();
      await replica.stop();
      await primary.stop();
    }
  });
});
