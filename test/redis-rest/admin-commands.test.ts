/**
 * What the bridge token reaches: server-wide and admin commands are refused with Upstash's answer
 * for a command it does not offer (`ERR Command is not available: '<NAME>'`: 400 on `/`, an
 * `{ error }` entry in `/pipeline`, EXECABORT for `/multi-exec`), over real HTTP, from the raw
 * protocol and from `@upstash/redis`. The bridge is in front of a private redis-server, and each
 * test then checks, straight on that server, that nothing happened: it still answers, keeps its
 * data in database 0 and 3, its config, its scripts, and saved nothing.
 */
import { errors } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PrivateBridge, privateBridge } from "./harness.ts";

const { UpstashError } = errors;

let env: PrivateBridge;
let directScriptSha: string;

beforeAll(async () => {
  env = await privateBridge();
  await env.direct(0).set("canary", "db0");
  await env.direct(3).set("secret", "db3");
  directScriptSha = (await env.direct(0).script("LOAD", "return 'kept'")) as string;
});

afterAll(async () => {
  await env?.stop();
});

/** Server-wide, admin and cross-database commands, as a client could send them. */
const REFUSED: [name: string, ...args: (string | number)[]][] = [
  ["flushall"],
  ["FLUSHALL", "ASYNC"],
  ["shutdown", "nosave"],
  ["shutdown"],
  ["swapdb", 0, 3],
  ["replicaof", "127.0.0.1", 1],
  ["replicaof", "no", "one"],
  ["slaveof", "127.0.0.1", 1],
  ["config", "set", "requirepass", "locked-out"],
  ["config", "get", "*"],
  ["config", "resetstat"],
  ["client", "kill", "type", "normal"],
  ["client", "pause", 60_000],
  ["client", "list"],
  ["script", "flush"],
  ["script", "kill"],
  ["script", "debug", "yes"],
  ["save"],
  ["bgsave"],
  ["bgrewriteaof"],
  ["debug", "sleep", 0],
  ["monitor"],
  ["function", "flush"],
  ["function", "load", "#!lua name=lib\nredis.register_function('f', function() return 1 end)"],
  ["fcall", "f", 0],
  ["acl", "setuser", "intruder", "on", ">pw", "+@all", "~*"],
  ["module", "list"],
  ["info"],
  ["select", 3],
  ["move", "canary", 3],
  ["copy", "canary", "copied", "db", 3],
  ["migrate", "127.0.0.1", 1, "canary", 0, 1000],
  ["publish", "channel", "message"],
  ["latency", "reset"],
  ["slowlog", "reset"],
  ["memory", "purge"],
  ["failover"],
  ["wait", 0, 0],
];

/** The name a refusal shows: the command's, or its subcommand's for SCRIPT. */
function shownName([name, ...args]: (typeof REFUSED)[number]): string {
  if (name === "script") return `SCRIPT ${String(args[0]).toUpperCase()}`;
  if (name === "copy") return "COPY … DB";
  return name.toUpperCase();
}

function notAvailable(command: (typeof REFUSED)[number]): RegExp {
  const name = shownName(command).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`^ERR Command is not available: '${name}'\\. `);
}

/** Nothing the refused commands would have done happened, seen straight on the server. */
async function expectServerUntouched(): Promise<void> {
  const db0 = env.direct(0);
  expect(await db0.ping()).toBe("PONG");
  expect(await db0.get("canary")).toBe("db0");
  expect(await db0.exists("copied")).toBe(0);
  expect(await env.direct(3).get("secret")).toBe("db3");
  expect(await env.direct(3).exists("canary", "copied")).toBe(0);
  expect(await db0.config("GET", "requirepass")).toEqual(["requirepass", ""]);
  expect(await db0.script("EXISTS", directScriptSha)).toEqual([1]);
  expect(await db0.call("ACL", "USERS")).toEqual(["default"]);
  expect(await db0.call("FUNCTION", "LIST")).toEqual([]);
  const persistence = await db0.info("persistence");
  for (const field of ["rdb_saves", "rdb_bgsave_in_progress", "aof_rewrites"]) {
    expect(persistence, field).toMatch(new RegExp(`^${field}:0\\r?$`, "m"));
  }
  expect(await db0.info("replication")).toMatch(/^role:master\r?$/m);
  // Through the bridge too: it still serves its database.
  expect(await env.post("/", ["get", "canary"])).toEqual({ status: 200, json: { result: "db0" } });
}

