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

  it("lets ordinary commands through, in any case", () => {
    for (const command of [
      ["GET", "k"],
      ["eval", "return 1", "0"],
      ["client", "setinfo", "lib-name", "x"],
    ]) {
      expect(refusal(command as [string, ...string[]], outside)).toBeUndefined();
    }
  });

  it("refuses connection state and transaction commands everywhere", () => {
    for (const name of ["SELECT", "subscribe", "Multi", "watch", "quit", "hello"]) {
      expect(refusal([name], outside)).toMatch(/^ERR /);
      expect(refusal([name], inside)).toMatch(/^ERR /);
    }
    expect(refusal(["client", "REPLY", "off"], outside)).toMatch(/CLIENT REPLY/);
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
