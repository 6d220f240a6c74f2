/**
 * Scripts through the bridge stay in its one database. Database 3 of a private redis-server holds
 * a secret written straight with ioredis; scripts try to read it (and to reach past the bridge's
 * allowlist) every way we could think of: `select` in any case, computed names, `redis.pcall`,
 * `loadstring`, `_G`, coroutines; by EVAL, EVALSHA (after SCRIPT LOAD), EVAL_RO, in `/pipeline`,
 * in `/multi-exec`, and from `@upstash/redis`. None may see it, and database 3 stays as it was.
 * Ordinary scripts, tickwork's computed command names included, behave as on Redis.
 */
import { createHash } from "node:crypto";
import { errors, type Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedisRestBridge } from "../../src/tools/redis-rest/index.ts";
import { type PrivateBridge, privateBridge } from "./harness.ts";

const { UpstashError } = errors;
const SECRET = "db3-secret-value";
const sha1 = (text: string) => createHash("sha1").update(text).digest("hex");

let env: PrivateBridge;

beforeAll(async () => {
  env = await privateBridge();
  await env.direct(3).set("secret", SECRET);
  await env.direct(3).set("other", "db3-other");
  await env.direct(0).set("canary", "db0");
});

afterAll(async () => {
  await env?.stop();
});

/** Scripts that try to leave database 0 (or run a command the bridge refuses). */
const ESCAPES: Record<string, string> = {
  "select, lower case": "redis.call('select', 3) return redis.call('get', 'secret')",
  "SELECT, upper case": "redis.call('SELECT', '3') return redis.call('GET', 'secret')",
  "SeLeCt, mixed case": "redis.call('SeLeCt', 3) return redis.call('get', 'secret')",
  "a computed name": "redis.call('sel'..'ect', 3) return redis.call('get', 'secret')",
  "string.char":
    "redis.call(string.char(115,101,108,101,99,116), 3) return redis.call('get','secret')",
  "string.reverse, upper":
    "redis.call(('tceles'):reverse():upper(), 3) return redis.call('get','secret')",
  "redis.pcall, then read":
    "local r = redis.pcall('select', 3) return {r and r.err or 'selected', redis.call('get', 'secret')}",
  "pcall(redis.call)":
    "local ok = pcall(redis.call, 'select', 3) return {tostring(ok), redis.call('get', 'secret')}",
  "a name from ARGV": "redis.call(ARGV[1], 3) return redis.call('get', 'secret')",
  loadstring: "return loadstring(\"redis.call('select', 3) return redis.call('get', 'secret')\")()",
  load: "local chunk = \"redis.call('select', 3) return redis.call('get', 'secret')\" local done = false return load(function() if done then return nil end done = true return chunk end)()",
  "_G.redis": "_G.redis.call('select', 3) return _G.redis.call('get', 'secret')",
  "rawget(_G)": "local r = rawget(_G, 'redis') r.call('select', 3) return r.call('get', 'secret')",
  "getmetatable(redis)": "local m = getmetatable(redis) return m.__index.call('select', 3)",
  "a coroutine":
    "return coroutine.wrap(function() redis.call('select', 3) return redis.call('get', 'secret') end)()",
  swapdb: "redis.call('swapdb', 0, 3) return redis.call('get', 'secret')",
  move: "return redis.call('move', 'canary', 3)",
  "copy … db": "return redis.call('copy', 'canary', 'copied', 'DB', 3)",
  flushall: "return redis.call('flushall')",
};

/**
 * What an escape answers: an error for most; the two that catch the refusal with pcall return it
 * (and nil for the secret, read from database 0).
 */
const CAUGHT: Record<string, unknown> = {
  "redis.pcall, then read": [
    expect.stringMatching(/^ERR Command is not available: 'SELECT'/),
    null,
  ],
  "pcall(redis.call)": ["false", null],
};
const REFUSED_IN_SCRIPT =
  /Command is not available: '(SELECT|SWAPDB|MOVE|COPY … DB|FLUSHALL)'|ERR (loadstring|load) is not available|attempt to (index|call)/;

/** No answer may carry database 3's data. */
function expectNoSecret(answer: unknown, what: string): void {
  expect(JSON.stringify(answer), what).not.toContain(SECRET);
  expect(JSON.stringify(answer), what).not.toContain("db3-other");
}