describe("server-wide and admin commands are refused", () => {
  it("POST /: 400 {error} with Upstash's 'Command is not available', each of them", async () => {
    for (const command of REFUSED) {
      const { status, json } = await env.post("/", command);
      expect(status, command.join(" ")).toBe(400);
      expect(json, command.join(" ")).toEqual({
        error: expect.stringMatching(notAvailable(command)),
      });
    }
    await expectServerUntouched();
  });

  it("POST /pipeline: 200, an {error} entry for each, the allowed commands around them run", async () => {
    const { status, json } = await env.post("/pipeline", [
      ["set", "around", "before"],
      ...REFUSED,
      ["get", "around"],
    ]);
    expect(status).toBe(200);
    expect(json).toEqual([
      { result: "OK" },
      ...REFUSED.map((command) => ({ error: expect.stringMatching(notAvailable(command)) })),
      { result: "before" },
    ]);
    await expectServerUntouched();
  });

  it("POST /multi-exec: the whole transaction is discarded (400 EXECABORT), nothing sent", async () => {
    for (const command of REFUSED) {
      const { status, json } = await env.post("/multi-exec", [
        ["set", "tx-canary", "should not be set"],
        command,
      ]);
      expect(status, command.join(" ")).toBe(400);
      const message = notAvailable(command).source.replace("^", "");
      expect(json).toEqual({
        error: expect.stringMatching(new RegExp(`^EXECABORT Transaction discarded: ${message}`)),
      });
    }
    expect(await env.direct(0).exists("tx-canary")).toBe(0);
    await expectServerUntouched();
  });

  it("@upstash/redis surfaces each refusal as an UpstashError with the message", async () => {
    for (const enableAutoPipelining of [true, false]) {
      const redis = env.client({ enableAutoPipelining });
      const failures = await Promise.all([
        redis.flushall().catch((e: unknown) => e),
        redis.scriptFlush().catch((e: unknown) => e),
        redis.publish("channel", "message").catch((e: unknown) => e),
        redis.exec(["config", "set", "requirepass", "locked-out"]).catch((e: unknown) => e),
        redis.exec(["shutdown", "nosave"]).catch((e: unknown) => e),
        redis.exec(["swapdb", "0", "3"]).catch((e: unknown) => e),
      ]);
      const names = ["FLUSHALL", "SCRIPT FLUSH", "PUBLISH", "CONFIG", "SHUTDOWN", "SWAPDB"];
      for (const [i, failure] of failures.entries()) {
        expect(failure, names[i]).toBeInstanceOf(UpstashError);
        expect((failure as Error).message).toContain(
          `ERR Command is not available: '${names[i]}'.`,
        );
      }
      const pipeline = redis.pipeline();
      pipeline.get("canary");
      pipeline.flushall();
      const outcomes = await pipeline.exec({ keepErrors: true });
      expect(outcomes[0]).toEqual({ result: "db0", error: undefined });
      expect(outcomes[1]?.error).toMatch(/^ERR Command is not available: 'FLUSHALL'/);

      const tx = redis.multi();
      tx.set("tx-canary", "should not be set");
      tx.flushall();
      const aborted = await tx.exec().catch((e: unknown) => e);
      expect(aborted).toBeInstanceOf(UpstashError);
      expect((aborted as Error).message).toMatch(
        /^EXECABORT Transaction discarded: ERR Command is not available: 'FLUSHALL'/,
      );
    }
    expect(await env.direct(0).exists("tx-canary")).toBe(0);
    await expectServerUntouched();
  });

  it("FLUSHDB empties the bridge's own database only", async () => {
    const { url } = env.server;
    expect(url).toMatch(/^redis:/);
    await env.direct(0).set("flushdb-victim", "x");
    expect(await env.post("/", ["flushdb"])).toEqual({ status: 200, json: { result: "OK" } });
    expect(await env.direct(0).dbsize()).toBe(0);
    expect(await env.direct(3).get("secret")).toBe("db3");
    await env.direct(0).set("canary", "db0");
    await expectServerUntouched();
  });
});
