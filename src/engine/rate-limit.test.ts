import { describe, expect, it } from "vitest";
import { MemoryStore } from "../store/memory/index.ts";
import type { Transport } from "../transport/port.ts";
import { runLimitOf } from "./concurrency.ts";
import { type Handlers, validateHandlers } from "./handlers.ts";
import { createEngine } from "./index.ts";
import { rateLimitOf } from "./rate-limit.ts";

const run = () => null;

describe("a handler's rateLimit option", () => {
  it("accepts { limit: 1–100,000, period: 1 s – 24 h, key? } with a dotted input path", () => {
    for (const rateLimit of [
      { limit: 1, period: "1s" },
      { limit: 100_000, period: "24h" },
      { limit: 10, period: "1m" },
      { limit: 10, period: 1_000 },
      { limit: 10, period: 86_400_000 },
      { limit: 10, period: "1d" },
      { limit: 2, period: "1.5s", key: "customerId" },
      { limit: 2, period: "1m", key: "input.account.id" },
      { limit: 2, period: "1m", key: "__proto__" },
      { limit: 2, period: "1m", key: "constructor.prototype" },
    ]) {
      expect(
        () => validateHandlers({ h: { rateLimit, run } }),
        JSON.stringify(rateLimit),
      ).not.toThrow();
    }
    expect(() =>
      validateHandlers({ h: { concurrency: 2, rateLimit: { limit: 5, period: "1m" }, run } }),
    ).not.toThrow();
  });

  it.each([
    [null, TypeError, 'handlers["h"].rateLimit must be { limit, period, key? }, got null'],
    [5, TypeError, "rateLimit must be { limit, period, key? }, got 5"],
    ["10/m", TypeError, 'got "10/m"'],
    [[10, "1m"], TypeError, 'got [10,"1m"]'],
    [
      { period: "1m" },
      RangeError,
      'handlers["h"].rateLimit.limit must be a whole number from 1 to 100000, got undefined',
    ],
    [
      { limit: 0, period: "1m" },
      RangeError,
      "rateLimit.limit must be a whole number from 1 to 100000, got 0",
    ],
    [{ limit: -1, period: "1m" }, RangeError, "got -1"],
    [{ limit: 1.5, period: "1m" }, RangeError, "got 1.5"],
    [{ limit: 100_001, period: "1m" }, RangeError, "got 100001"],
    [{ limit: 1e300, period: "1m" }, RangeError, "got 1e+300"],
    [{ limit: Number.NaN, period: "1m" }, RangeError, "got NaN"],
    [{ limit: Number.POSITIVE_INFINITY, period: "1m" }, RangeError, "got Infinity"],
    [{ limit: "5", period: "1m" }, RangeError, 'got "5"'],
    [
      { limit: 5 },
      RangeError,
      'handlers["h"].rateLimit.period must be a duration from 1s to 24h (e.g. "1m", or ms), got undefined',
    ],
    [{ limit: 5, period: "999ms" }, RangeError, 'got "999ms"'],
    [{ limit: 5, period: 999 }, RangeError, "got 999"],
    [{ limit: 5, period: "25h" }, RangeError, 'got "25h"'],
    [{ limit: 5, period: 86_400_001 }, RangeError, "got 86400001"],
    [{ limit: 5, period: 1e300 }, RangeError, "got 1e+300"],
    [{ limit: 5, period: Number.NaN }, RangeError, "got NaN"],
    [{ limit: 5, period: -60_000 }, RangeError, "got -60000"],
    [{ limit: 5, period: "-1m" }, RangeError, 'got "-1m"'],
    [{ limit: 5, period: "1 minute" }, RangeError, 'got "1 minute"'],
    [{ limit: 5, period: { ms: 1000 } }, RangeError, 'got {"ms":1000}'],
    [
      { limit: 5, period: "1m", key: "" },
      TypeError,
      "rateLimit.key must be a dotted path into the input",
    ],
    [{ limit: 5, period: "1m", key: "a..b" }, TypeError, 'got "a..b"'],
    [{ limit: 5, period: "1m", key: "a.b.c.d.e.f.g.h.i" }, TypeError, "at most 8"],
    [{ limit: 5, period: "1m", key: 7 }, TypeError, "got 7"],
    [{ limit: 5, period: "1m", per: "1s" }, TypeError, 'rateLimit has an unknown option "per"'],
    [{ limit: 5n, period: "1m" }, RangeError, "got 5"],
  ])("refuses %s with a clear error", (rateLimit, type, message) => {
    const check = () => validateHandlers({ h: { rateLimit, run } } as unknown as Handlers);
    expect(check).toThrow(type);
    expect(check).toThrow(message);
  });

  it("refuses an own __proto__ option (as JSON.parse makes one) as unknown", () => {
    const rateLimit = JSON.parse('{"limit":5,"period":"1m","__proto__":{"x":1}}');
    expect(() => validateHandlers({ h: { rateLimit, run } })).toThrow(
      'rateLimit has an unknown option "__proto__"',
    );
  });

  it("is checked when the engine is created", () => {
    const transport = { publish: async () => [], verify: async () => true } as Transport;
    expect(() =>
      createEngine({
        store: new MemoryStore(),
        transport,
        handlers: { h: { rateLimit: { limit: 5, period: "2d" }, run } },
      }),
    ).toThrow('handlers["h"].rateLimit.period must be a duration from 1s to 24h');
  });
});