async function expectDatabasesUntouched(): Promise<void> {
  const db3 = env.direct(3);
  expect(await db3.get("secret")).toBe(SECRET);
  expect(await db3.dbsize()).toBe(2);
  expect(await env.direct(0).get("canary")).toBe("db0");
  expect(await env.direct(0).exists("copied", "secret")).toBe(0);
}

describe("a script cannot reach another database", () => {
  it("EVAL, EVAL_RO and EVALSHA (after SCRIPT LOAD) on POST /: an error, never the data", async () => {
    for (const [what, body] of Object.entries(ESCAPES)) {
      const loaded = await env.post("/", ["script", "load", body]);
      expect(loaded).toEqual({ status: 200, json: { result: sha1(body) } });
      for (const [name, script] of [
        ["eval", body],
        ["eval_ro", body],
        ["evalsha", sha1(body)],
        ["EVALSHA_RO", sha1(body)],
      ]) {
        const { status, json } = await env.post("/", [name, script, 0, "select"]);
        expectNoSecret(json, `${name}: ${what}`);
        if (what in CAUGHT) {
          expect({ status, json }, `${name}: ${what}`).toEqual({
            status: 200,
            json: { result: CAUGHT[what] },
          });
        } else {
          expect(status, `${name}: ${what}`).toBe(400);
          expect((json as { error: string }).error, `${name}: ${what}`).toMatch(REFUSED_IN_SCRIPT);
        }
      }
    }
    await expectDatabasesUntouched();
  });

  it("in /pipeline and in /multi-exec: an {error} entry, never the data", async () => {
    const escapes = Object.entries(ESCAPES);
    const answers = escapes.map(([what]) =>
      what in CAUGHT
        ? { result: CAUGHT[what] }
        : { error: expect.stringMatching(REFUSED_IN_SCRIPT) },
    );
    for (const name of ["eval", "evalsha"]) {
      const pipeline = await env.post(
        "/pipeline",
        escapes.map(([, body]) => [name, name === "eval" ? body : sha1(body), 0, "select"]),
      );
      expect(pipeline.status).toBe(200);
      expectNoSecret(pipeline.json, `pipeline ${name}`);
      expect(pipeline.json).toEqual(answers);
    }
    for (const [i, [what, body]] of escapes.entries()) {
      const tx = await env.post("/multi-exec", [
        ["set", "tx-ran", "yes"],
        ["eval", body, 0, "select"],
        ["evalsha", sha1(body), 0, "select"],
        ["get", "secret"],
      ]);
      expectNoSecret(tx.json, `multi-exec: ${what}`);
      expect(tx, what).toEqual({
        status: 200,
        json: [{ result: "OK" }, answers[i], answers[i], { result: null }],
      });
    }
    await expectDatabasesUntouched();
  });

  it("@upstash/redis: eval, evalRo, createScript and transactions get errors, never the data", async () => {
    for (const enableAutoPipelining of [true, false]) {
      const redis: Redis = env.client({ enableAutoPipelining, automaticDeserialization: false });
      for (const [what, body] of Object.entries(ESCAPES)) {
        const answers = await Promise.all([
          redis.eval(body, [], ["select"]).catch((e: unknown) => e),
          redis.evalRo(body, [], ["select"]).catch((e: unknown) => e),
          redis
            .createScript(body)
            .exec([], ["select"])
            .catch((e: unknown) => e),
        ]);
        for (const answer of answers) {
          expectNoSecret(answer instanceof Error ? answer.message : answer, what);
          if (what in CAUGHT) expect(answer, what).toEqual(CAUGHT[what]);
          else {
            expect(answer, what).toBeInstanceOf(UpstashError);
            expect((answer as Error).message, what).toMatch(REFUSED_IN_SCRIPT);
          }
        }
        const tx = redis.multi();
        tx.eval(body, [], ["select"]);
        tx.get("secret");
        const outcomes = await tx.exec({ keepErrors: true });
        expectNoSecret(outcomes, what);
        if (what in CAUGHT) expect(outcomes[0]?.result, what).toEqual(CAUGHT[what]);
        else expect(outcomes[0]?.error, what).toMatch(REFUSED_IN_SCRIPT);
        expect(outcomes[1]).toEqual({ result: null, error: undefined });
      }
    }
    await expectDatabasesUntouched();
  });

  it("a script loaded straight into Redis is not run by its SHA-1 through the bridge", async () => {
    const body = "redis.call('select', 3) return redis.call('get', 'secret')";
    // Loaded behind the bridge's back (as another client could): Redis has it, unwrapped.
    const sha = (await env.direct(0).script("LOAD", body)) as string;
    expect(await env.direct(0).evalsha(sha, 0)).toBe(SECRET);
    const fresh = await privateBridgeApp();
    for (const name of ["evalsha", "EVALSHA_RO"]) {
      const { status, json } = await fresh("/", [name, sha, 0]);
      expect(status).toBe(400);
      expect(json).toEqual({ error: "NOSCRIPT No matching script. Please use EVAL." });
    }
    expect(await fresh("/", ["script", "exists", sha])).toEqual({
      status: 200,
      json: { result: [0] },
    });
    const pipeline = await fresh("/pipeline", [["evalsha", sha.toUpperCase(), 0]]);
    expect(pipeline.json).toEqual([{ error: "NOSCRIPT No matching script. Please use EVAL." }]);
    const tx = await fresh("/multi-exec", [
      ["evalsha", sha, 0],
      ["get", "canary"],
    ]);
    expect(tx.json).toEqual([
      { error: "NOSCRIPT No matching script. Please use EVAL." },
      { result: "db0" },
    ]);
    expectNoSecret([pipeline, tx], "straight");
    await expectDatabasesUntouched();
  });
});

