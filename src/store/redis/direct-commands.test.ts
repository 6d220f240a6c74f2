/**
 * Script commands built with ioredis's `Command` class (`sendsCommandsDirectly`, as
 * `connectIoredis` sets up every connection of `tickwork start`), against the shared Redis at
 * 127.0.0.1:6379: they answer as ioredis's own command methods do (FCALL, EVALSHA and EVAL;
 * numbers sent as their decimal text; a NOSCRIPT or a missing function still seen as such by
 * `safeEval`), and their arguments are not copied with `Array.prototype.flat`, which ioredis's
 * methods call on every command (docs/adr/0055-script-commands-without-flat.md).
 */
import { createHash, randomUUID } from "node:crypto";
import { Command, Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { connectIoredis } from "../../adapter/node/ioredis.ts";
import {
  fromIoredis,
  functionName,
  type LuaScript,
  safeEval,
  sendsCommandsDirectly,
} from "./script.ts";

const URL = "redis://127.0.0.1:6379";
const ECHO = "return {KEYS[1], #KEYS, #ARGV, ARGV[1], ARGV[#ARGV]}";
/** A script of its own (a unique source: no other test has its function loaded). */
function echoScript(): LuaScript {
  const source = `-- ${randomUUID()}\n${ECHO}`;
  const script = { name: "echo", numberOfKeys: 1, source, sha1: sha1Of(source), bodyStart: 0 };
  made.push(script);
  return script;
}

/** The scripts the tests made: their function libraries are deleted from the shared Redis. */
const made: LuaScript[] = [];

function sha1Of(text: string): string {
  return createHash("sha1").update(text).digest("hex");
}

const plain = new Redis(URL);
const closers: Array<() => unknown> = [
  async () => {
    for (const script of made) {
      await plain.function("DELETE", functionName(script)).catch(() => undefined);
    }
    plain.disconnect();
  },
];
afterAll(async () => {
  for (const close of closers) await close();
});
afterEach(() => vi.restoreAllMocks());

async function direct(): Promise<Redis> {
  const { redis, close } = await connectIoredis({
    url: URL,
    purpose: "the test",
    maxRetriesPerRequest: 1,
  });
  closers.push(close);
  return redis as Redis;
}

describe("script commands built with ioredis's Command class", () => {
  const args = Array.from({ length: 400 }, (_, i) => (i % 2 ? i : `a${i}`));

  it("answer as ioredis's own methods answer, on FCALL, EVALSHA and EVAL", async () => {
    const ours = fromIoredis(await direct());
    const theirs = fromIoredis(plain);
    const script = echoScript();
    const keys = ["{direct}:k"];
    const expected = [keys[0], 1, 400, "a0", "399"];
    expect(await safeEval(theirs, script, keys, args)).toEqual(expected);
    expect(await safeEval(ours, script, keys, args)).toEqual(expected);
    expect(await ours.eval(script.source, keys, args)).toEqual(expected);
    expect(await ours.evalsha(script.sha1, keys, args)).toEqual(expected);
  });

  it("report a script Redis does not have as ioredis's methods do (NOSCRIPT, function not found)", async () => {
    const ours = fromIoredis(await direct());
    const unknown = echoScript();
    await expect(ours.evalsha(unknown.sha1, ["k"], [])).rejects.toThrow(/^NOSCRIPT/);
    await expect(ours.fcall!("tickwork_missing_0", ["k"], [])).rejects.toThrow(
      /function not found/i,
    );
    // safeEval loads what is missing and answers.
    expect(await safeEval(ours, unknown, ["k"], ["x"])).toEqual(["k", 1, 1, "x", "x"]);
  });

  it("do not copy their arguments with Array.prototype.flat", async () => {
    const ours = fromIoredis(await direct());
    const script = echoScript();
    await safeEval(ours, script, ["k"], []);
    const flat = vi.spyOn(Array.prototype, "flat");
    await safeEval(ours, script, ["k"], args);
    await ours.eval(script.source, ["k"], args);
    await ours.evalsha(script.sha1, ["k"], args);
    expect(flat).not.toHaveBeenCalled();
    // ioredis's own methods do: what the direct commands spare.
    await safeEval(fromIoredis(plain), script, ["k"], args);
    expect(flat).toHaveBeenCalled();
  });

  it("leave a client with a key prefix to its own methods, which prefix the keys", async () => {
    const prefixed = new Redis(URL, { keyPrefix: "pre:" });
    closers.push(() => prefixed.disconnect());
    sendsCommandsDirectly(prefixed, Command);
    const answer = await fromIoredis(prefixed).eval(ECHO, ["k"], ["x"]);
    expect(answer).toEqual(["pre:k", 1, 1, "x", "x"]);
  });
});