describe("rateLimitOf", () => {
  it("is undefined without a rateLimit option (or without a definition)", async () => {
    expect(await rateLimitOf("h", { run }, "default", {})).toBeUndefined();
    expect(await rateLimitOf("h", { concurrency: 2, run }, "default", {})).toBeUndefined();
    expect(await rateLimitOf("h", undefined, "default", {})).toBeUndefined();
  });

  it("without a key: the handler's name; the period in ms", async () => {
    expect(
      await rateLimitOf("report", { rateLimit: { limit: 10, period: "1m" }, run }, "a", { x: 1 }),
    ).toEqual({ key: "report", limit: 10, periodMs: 60_000 });
    expect(
      await rateLimitOf("report", { rateLimit: { limit: 1, period: 1_500 }, run }, "b", null),
    ).toEqual({ key: "report", limit: 1, periodMs: 1_500 });
  });

  it("with a key: exactly the key a concurrency limit on the same path derives", async () => {
    const inputs = [
      { account: { id: "x:1" } },
      { account: { id: 42 } },
      { account: { id: { deep: [1, 2] } } },
      { account: { id: "é".repeat(80) } }, // over 128 bytes: hashed
      { account: null },
      {},
      7,
    ];
    for (const tenant of ["default", "é", "a:b"]) {
      for (const input of inputs) {
        const rate = await rateLimitOf(
          "sync",
          { rateLimit: { limit: 3, period: "1s", key: "input.account.id" }, run },
          tenant,
          input,
        );
        const slot = await runLimitOf(
          "sync",
          { concurrency: { limit: 1, key: "account.id" }, run },
          tenant,
          input,
        );
        expect(rate?.key).toBe(slot?.key);
        expect(rate).toMatchObject({ limit: 3, periodMs: 1_000 });
      }
    }
  });

  it("reads own properties only: an inherited `__proto__` or `constructor` is no value", async () => {
    const of = async (key: string, input: unknown) =>
      (await rateLimitOf("h", { rateLimit: { limit: 1, period: "1s", key }, run }, "t", input))
        ?.key;
    expect(await of("constructor", {})).toBe("h=1:t:");
    expect(await of("__proto__", {})).toBe("h=1:t:");
    expect(await of("__proto__.polluted", {})).toBe("h=1:t:");
    // An own `__proto__` (JSON input can hold one) is a value like any other.
    expect(await of("__proto__", JSON.parse('{"__proto__":"x"}'))).toBe("h=1:t:x");
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