describe("ordinary scripts behave as on Redis", () => {
  it("SCRIPT LOAD answers the script's own SHA-1; EVALSHA, SCRIPT EXISTS and NOSCRIPT follow it", async () => {
    const body = `return {KEYS[1], ARGV[1], redis.call('get', 'canary')} -- ${Math.random()}`;
    expect(await env.post("/", ["script", "exists", sha1(body), "f".repeat(40)])).toEqual({
      status: 200,
      json: { result: [0, 0] },
    });
    expect(await env.post("/", ["evalsha", sha1(body), 1, "k", "a"])).toEqual({
      status: 400,
      json: { error: "NOSCRIPT No matching script. Please use EVAL." },
    });
    expect(await env.post("/", ["SCRIPT", "LOAD", body])).toEqual({
      status: 200,
      json: { result: sha1(body) },
    });
    expect(await env.post("/", ["script", "exists", sha1(body), "f".repeat(40)])).toEqual({
      status: 200,
      json: { result: [1, 0] },
    });
    for (const name of ["evalsha", "evalsha_ro"]) {
      expect(await env.post("/", [name, sha1(body).toUpperCase(), 1, "k", "a"])).toEqual({
        status: 200,
        json: { result: ["k", "a", "db0"] },
      });
    }
    // SCRIPT FLUSH straight on Redis: the bridge passes Redis's NOSCRIPT on, and EVAL reloads.
    await env.direct(0).script("FLUSH");
    expect((await env.post("/", ["evalsha", sha1(body), 1, "k", "a"])).json).toEqual({
      error: "NOSCRIPT No matching script. Please use EVAL.",
    });
    const redis = env.client();
    expect(await redis.createScript(body).exec(["k"], ["a"])).toEqual(["k", "a", "db0"]);
    expect(await redis.scriptExists(sha1(body))).toEqual([1]);
  });

  it("computed command names, Lua's select(), the word select in data, shebang flags", async () => {
    const redis = env.client();
    // tickwork's store does this (includes/members.lua): the command name in a variable.
    const members = "local cmd = ARGV[1] return redis.call(cmd, KEYS[1], 'a', 'b')";
    await redis.sadd("set", "a", "b", "c");
    expect(await redis.eval(members, ["set"], ["srem"])).toBe(2);
    expect(await redis.eval("return select('#', 1, 2, 3)", [], [])).toBe(3);
    expect(
      await redis.eval(
        "-- select the value\nredis.call('set', KEYS[1], 'select') return redis.call('get', KEYS[1])",
        ["selected"],
        [],
      ),
    ).toBe("select");
    expect(await redis.eval("return redis.pcall('incr', 'canary')['err']", [], [])).toBe(
      "ERR value is not an integer or out of range",
    );
    const readOnly = "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])";
    expect(await redis.eval(readOnly, ["canary"], [])).toBe("db0");
    const writes = "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'x')";
    await expect(redis.eval(writes, ["canary"], [])).rejects.toThrow(
      /Write commands are not allowed from read-only scripts/,
    );
  });

  it("errors keep their line numbers and name the script's own SHA-1", async () => {
    const body = "local a = 1\nlocal b = 2\nreturn nosuchglobal";
    const { status, json } = await env.post("/", ["eval", body, 0]);
    expect(status).toBe(400);
    const error = (json as { error: string }).error;
    expect(error).toContain(
      "user_script:3: Script attempted to access nonexistent global variable",
    );
    expect(error).toContain(`script: ${sha1(body)}`);
    const loaded = await env.post("/", ["script", "load", body]);
    expect(loaded.json).toEqual({ result: sha1(body) });
    expect(
      ((await env.post("/", ["evalsha", sha1(body), 0])).json as { error: string }).error,
    ).toContain(`script: ${sha1(body)}`);
  });

  it("refuses the script commands that are not LOAD or EXISTS, and FUNCTION", async () => {
    for (const command of [
      ["script", "flush"],
      ["script", "kill"],
      ["script", "debug", "sync"],
      ["function", "list"],
      ["fcall", "f", 0],
      ["fcall_ro", "f", 0],
    ]) {
      const { status, json } = await env.post("/", command);
      expect(status, command.join(" ")).toBe(400);
      expect((json as { error: string }).error).toMatch(/^ERR Command is not available: /);
    }
  });
});

