/**
 * Type-level checks of handler definitions and of what they type: `tsc --noEmit` (part of
 * `npm test`) fails when a `@ts-expect-error` below stops being an error; vitest runs the rest.
 */
import { createClient, type HandlerResult } from "tickwork/client";
import { createApp } from "tickwork/http";
import { describe, expect, expectTypeOf, it } from "vitest";
import * as z from "zod";
import {
  defineHandler,
  defineHandlers,
  type HandlerContext,
  type HandlerInput,
  type Handlers,
  type SubmitJob,
} from "../../src/engine/handlers.ts";
import { createEngine } from "../../src/engine/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { LocalTransport } from "../../src/transport/local/index.ts";

const handlers = defineHandlers({
  add: {
    input: z.object({ a: z.number(), b: z.number().default(1) }),
    run: (input) => {
      expectTypeOf(input).toEqualTypeOf<{ a: number; b: number }>();
      return input.a + input.b;
    },
  },
  free: { run: (input) => input },
  maybe: { input: z.object({ n: z.number() }).optional(), run: (input) => input?.n },
  stamp: {
    input: z.object({ label: z.string() }),
    run: ({ label }) => ({
      at: new Date(),
      label,
      note: label === "" ? undefined : label,
      format: () => label,
      list: [new Date(), undefined],
      seen: new Set([label]),
    }),
  },
});

describe("handler definitions", () => {
  it("type run's input from the input schema", () => {
    const one = defineHandler({ input: z.string(), run: (s) => s.toUpperCase() });
    expectTypeOf(one.run).parameter(0).toEqualTypeOf<string>();
    const all: Handlers = { ...handlers, one };
    expect(Object.keys(all)).toEqual(["add", "free", "maybe", "stamp", "one"]);
  });

  it("keep each schema's input type (before defaults)", () => {
    expectTypeOf<HandlerInput<typeof handlers, "add">>().toEqualTypeOf<{ a: number; b?: number }>();
    expectTypeOf<HandlerInput<typeof handlers, "free">>().toEqualTypeOf<unknown>();
  });
});

describe("the handler map types the engine", () => {
  const engine = createEngine({
    store: new MemoryStore(),
    transport: new LocalTransport({ workerUrl: "http://127.0.0.1:1/v1/worker", signingKey: "k" }),
    handlers,
  });

  it("submit and createSchedule accept only registered names, each with its input", async () => {
    const { job } = await engine.broker.submit({ handler: "add", input: { a: 1 } });
    expect(job.handler).toBe("add");
    await engine.broker.submit({ handler: "free" });
    await engine.broker.submit({ handler: "free", input: [1, "two"] });
    await engine.broker.submit({ handler: "maybe" });
    await engine.broker.createSchedule({ handler: "add", schedule: "1h", input: { a: 2 } });
    const typo = () =>
      // @ts-expect-error a handler name that is not registered
      engine.broker.submit({ handler: "ad", input: { a: 1 } });
    await expect(typo()).rejects.toThrow(/unknown handler|ad/);
    const wrong = () =>
      // @ts-expect-error input of the wrong type
      engine.broker.submit({ handler: "add", input: { a: "1" } });
    await expect(wrong()).rejects.toThrow(/input/);
    const missing = () =>
      // @ts-expect-error input is required by add's schema
      engine.broker.submit({ handler: "add" });
    await expect(missing()).rejects.toThrow(/input/);
    const schedule = () =>
      // @ts-expect-error a schedule's input is checked the same way
      engine.broker.createSchedule({ handler: "add", schedule: "1h", input: { b: 2 } });
    await expect(schedule()).rejects.toThrow(/input/);
    await engine.ticker.tick();
  });

  it("an untyped map accepts any name and input, and a typed engine serves over HTTP", () => {
    const loose: Handlers = handlers;
    const untyped = createEngine({ ...engine, handlers: loose });
    expectTypeOf(untyped.broker.submit).toBeCallableWith({ handler: "anything", input: 1 });
    expect(typeof createApp({ engine, dev: true }).fetch).toBe("function");
  });
});

