import { describe, expect, it } from "vitest";
import { MemoryStore } from "../store/memory/index.ts";
import type { Transport } from "../transport/port.ts";
import { limitValue, parsePath, runLimitOf } from "./concurrency.ts";
import { type Handlers, validateHandlers } from "./handlers.ts";
import { createEngine } from "./index.ts";

const run = () => null;

describe("a handler's concurrency option", () => {
  it("accepts a whole number from 1 to 10,000, or { limit, key } with a dotted input path", () => {
    for (const concurrency of [
      1,
      10_000,
      { limit: 3 },
      { limit: 1, key: "customerId" },
      { limit: 2, key: "account.id" },
      { limit: 2, key: "input.account.id" },
      { limit: 2, key: "items.0.sku" },
    ]) {
      expect(() => validateHandlers({ h: { concurrency, run } })).not.toThrow();
    }
  });

  it.each([
    [0, RangeError, 'handlers["h"].concurrency must be a whole number from 1 to 10000, got 0'],
    [1.5, RangeError, "got 1.5"],
    [10_001, RangeError, "got 10001"],
    [Number.NaN, RangeError, "got null"],
    ["2", TypeError, 'handlers["h"].concurrency must be a number or { limit, key? }, got "2"'],
    [null, TypeError, "got null"],
    [[2], TypeError, "got [2]"],
    [{}, RangeError, 'handlers["h"].concurrency.limit must be a whole number'],
    [{ limit: -1 }, RangeError, "concurrency.limit must be a whole number from 1 to 10000"],
    [{ limit: 1, key: "" }, TypeError, "concurrency.key must be a dotted path into the input"],
    [{ limit: 1, key: "a..b" }, TypeError, 'got "a..b"'],
    [{ limit: 1, key: "a b" }, TypeError, 'got "a b"'],
    [{ limit: 1, key: ".a" }, TypeError, 'got ".a"'],
    [{ limit: 1, key: "a.b.c.d.e.f.g.h.i" }, TypeError, "at most 8"],
    [{ limit: 1, key: 7 }, TypeError, "got 7"],
    [{ limit: 1, keys: "a" }, TypeError, 'concurrency has an unknown option "keys"'],
  ])("refuses %j with a clear error", (concurrency, type, message) => {
    const check = () => validateHandlers({ h: { concurrency, run } } as unknown as Handlers);
    expect(check).toThrow(type);
    expect(check).toThrow(message);
  });

  it("is checked when the engine is created", () => {
    const transport = { publish: async () => [], verify: async () => true } as Transport;
    expect(() =>
      createEngine({
        store: new MemoryStore(),
        transport,
        handlers: { h: { concurrency: { limit: 0 }, run } },
      }),
    ).toThrow('handlers["h"].concurrency.limit must be a whole number from 1 to 10000, got 0');
  });
});

describe("parsePath", () => {
  it("splits on dots and drops a leading input.", () => {
    expect(parsePath("customerId")).toEqual(["customerId"]);
    expect(parsePath("account.id")).toEqual(["account", "id"]);
    expect(parsePath("input.account.id")).toEqual(["account", "id"]);
    expect(parsePath("input")).toEqual(["input"]);
    expect(parsePath("a..b")).toBeUndefined();
    expect(parsePath("x".repeat(201))).toBeUndefined();
  });
});

describe("runLimitOf", () => {
  const keyed = { concurrency: { limit: 2, key: "account.id" }, run };

  it("is undefined without a concurrency option (or without a definition)", async () => {
    expect(await runLimitOf("h", { run }, "default", {})).toBeUndefined();
    expect(await runLimitOf("h", undefined, "default", {})).toBeUndefined();
  });

  it("without a key: the handler's name, whatever the input and tenant", async () => {
    const def = { concurrency: 5, run };
    expect(await runLimitOf("email.send", def, "a", { x: 1 })).toEqual({
      key: "email.send",
      limit: 5,
    });
    expect(await runLimitOf("email.send", { concurrency: { limit: 5 }, run }, "b", null)).toEqual({
      key: "email.send",
      limit: 5,
    });
  });

  it("with a key: the handler, the tenant (length-prefixed) and the value", async () => {
    expect(await runLimitOf("sync", keyed, "acme", { account: { id: "x:1" } })).toEqual({
      key: "sync=4:acme:x:1",
      limit: 2,
    });
    // Numbers and strings of the same text are one key; JSON for everything but strings.
    const of = async (input: unknown, tenant = "default") =>
      (await runLimitOf("sync", keyed, tenant, input))?.key;
    expect(await of({ account: { id: 42 } })).toBe(await of({ account: { id: "42" } }));
    expect(await of({ account: { id: true } })).toBe("sync=7:default:true");
    expect(await of({ account: { id: { a: [1] } } })).toBe('sync=7:default:{"a":[1]}');
    // Tenants are apart; "é" is two bytes.
    expect(await of({ account: { id: 1 } }, "é")).toBe("sync=2:é:1");
    expect(await of({ account: { id: 1 } }, "a")).not.toBe(await of({ account: { id: 1 } }, "b"));
  });

  it("a missing or null value (or a path through a non-object) is the empty key", async () => {
    const of = async (input: unknown) => (await runLimitOf("sync", keyed, "t", input))?.key;
    for (const input of [undefined, null, {}, { account: null }, { account: { id: null } }, 7]) {
      expect(await of(input)).toBe("sync=1:t:");
    }
    expect(await of({ account: "str" })).toBe("sync=1:t:");
    // Own properties only: nothing inherited is a value.
    expect(
      await runLimitOf("h", { concurrency: { limit: 1, key: "constructor" }, run }, "t", {}),
    ).toEqual({ key: "h=1:t:", limit: 1 });
  });

  it("reads array items by index", async () => {
    const def = { concurrency: { limit: 1, key: "items.1.sku" }, run };
    expect((await runLimitOf("h", def, "t", { items: [{ sku: "a" }, { sku: "b" }] }))?.key).toBe(
      "h=1:t:b",
    );
  });
});

describe("limitValue", () => {
  it("keeps values up to 128 UTF-8 bytes and hashes longer ones (SHA-256, hex)", async () => {
    expect(await limitValue("x".repeat(128))).toBe("x".repeat(128));
    const long = await limitValue("x".repeat(129));
    expect(long).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(await limitValue("x".repeat(129))).toBe(long);
    expect(await limitValue("x".repeat(130))).not.toBe(long);
    // 64 two-byte characters are 128 bytes; 65 are over.
    expect(await limitValue("é".repeat(64))).toBe("é".repeat(64));
    expect(await limitValue("é".repeat(65))).toMatch(/^sha256:/);
    // sha256("abc…") as the text is hashed, whatever the value's type.
    const big = { list: Array.from({ length: 50 }, (_, i) => i) };
    const digest = await crypto.subtle.digest(
      "SHA-256",
      new TextEncoder().encode(JSON.stringify(big)),
    );
    const hex = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
    expect(await limitValue(big)).toBe(`sha256:${hex}`);
    // A short value that spells the hash of a long one is a key of its own, not the long one's.
    expect(await limitValue(`sha256:${hex}`)).not.toBe(`sha256:${hex}`);
    expect(await limitValue(`sha256:${hex}`)).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(await limitValue("sha256:")).not.toBe("sha256:");
  });
});
