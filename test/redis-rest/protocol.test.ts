/**
 * The bridge's wire protocol, request by request (`app.request`, a real ioredis client on the
 * shared Redis at 127.0.0.1:6379, keys under a random prefix): what `@upstash/redis` sends and
 * expects, and how everything else is refused.
 */
import { Redis as IORedis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createRedisRestBridge } from "../../src/tools/redis-rest/index.ts";
import { freePort } from "../support/free-port.ts";
import { deletePrefix, freshPrefix, REDIS_URL } from "./harness.ts";

const TOKEN = "protocol-token";
const prefix = freshPrefix("proto");
let n = 0;
const key = (name: string) => `${prefix}:${name}:${++n}`;

const redis = new IORedis(REDIS_URL);
const app = createRedisRestBridge({ redis, token: TOKEN, maxBodyBytes: 4_096 });
afterAll(async () => {
  await deletePrefix(prefix);
  redis.disconnect();
});

/** POST `body` (JSON unless a string) as the client does; extra headers override. */
async function post(
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: unknown; headers: Headers }> {
  const res = await app.request(path, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      authorization: `Bearer ${TOKEN}`,
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json(), headers: res.headers };
}

const base64 = { "Upstash-Encoding": "base64" };

describe("POST / (one command)", () => {
  it("answers {result}: strings, integers as numbers, nil as null, arrays", async () => {
    const k = key("s");
    expect(await post("/", ["set", k, "OK"])).toMatchObject({
      status: 200,
      json: { result: "OK" },
    });
    expect((await post("/", ["get", k])).json).toEqual({ result: "OK" });
    expect((await post("/", ["incr", key("n")])).json).toEqual({ result: 1 });
    const missing = await app.request("/", {
      method: "POST",
      headers: { "Content-Type": "application/json", authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(["get", key("missing")]),
    });
    expect(await missing.text()).toBe('{"result":null}');
    expect((await post("/", ["mget", k, key("missing")])).json).toEqual({ result: ["OK", null] });
  });

  it("turns JSON numbers and booleans into their text", async () => {
    const k = key("args");
    expect((await post("/", ["set", k, 12.5, "px", 60_000])).json).toEqual({ result: "OK" });
    expect((await post("/", ["get", k])).json).toEqual({ result: "12.5" });
    expect((await post("/", ["pttl", k])).json).toMatchObject({ result: expect.any(Number) });
    await post("/", ["set", k, true]);
    expect((await post("/", ["get", k])).json).toEqual({ result: "true" });
  });

  it("answers HGETALL as Redis's flat array", async () => {
    const k = key("h");
    await post("/", ["hset", k, "a", "1", "b", "2"]);
    expect((await post("/", ["hgetall", k])).json).toEqual({ result: ["a", "1", "b", "2"] });
  });

  it("with Upstash-Encoding: base64, encodes every string at every depth, OK included", async () => {
    const k = key("b64");
    expect((await post("/", ["set", k, "OK"], base64)).json).toEqual({ result: "T0s=" });
    expect((await post("/", ["get", k], base64)).json).toEqual({ result: "T0s=" });
    expect((await post("/", ["mget", k, key("missing")], base64)).json).toEqual({
      result: ["T0s=", null],
    });
    const script = "return {'OK', {'ü', 1}, false, redis.call('ping')}";
    expect((await post("/", ["eval", script, 0], base64)).json).toEqual({
      result: ["T0s=", ["w7w=", 1], null, "UE9ORw=="],
    });
    expect((await post("/", ["incr", key("n")], base64)).json).toEqual({ result: 1 });
  });

  it("with base64, gives a value's bytes as they are, UTF-8 or not; as JSON text, as UTF-8", async () => {
    // Written by a TCP client: bytes no JSON string holds (0xff, a lone 0x80, NUL).
    const bytes = Buffer.from([0xff, 0x00, 0x80, 0x61, 0xc3, 0xbc]);
    const k = key("bin");
    await redis.set(k, bytes);
    await redis.hset(key("binh"), "f", bytes);
    const b64 = bytes.toString("base64");
    expect((await post("/", ["get", k], base64)).json).toEqual({ result: b64 });
    expect(
      (
        await post(
          "/pipeline",
          [
            ["get", k],
            ["hgetall", `${prefix}:binh:${n}`],
          ],
          base64,
        )
      ).json,
    ).toEqual([{ result: b64 }, { result: ["Zg==", b64] }]);
    expect((await post("/multi-exec", [["get", k]], base64)).json).toEqual([{ result: b64 }]);
    expect(
      (await post("/", ["eval", "return {redis.call('get', KEYS[1])}", 1, k], base64)).json,
    ).toEqual({ result: [b64] });
    // Without base64 the bytes are read as UTF-8: what is not UTF-8 becomes U+FFFD.
    expect((await post("/", ["get", k])).json).toEqual({ result: "\ufffd\u0000\ufffdaü" });
  });

  it("answers a Redis error with 400 {error} and Redis's message, never base64", async () => {
    const k = key("e");
    await post("/", ["set", k, "text"]);
    expect(await post("/", ["incr", k], base64)).toMatchObject({
      status: 400,
      json: { error: "ERR value is not an integer or out of range" },
    });
    const noscript = await post("/", ["evalsha", "0".repeat(40), 0]);
    expect(noscript.status).toBe(400);
    expect((noscript.json as { error: string }).error).toMatch(/^NOSCRIPT /);
  });

  it("refuses commands that would change or block the shared connection", async () => {
    for (const command of [
      ["select", "1"],
      ["subscribe", "ch"],
      ["multi"],
      ["client", "setname", "x"],
      ["blpop", key("l"), 0],
      ["xread", "block", 0, "streams", key("x"), "$"],
    ]) {
      const { status, json } = await post("/", command);
      expect(status, JSON.stringify(command)).toBe(400);
      expect((json as { error: string }).error).toMatch(/^ERR .*not|^ERR .*does not/);
    }
    // Not blocking: XREAD without BLOCK, and a stream named "block".
    expect((await post("/", ["xread", "count", 1, "streams", "block", "0"])).status).toBe(200);
  });

  it("rejects bodies that are not one command", async () => {
    for (const body of [
      { cmd: "get" },
      [],
      [1, 2],
      ["set", key("x"), null],
      ["set", "k", { a: 1 }],
    ]) {
      const { status, json } = await post("/", body);
      expect(status, JSON.stringify(body)).toBe(400);
      expect(json).toEqual({ error: expect.stringMatching(/^ERR /) });
    }
    expect(await post("/", "[not json")).toMatchObject({ status: 400, json: { error: /JSON/ } });
  });
});

describe("POST /pipeline", () => {
  it("runs commands in order; a failed command is its own {error}, with HTTP 200", async () => {
    const k = key("p");
    const { status, json } = await post(
      "/pipeline",
      [
        ["set", k, "text"],
        ["incr", k],
        ["get", k],
        ["blpop", k, 1],
        ["append", k, "!"],
      ],
      base64,
    );
    expect(status).toBe(200);
    expect(json).toEqual([
      { result: "T0s=" },
      { error: "ERR value is not an integer or out of range" },
      { result: "dGV4dA==" },
      { error: expect.stringMatching(/BLPOP may block/) },
      { result: 5 },
    ]);
  });

  it("rejects a body that is not a non-empty array of commands", async () => {
    for (const body of [[], ["get", "k"], [["get", "k"], "x"], { a: 1 }]) {
      expect((await post("/pipeline", body)).status, JSON.stringify(body)).toBe(400);
    }
  });
});

describe("POST /multi-exec", () => {
  it("runs a transaction: one entry per command, runtime errors in place", async () => {
    const k = key("tx");
    const { status, json } = await post("/multi-exec", [
      ["set", k, "text"],
      ["incr", k],
      ["blpop", key("empty"), 1], // inside MULTI a blocking command does not block
      ["get", k],
    ]);
    expect(status).toBe(200);
    expect(json).toEqual([
      { result: "OK" },
      { error: "ERR value is not an integer or out of range" },
      { result: null },
      { result: "text" },
    ]);
  });

  it("a command Redis refuses to queue discards the whole transaction: one {error}, 400", async () => {
    const k = key("aborted");
    const { status, json } = await post("/multi-exec", [
      ["set", k, "v"],
      ["hset", key("h")],
    ]);
    expect(status).toBe(400);
    expect(json).toEqual({
      error: expect.stringMatching(/^EXECABORT .*wrong number of arguments for 'hset'/),
    });
    expect(await redis.exists(k)).toBe(0);
  });

  it("refuses connection-state commands before sending anything", async () => {
    const k = key("refused");
    const { status, json } = await post("/multi-exec", [
      ["set", k, "v"],
      ["select", "1"],
    ]);
    expect(status).toBe(400);
    expect(json).toEqual({
      error: expect.stringMatching(/^EXECABORT .*Command is not available: 'SELECT'/),
    });
    expect(await redis.exists(k)).toBe(0);
  });
});

describe("HTTP", () => {
  it("needs Authorization: Bearer <token>: 401 {error} otherwise", async () => {
    for (const authorization of ["", "Bearer wrong", `Basic ${TOKEN}`, `Bearer ${TOKEN}x`]) {
      const res = await post("/", ["ping"], { authorization });
      expect(res.status, authorization).toBe(401);
      expect(res.json).toEqual({ error: expect.stringMatching(/^Unauthorized/) });
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    }
    expect((await post("/", ["ping"], { authorization: `bearer ${TOKEN}` })).json).toEqual({
      result: "PONG",
    });
  });

  it("reads the body as JSON under none, JSON, text or curl's form type, as Upstash does; 400 under another", async () => {
    // Upstash's own examples: curl -d '["SET","k","v"]' (form type); no browser form can send
    // the bearer token, so the type is no cross-site gate.
    for (const type of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "application/json; charset=utf-8",
    ]) {
      expect(await post("/", ["ping"], { "Content-Type": type }), type).toMatchObject({
        status: 200,
        json: { result: "PONG" },
      });
    }
    const none = await app.request("/", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: new TextEncoder().encode(JSON.stringify(["ping"])),
    });
    expect(none.status).toBe(200);
    for (const type of ["text/html", "multipart/form-data; boundary=x", "application/xml"]) {
      const res = await post("/", ["ping"], { "Content-Type": type });
      expect(res.status, type).toBe(400);
      expect(res.json).toEqual({ error: expect.stringContaining("application/json") });
    }
  });

  it("refuses an integer a double would change (past 2^53) instead of sending another number", async () => {
    const k = key("big");
    for (const body of [
      `["incrby","${k}",9007199254740993]`,
      `["set","${k}",12345678901234567891]`,
    ]) {
      const res = await post("/", body);
      expect(res.status, body).toBe(400);
      expect(res.json).toEqual({ error: expect.stringMatching(/send it as a string/) });
    }
    expect((await post("/", ["exists", k])).json).toEqual({ result: 0 });
    // The same digits as a string, and integers a double keeps, are sent as written.
    expect((await post("/", `["set","${k}","9007199254740993"]`)).json).toEqual({ result: "OK" });
    expect((await post("/", ["get", k])).json).toEqual({ result: "9007199254740993" });
    expect((await post("/", `["set","${k}",9007199254740991]`)).json).toEqual({ result: "OK" });
    expect((await post("/", ["get", k])).json).toEqual({ result: "9007199254740991" });
  });

  it("refuses a token with a space, which no client could present", async () => {
    expect(() => createRedisRestBridge({ redis, token: "two words" })).toThrow(/without spaces/);
    expect(() => createRedisRestBridge({ redis, token: "" })).toThrow(/without spaces/);
  });

  it("404 for other paths (no path-style commands), 405 with Allow for other methods", async () => {
    for (const path of ["/set/k/v", "/pipeline/x", "/nope"]) {
      const res = await post(path, ["ping"]);
      expect(res.status, path).toBe(404);
      expect(res.json).toEqual({ error: expect.any(String) });
    }
    for (const [method, path] of [
      ["GET", "/"],
      ["PUT", "/pipeline"],
      ["DELETE", "/multi-exec"],
    ] as const) {
      const res = await app.request(path, {
        method,
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      expect(await res.json()).toEqual({ error: expect.any(String) });
    }
  });

  it("413 {error} for a body over the limit", async () => {
    const res = await post("/", ["set", key("big"), "x".repeat(5_000)]);
    expect(res).toMatchObject({ status: 413, json: { error: expect.stringContaining("4096") } });
  });

  it("503 {error} when Redis cannot be reached, on every route", async () => {
    const port = await freePort();
    const down = new IORedis(`redis://127.0.0.1:${port}`, {
      lazyConnect: true,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    down.on("error", () => {}); // the refused connection itself is expected
    const dead = createRedisRestBridge({ redis: down, token: TOKEN });
    for (const [path, body] of [
      ["/", ["get", "k"]],
      ["/pipeline", [["get", "k"]]],
      ["/multi-exec", [["get", "k"]]],
    ] as const) {
      const res = await dead.request(path, {
        method: "POST",
        headers: { "Content-Type": "application/json", authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(body),
      });
      expect(res.status, path).toBe(503);
      expect(await res.json()).toEqual({
        error: expect.stringMatching(/^ERR Redis is unavailable/),
      });
    }
    down.disconnect();
  });
});
