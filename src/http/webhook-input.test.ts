/**
 * `hasUnsafeInteger`: whether `JSON.parse` would change an integer of a webhook body. Checked
 * against the parse itself: for any JSON value fast-check writes, with integers of any size
 * spliced in as literals, it says true exactly when some integer literal does not read back as
 * written.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hasUnsafeInteger } from "../core/json-values.ts";
import { bodyInput } from "./webhook-input.ts";

describe("hasUnsafeInteger", () => {
  it("finds integers a double rounds, outside strings, and nothing else", () => {
    expect(hasUnsafeInteger('{"id":820982911946154508}')).toBe(true);
    expect(hasUnsafeInteger("[-9007199254740993]")).toBe(true);
    expect(hasUnsafeInteger("9007199254740993")).toBe(true);
    // 2^53 and 10^20 read back as written; 10^21 writes as 1e+21.
    expect(hasUnsafeInteger("[9007199254740992,100000000000000000000]")).toBe(false);
    expect(hasUnsafeInteger("[1000000000000000000000]")).toBe(true);
    expect(hasUnsafeInteger("[9007199254740991,-9007199254740991]")).toBe(false);
    // Fractions and exponents are doubles by what they say.
    expect(hasUnsafeInteger('{"x":820982911946154508.5,"y":1e400,"z":1.5E+30}')).toBe(false);
    // In strings, escaped quotes included, digits are text.
    expect(hasUnsafeInteger('{"id":"820982911946154508","s":"\\"99999999999999999"}')).toBe(false);
    expect(hasUnsafeInteger('{"\\\\":99999999999999999}')).toBe(true);
  });

  it("property: true exactly when an integer literal does not read back as written", () => {
    const bigInteger = fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n });
    fc.assert(
      fc.property(fc.jsonValue(), fc.array(bigInteger, { maxLength: 3 }), (value, integers) => {
        // Integers as literals JSON.stringify cannot write (beyond doubles), in a wrapper.
        const text = `[${JSON.stringify(value)}${integers.map((n) => `,${n}`).join("")}]`;
        const parsed = JSON.parse(text) as unknown[];
        const changed = integers.some((n, i) => String(parsed[i + 1]) !== String(n));
        // A number JSON.stringify wrote itself reads back as written.
        expect(hasUnsafeInteger(text)).toBe(changed);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe("bodyInput", () => {
  it("keeps a JSON body with a rounded integer as its text", () => {
    const text = '{"id":820982911946154508}';
    expect(bodyInput(new TextEncoder().encode(text), "application/json")).toEqual({ body: text });
    expect(bodyInput(new TextEncoder().encode('{"id":42}'), "application/json")).toEqual({
      body: { id: 42 },
    });
  });
});
