/**
 * Type-level checks of batch submit: `broker.submitMany` and `client.jobs.submitMany` take, per
 * job, a registered handler name with that handler's input, as `submit` does. `tsc --noEmit`
 * (part of `npm test`) fails when a `@ts-expect-error` below stops being an error; vitest runs
 * the rest.
 */
import { createClient } from "tickwork/client";
import { describe, expect, expectTypeOf, it } from "vitest";
import * as z from "zod";
import type { BatchResource } from "../../src/core/batch.ts";
import { defineHandlers, type Handlers } from "../../src/engine/handlers.ts";
import { createEngine } from "../../src/engine/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { LocalTransport } from "../../src/transport/local/index.ts";

const handlers = defineHandlers({
  add: { input: z.object({ a: z.number() }), run: (input) => input.a },
  greet: { input: z.string(), run: (name) => `hi ${name}` },
  free: { run: (input) => input },
});

describe("batch submit is typed by the handler map", () => {
  it("broker.submitMany: each job a registered name with its own input", async () => {
    const engine = createEngine({
      store: new MemoryStore(),
      transport: new LocalTransport({ workerUrl: "http://127.0.0.1:1/v1/worker", signingKey: "k" }),
      handlers,
    });
    const { items } = await engine.broker.submitMany([
      { handler: "add", input: { a: 1 } },
      { handler: "greet", input: "ada" },
      { handler: "free" },
    ]);
    expect(items.map((i) => i.outcome)).toEqual(["accepted", "accepted", "accepted"]);
    const never = (): unknown[] => [
      // @ts-expect-error a handler name that is not registered
      engine.broker.submitMany([{ handler: "ad", input: { a: 1 } }]),
      // @ts-expect-error one handler's input given to another (add takes { a: number })
      engine.broker.submitMany([{ handler: "add", input: "ada" }]),
      // @ts-expect-error input is required by greet's schema
      engine.broker.submitMany([{ handler: "greet" }]),
    ];
    expect(typeof never).toBe("function");
  });

  it("client.jobs.submitMany: the same, and its answer is the server's declaration", () => {
    const tw = createClient<typeof handlers>({ url: "http://127.0.0.1:1" });
    expectTypeOf(tw.jobs.submitMany).toBeCallableWith([
      { handler: "add", input: { a: 1 } },
      { handler: "greet", input: "ada" },
    ]);
    // Built with map, as a fan-out is: the names stay literal, the inputs are checked.
    const fanOut = () =>
      tw.jobs.submitMany(["ada", "bob"].map((name) => ({ handler: "greet", input: name })));
    expect(typeof fanOut).toBe("function");
    const never = (): unknown[] => [
      // @ts-expect-error a handler name that is not registered
      tw.jobs.submitMany([{ handler: "nope" }]),
      // @ts-expect-error built with map too: greet's input is a string
      tw.jobs.submitMany([1, 2].map((n) => ({ handler: "greet", input: n }))),
      // @ts-expect-error one handler's input given to another
      tw.jobs.submitMany([{ handler: "greet", input: { a: 1 } }]),
    ];
    expect(typeof never).toBe("function");
    const untyped = createClient({ url: "http://127.0.0.1:1" });
    expectTypeOf(untyped.jobs.submitMany).toBeCallableWith([{ handler: "anything", input: 1 }]);
    const loose: Handlers = handlers;
    expect(Object.keys(loose)).toHaveLength(3);
    expectTypeOf<BatchResource["items"][number]["outcome"]>().toEqualTypeOf<
      "accepted" | "replayed" | "failed"
    >();
  });
});
