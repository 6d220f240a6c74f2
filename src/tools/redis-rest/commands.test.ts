import { describe, expect, it } from "vitest";
import { parseCommand, parseCommands, refusal } from "./commands.ts";
import { RedisRestError } from "./errors.ts";

describe("parseCommand / parseCommands", () => {
  it("keeps strings and turns JSON numbers and booleans into their text", () => {
    expect(parseCommand(["set", "k", 1.5, "px", 30_000, true])).toEqual([
      "set",
      "k",
      "1.5",
      "px",
      "30000",
      "true",
    ]);
    expect(
      parseCommands([
        ["incr", "n"],
        ["get", "n"],
      ]),
    ).toEqual([
      ["incr", "n"],
      ["get", "n"],
    ]);
  });

  it("names what is wrong with a body, as a 400", () => {
    const cases: [() => unknown, RegExp][] = [
      [() => parseCommand({}), /the request body must be a JSON array/],
      [() => parseCommand([""]), /command name/],
      [
        () => parseCommand(["set", "k", null]),
        /argument 2 of the request body \(set\) .* got null/,
      ],
      [() => parseCommands([]), /non-empty JSON array of commands/],
      [
        () =>
          parseCommands([
            ["get", "k"],
            ["set", "k", [1]],
          ]),
        /argument 2 of command 2 \(set\)/,
      ],
    ];
    for (const [parse, message] of cases) {
      const error = (() => {
        try {
          parse();
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(RedisRestError);
      expect((error as RedisRestError).status).toBe(400);
      expect((error as Error).message).toMatch(message);
    }
  });
});

describe("refusal", () => {
  const outside = { inTransaction: false };
  const inside = { inTransaction: true };

  it("lets the allowlisted data and scripting commands through, in any case", () => {
    for (const command of [
      ["GET", "k"],
      ["eval", "return 1", "0"],
      ["EvalSha_RO", "0".repeat(40), "0"],
      ["script", "LOAD", "return 1"],
      ["SCRIPT", "exists", "0".repeat(40)],
      ["copy", "a", "b", "REPLACE"],
      ["copy", "db", "db"], // keys named "db" are not the DB option
      ["flushdb"],
      ["json.get", "k", "$"],
    ]) {
      expect(refusal(command as [string, ...string[]], outside), command.join(" ")).toBeUndefined();
    }
  });

  it("refuses everything else with Upstash's 'Command is not available', everywhere", () => {
    for (const name of [
      "SELECT",
      "flushall",
      "Shutdown",
      "swapdb",
      "replicaof",
      "slaveof",
      "config",
      "client",
      "save",
      "bgsave",
      "bgrewriteaof",
      "function",
      "fcall",
      "info",
      "move",
      "publish",
      "subscribe",
      "hello",
      "quit",
      "nosuchcommand",
    ]) {
      const expected = new RegExp(`^ERR Command is not available: '${name.toUpperCase()}'\\. `);
      expect(refusal([name], outside)).toMatch(expected);
      expect(refusal([name], inside)).toMatch(expected);
    }
    for (const name of ["Multi", "exec", "watch", "discard", "unwatch"]) {
      expect(refusal([name], inside)).toMatch(/Command is not available: .*\/multi-exec/);
    }
    expect(refusal(["script", "FLUSH"], outside)).toMatch(/'SCRIPT FLUSH'/);
    expect(refusal(["script", "kill"], outside)).toMatch(/'SCRIPT KILL'/);
    expect(refusal(["script", "debug", "yes"], outside)).toMatch(/'SCRIPT DEBUG'/);
    expect(refusal(["script"], outside)).toMatch(/'SCRIPT'/);
    expect(refusal(["copy", "a", "b", "db", "3"], outside)).toMatch(/'COPY … DB'/);
    expect(refusal(["COPY", "a", "b", "REPLACE", "Db", "3"], inside)).toMatch(/'COPY … DB'/);
    expect(refusal(["x".repeat(10_000)], outside)?.length).toBeLessThan(300);
  });

  it("refuses blocking commands outside a transaction only", () => {
    expect(refusal(["blpop", "k", "0"], outside)).toMatch(/BLPOP may block/);
    expect(refusal(["blpop", "k", "0"], inside)).toBeUndefined();
    expect(refusal(["xread", "BLOCK", "0", "STREAMS", "s", "$"], outside)).toMatch(
      /XREAD may block/,
    );
    // "block" as an option value or a stream name is not the BLOCK option.
    expect(
      refusal(
        ["xreadgroup", "GROUP", "block", "block", "COUNT", "1", "STREAMS", "block", ">"],
        outside,
      ),
    ).toBeUndefined();
  });
});