describe("the handler map types the client", () => {
  it("createClient<typeof handlers>() accepts only registered names, each with its input", () => {
    const tw = createClient<typeof handlers>({ url: "http://127.0.0.1:1" });
    expectTypeOf(tw.jobs.submit<"add">).toBeCallableWith({ handler: "add", input: { a: 1 } });
    expectTypeOf(tw.schedules.create<"free">).toBeCallableWith({ handler: "free", schedule: "5m" });
    // Compile-time only: the calls below are never made.
    const never = (): unknown[] => [
      // @ts-expect-error a handler name that is not registered
      tw.jobs.submit({ handler: "ad", input: { a: 1 } }),
      // @ts-expect-error input of the wrong type
      tw.jobs.submit({ handler: "add", input: { a: "1" } }),
      // @ts-expect-error input is required by add's schema
      tw.schedules.create({ handler: "add", schedule: "1h" }),
      // @ts-expect-error a patch names registered handlers only
      tw.schedules.handle("s").update({ handler: "nope" }),
    ];
    // A name typed as a union takes the input of whichever name it is, not any of theirs.
    const either = (name: "add" | "stamp") => [
      // @ts-expect-error add's input given where the name may be stamp
      tw.jobs.submit({ handler: name, input: { a: 1 } }),
      // @ts-expect-error the same for a schedule
      tw.schedules.create({ handler: name, schedule: "1h", input: { label: "x" } }),
    ];
    expect(typeof either).toBe("function");
    // Optional fields take `undefined` (exactOptionalPropertyTypes), as the client sends them.
    const maybe = (key: string | undefined, signal: AbortSignal | undefined) =>
      tw.jobs.submit({ handler: "free", idempotencyKey: key, delay: undefined }, { signal });
    expect(typeof maybe).toBe("function");
    expect(typeof never).toBe("function");
    const untyped = createClient({ url: "http://127.0.0.1:1" });
    expectTypeOf(untyped.jobs.submit).toBeCallableWith({ handler: "anything", input: 1 });
  });

  it("a job's result() and final update are typed by its handler's run", () => {
    expectTypeOf<HandlerResult<typeof handlers, "add">>().toEqualTypeOf<number>();
    expectTypeOf<HandlerResult<typeof handlers, "maybe">>().toEqualTypeOf<number | undefined>();
    expectTypeOf<HandlerResult<typeof handlers, "free">>().toEqualTypeOf<unknown>();
    // As stored and answered: its JSON (a Date is its ISO text, a function and undefined leave
    // an object and are null in an array, a Set is {}).
    expectTypeOf<HandlerResult<typeof handlers, "stamp">>().toEqualTypeOf<{
      at: string;
      label: string;
      note: string | undefined;
      list: (string | null)[];
      seen: Record<string, never>;
    }>();
    // A handler defined apart with defineHandler keeps its result in the map.
    const apart = defineHandler({ input: z.string(), run: async (s) => s.length });
    const mixed = defineHandlers({ apart, add: handlers.add });
    expectTypeOf<HandlerResult<typeof mixed, "apart">>().toEqualTypeOf<number>();
    expectTypeOf<HandlerResult<typeof mixed, "add">>().toEqualTypeOf<number>();
    expectTypeOf(mixed.apart.run).parameter(0).toEqualTypeOf<string>();
    const tw = createClient<typeof handlers>({ url: "http://127.0.0.1:1" });
    const never = async () => {
      const handle = await tw.jobs.submit({ handler: "add", input: { a: 1 } });
      const result = await handle.result();
      expectTypeOf(result).toEqualTypeOf<number>();
      // @ts-expect-error add's run returns a number
      const text: string = result;
      for await (const update of handle.updates()) {
        // @ts-expect-error the final update's result is add's too
        if (update.type === "done") update.job.result?.toUpperCase();
      }
      return text;
    };
    expect(typeof never).toBe("function");
  });
});

describe("a map types its own handlers' follow-up submits", () => {
  // Each handler names the map it is part of as a type argument. A run whose result is computed
  // from the typed call's answer declares its result type (`relay`): inferring it would make the
  // map's type circular (TS7022), so tsc fails this file if that changes for the worse.
  const chain = defineHandlers({
    first: {
      input: z.object({ n: z.number() }),
      run: async ({ n }, ctx) => {
        await ctx.jobs.submit<typeof chain>({ handler: "second", input: { label: String(n) } });
        return String(n);
      },
    },
    second: {
      input: z.object({ label: z.string() }),
      run: async ({ label }, ctx) => {
        await ctx.jobs.submitFlow<typeof chain>({
          children: [{ handler: "first", input: { n: 1 } }],
          parent: { handler: "second", input: { label } },
        });
        return label.length;
      },
    },
    relay: {
      run: async (_input, ctx): Promise<string> => {
        const { job } = await ctx.jobs.submit<typeof chain>({ handler: "first", input: { n: 2 } });
        return job.id;
      },
    },
  });

  it("accepts only the map's names, each with its input; untyped without the argument", () => {
    expectTypeOf<HandlerResult<typeof chain, "first">>().toEqualTypeOf<string>();
    expectTypeOf<HandlerResult<typeof chain, "second">>().toEqualTypeOf<number>();
    expectTypeOf<HandlerResult<typeof chain, "relay">>().toEqualTypeOf<string>();
    // Compile-time only: the calls below are never made.
    const never = (ctx: HandlerContext): unknown[] => [
      // @ts-expect-error a handler name that is not in the map
      ctx.jobs.submit<typeof chain>({ handler: "nope", input: { n: 1 } }),
      // @ts-expect-error second's input is { label: string }
      ctx.jobs.submit<typeof chain>({ handler: "second", input: { label: 1 } }),
      // @ts-expect-error first's input is required by its schema
      ctx.jobs.submit<typeof chain>({ handler: "first" }),
      ctx.jobs.submitFlow<typeof chain>({
        children: [],
        // @ts-expect-error a flow's jobs are typed too
        parent: { handler: "first", input: { n: "1" } },
      }),
      // Without a map: any name and input, as before.
      ctx.jobs.submit({ handler: "anything", input: [1] }),
    ];
    expect(typeof never).toBe("function");
    // What the untyped submit took before it became generic still fits.
    const old: SubmitJob = { handler: "x", input: 1, delay: "5s", runAt: new Date(), tags: ["t"] };
    expectTypeOf<HandlerContext["jobs"]["submit"]>().toBeCallableWith(old);
  });
});
