/** Type-level checks of handler definitions (tsc runs them; vitest runs the assertions). */
import { describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { defineHandler, defineHandlers, type Handlers } from "../../src/engine/handlers.ts";

describe("handler definitions", () => {
  it("type run's input from the input schema", () => {
    const handlers = defineHandlers({
      add: {
        input: z.object({ a: z.number(), b: z.number() }),
        run: (input) => {
          expectTypeOf(input).toEqualTypeOf<{ a: number; b: number }>();
          return input.a + input.b;
        },
      },
      free: { run: (input) => input },
    });
    const one = defineHandler({ input: z.string(), run: (s) => s.toUpperCase() });
    expectTypeOf(one.run).parameter(0).toEqualTypeOf<string>();
    const all: Handlers = { ...handlers, one };
    expect(Object.keys(all)).toEqual(["add", "free", "one"]);
  });
});
