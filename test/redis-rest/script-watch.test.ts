/**
 * A script that never ends, sent through the bridge, holds the whole Redis server: every database
 * and every other client get BUSY, and the bridge refuses SCRIPT KILL to its clients. The bridge
 * watches requests that hold a script and, past `scriptTimeoutMs`, sends SCRIPT KILL on a
 * connection of its own. A private redis-server, its `busy-reply-threshold` lowered so Redis
 * takes the kill sooner (it runs no other client's command before it).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PrivateBridge, privateBridge } from "./harness.ts";

let env: PrivateBridge;

beforeAll(async () => {
  env = await privateBridge({ scriptTimeoutMs: 100 });
  await env.direct(0).config("SET", "busy-reply-threshold", "50");
});

afterAll(async () => {
  await env?.stop();
});

const FOREVER = ["eval", "while true do end", "0"];
const killed = expect.stringMatching(/killed/i);

describe("a script that never ends", () => {
  it("is killed on POST /, /pipeline and /multi-exec; the server answers again", async () => {
    expect(await env.post("/", FOREVER)).toEqual({ status: 400, json: { error: killed } });
    expect(await env.direct(3).ping()).toBe("PONG");

    expect(await env.post("/pipeline", [["set", "k", "v"], FOREVER, ["get", "k"]])).toEqual({
      status: 200,
      json: [{ result: "OK" }, { error: killed }, { result: "v" }],
    });
    expect(await env.post("/multi-exec", [["incr", "n"], FOREVER, ["incr", "n"]])).toEqual({
      status: 200,
      json: [{ result: 1 }, { error: killed }, { result: 2 }],
    });
    expect(await env.direct(0).ping()).toBe("PONG");
  });

  it("@upstash/redis gets the error, and its next command is served", async () => {
    const client = env.client();
    await expect(client.eval("while true do end", [], [])).rejects.toThrow(/killed/i);
    expect(await client.ping()).toBe("PONG");
  });

  it("a script that ends in time is not touched", async () => {
    expect(
      await env.post("/", ["eval", "local n = 0 for i = 1, 1000 do n = n + i end return n", "0"]),
    ).toEqual({ status: 200, json: { result: 500500 } });
  });
});