describe("on a Redis whose Lua globals are writable (before 7)", () => {
  /** A fake Redis: INFO says `version`; the probe script answers `probe`; PING answers. */
  function fakeRedis(version: string, probe: number) {
    const calls: string[] = [];
    const redis = {
      async call(name: string, args: string[]) {
        calls.push(name);
        if (name === "info")
          return `# Server\r\nredis_version:${version}\r\nredis_mode:standalone\r\n`;
        if (name === "eval" && String(args[0]).includes("rawset")) return probe;
        if (name === "ping") return "PONG";
        throw new Error(`unexpected ${name} ${args}`);
      },
      /** Commands run for clients ask for bytes (ioredis answers Buffers). */
      async callBuffer(name: string, args: string[]) {
        const reply = await redis.call(name, args);
        return typeof reply === "string" ? Buffer.from(reply) : reply;
      },
    };
    const app = createRedisRestBridge({
      redis: redis as unknown as Parameters<typeof createRedisRestBridge>[0]["redis"],
      token: "t",
    });
    const post = async (body: unknown) => {
      const res = await app.request("/", {
        method: "POST",
        headers: { "Content-Type": "application/json", authorization: "Bearer t" },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: await res.json() };
    };
    return { calls, post };
  }

  const SCRIPT_COMMANDS = [
    ["eval", "return 1", 0],
    ["evalsha", "0".repeat(40), 0],
    ["script", "load", "return 1"],
  ];

  it("Redis 6: runs no script, and says why; other commands still run", async () => {
    const { calls, post } = fakeRedis("6.2.14", 1);
    for (const command of SCRIPT_COMMANDS) {
      expect(await post(command)).toEqual({
        status: 400,
        json: {
          error: expect.stringMatching(
            /scripts are not available .* Redis 6\.2\.14: it needs Redis 7/,
          ),
        },
      });
    }
    expect(await post(["ping"])).toEqual({ status: 200, json: { result: "PONG" } });
    expect(calls).toEqual(["info", "ping"]); // INFO once, no script sent
  });

  it("a server that says 7 but lets a script write a global: no script either", async () => {
    const { calls, post } = fakeRedis("7.2.4", 1);
    for (const command of SCRIPT_COMMANDS) {
      expect(await post(command)).toEqual({
        status: 400,
        json: { error: expect.stringMatching(/lets a script change Lua's globals/) },
      });
    }
    expect(calls).toEqual(["info", "eval"]);
  });
});

/** A second bridge app on the same private Redis: one that has wrapped no script yet. */
async function privateBridgeApp(): Promise<
  (path: string, body: unknown) => Promise<{ status: number; json: unknown }>
> {
  const app = createRedisRestBridge({ redis: env.direct(0), token: "fresh" });
  return async (path, body) => {
    const res = await app.request(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", authorization: "Bearer fresh" },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  };
}
