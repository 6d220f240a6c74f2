import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bodyIssues, FORBIDDEN_KEYS } from "./json-values.ts";

/** JSON values without the refused keys (fast-check draws `__proto__` and friends on purpose). */
const clean = fc
  .jsonValue()
  .filter((v) => !FORBIDDEN_KEYS.some((key) => JSON.stringify(v).includes(`"${key}"`)));

/** Put `bad` at a path drawn through `value`; answers the new value and the path's keys. */
function plant(value: unknown, bad: number, steps: number[]): { value: unknown; path: string[] } {
  if (typeof value !== "object" || value === null || steps.length === 0) {
    return { value: bad, path: [] };
  }
  const keys = Object.keys(value);
  if (keys.length === 0) return { value: bad, path: [] };
  const key = keys[steps[0]! % keys.length]!;
  const inner = plant((value as Record<string, unknown>)[key], bad, steps.slice(1));
  const copy: Record<string, unknown> | unknown[] = Array.isArray(value)
    ? [...value]
    : { ...(value as object) };
  (copy as Record<string, unknown>)[key] = inner.value;
  return { value: copy, path: [key, ...inner.path] };
}

describe("bodyIssues", () => {
  it("finds nothing in JSON values, and exactly the non-finite number planted in one", () => {
    fc.assert(
      fc.property(
        clean,
        fc.constantFrom(Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN),
        fc.array(fc.nat(), { maxLength: 6 }),
        (value, bad, steps) => {
          const planted = plant(value, bad, steps);
          for (const parsed of [false, true]) {
            expect(bodyIssues(value, { parsed })).toEqual([]);
            expect(bodyIssues(planted.value, { parsed }).map((issue) => issue.path)).toEqual([
              planted.path.join("."),
            ]);
          }
        },
      ),
    );
  });

  it("ends on a value that refers to itself, however it loops", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), fc.boolean(), (length, bad) => {
        // A chain of `length` objects whose last points back to the first.
        const first: Record<string, unknown> = { n: 0 };
        let last = first;
        for (let i = 1; i < length; i++) {
          const next: Record<string, unknown> = { n: i, list: [i] };
          last.next = next;
          last = next;
        }
        last.next = first;
        if (bad) last.amount = Number.NaN;
        expect(bodyIssues(first).length).toBe(bad ? 1 : 0);
      }),
    );
  });

  it("refuses an invalid Date built in process, which JSON.stringify would write as null", () => {
    const never = new Date(Number.NaN);
    const pastTheEnd = new Date(8.64e15 + 1);
    expect(bodyIssues({ runAt: never, input: { at: [new Date(0), pastTheEnd] } })).toEqual([
      { path: "runAt", message: "an invalid Date (JSON writes it as null)" },
      { path: "input.at.1", message: "an invalid Date (JSON writes it as null)" },
    ]);
    expect(bodyIssues(never)).toEqual([
      { path: "", message: "an invalid Date (JSON writes it as null)" },
    ]);
    // A parsed body holds no Date: nothing to judge.
    expect(bodyIssues(JSON.parse(JSON.stringify({ at: never })), { parsed: true })).toEqual([]);
  });

  it("walks what toJSON answers, as JSON.stringify writes it, and names a reserved key where it is", () => {
    // A valid Date is written as its ISO text: nothing refused.
    expect(bodyIssues({ ok: new Date(0), also: [new Date(8.64e15)] })).toEqual([]);
    const wrapped = {
      data: { amount: Number.NaN },
      toJSON(this: { data: unknown }) {
        return this.data;
      },
    };
    const renamed = { toJSON: () => ({ constructor: 1, n: Number.POSITIVE_INFINITY }) };
    const hidden = { toJSON: () => ({ fine: 1 }), secret: Number.NaN };
    expect(bodyIssues({ x: wrapped, y: [renamed], z: hidden }).map((i) => i.path)).toEqual([
      "x.amount",
      "y.0.constructor",
      "y.0.n",
    ]);
    // toJSON is called with the key it is written under, as JSON.stringify calls it.
    const keys: string[] = [];
    const spy = { toJSON: (key: string) => keys.push(key) && 1 };
    bodyIssues({ a: spy, b: [spy], c: Number.NaN });
    expect(keys).toEqual(expect.arrayContaining(["a", "0"]));
    // A reserved key JSON.stringify leaves out (its value undefined, a function, a symbol, or a
    // toJSON answering one of those) sends nothing: not refused, and its value is not walked.
    const dropped = {
      constructor: undefined,
      prototype: () => Number.NaN,
      __proto__x: 1,
      nested: { prototype: Symbol("s"), constructor: { toJSON: () => undefined } },
    };
    expect(JSON.parse(JSON.stringify(dropped))).toEqual({ __proto__x: 1, nested: {} });
    expect(bodyIssues(dropped)).toEqual([]);
    expect(bodyIssues({ a: { constructor: null } }).map((i) => i.path)).toEqual(["a.constructor"]);
    // But a function with toJSON is written as its answer, and a getter may answer otherwise when
    // JSON.stringify reads it again: refused, as JSON.stringify would write them.
    const fn = Object.assign(() => 1, { toJSON: () => ({ polluted: true }) });
    expect(JSON.stringify({ constructor: fn })).toBe('{"constructor":{"polluted":true}}');
    let reads = 0;
    const getter = {
      get constructor() {
        return reads++ > 0 ? { x: 1 } : undefined;
      },
    };
    expect(bodyIssues({ a: fn, b: getter }).map((i) => i.path)).toEqual(["b.constructor"]);
    expect(bodyIssues({ constructor: fn }).map((i) => i.path)).toEqual(["constructor"]);
    // A function's toJSON answer is walked like any value.
    const inFunction = Object.assign(() => 1, {
      toJSON: () => JSON.parse('{"__proto__":{"admin":1}}'),
    });
    expect(bodyIssues({ input: inFunction }).map((i) => i.path)).toEqual(["input.__proto__"]);
    const nan = Object.assign(() => 1, { toJSON: () => [Number.NaN] });
    expect(bodyIssues({ input: nan }).map((i) => i.path)).toEqual(["input.0"]);
    const parsed = JSON.parse('{"a":[{"constructor":{"x":1}}],"b":1e400}');
    expect(bodyIssues(parsed, { parsed: true }).map((issue) => issue.path)).toEqual([
      "a.0.constructor",
      "b",
    ]);
  });
});
