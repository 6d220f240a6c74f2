/**
 * The client's request bodies against the server's schemas (`src/core/schemas.ts`), at compile
 * time: the same fields, and every value the server accepts is one the client may send. (The
 * response bodies need no such check: both sides use the one declaration in `src/core/wire.ts`.)
 */
import { expectTypeOf, test } from "vitest";
import type { CreateScheduleInput, PatchScheduleInput, SubmitJobInput } from "../core/schemas.ts";
import type {
  CreateScheduleOptions,
  Job,
  Nodes,
  Page,
  Problem,
  Schedule,
  SubmitJobOptions,
  TickResult,
  UpdateScheduleRequest,
} from "./types.ts";

type Body = "handler" | "input";
/** Each field required and without `undefined` (zod's optional fields also take `undefined`). */
type Fields<T> = { [K in keyof T]-?: Exclude<T[K], undefined> };

test("request bodies have the fields the server's schemas accept", () => {
  expectTypeOf<keyof SubmitJobOptions | Body>().toEqualTypeOf<keyof SubmitJobInput>();
  expectTypeOf<keyof CreateScheduleOptions | Body>().toEqualTypeOf<keyof CreateScheduleInput>();
  expectTypeOf<keyof UpdateScheduleRequest>().toEqualTypeOf<keyof PatchScheduleInput>();
});

test("every value the server accepts, the client may send", () => {
  expectTypeOf<Fields<Omit<SubmitJobInput, Body>>>().toExtend<Fields<SubmitJobOptions>>();
  expectTypeOf<Fields<Omit<CreateScheduleInput, Body>>>().toExtend<Fields<CreateScheduleOptions>>();
  expectTypeOf<Fields<Omit<PatchScheduleInput, Body>>>().toExtend<
    Fields<Omit<UpdateScheduleRequest, Body>>
  >();
});

test("response bodies are the server's declarations", () => {
  expectTypeOf<Job>().toEqualTypeOf<import("../core/wire.ts").JobResource>();
  expectTypeOf<Schedule>().toEqualTypeOf<import("../core/wire.ts").ScheduleResource>();
  expectTypeOf<Page<Job>>().toEqualTypeOf<import("../core/wire.ts").PageResource<Job>>();
  expectTypeOf<TickResult>().toEqualTypeOf<import("../core/wire.ts").TickResource>();
  expectTypeOf<Nodes>().toEqualTypeOf<import("../http/routes/nodes.ts").NodesResource>();
  // `deployment` names every platform the server may report.
  expectTypeOf<Nodes["deployment"]>().toEqualTypeOf<import("../http/options.ts").Platform>();
  expectTypeOf<Problem>().toEqualTypeOf<import("../core/wire.ts").Problem>();
});

test("a typed handle's updates carry its handler's result type", () => {
  const handlers = {
    add: { run: (input: { a: number; b: number }) => ({ sum: input.a + input.b }) },
    wait: { run: async () => "done" as const },
  } satisfies import("../engine/handlers.ts").Handlers;
  type H = typeof handlers;
  expectTypeOf<import("./types.ts").HandlerResult<H, "add">>().toEqualTypeOf<{ sum: number }>();
  expectTypeOf<import("./types.ts").HandlerResult<H, "wait">>().toEqualTypeOf<"done">();
  type Done = Extract<import("./updates.ts").JobUpdate<{ sum: number }>, { type: "done" }>;
  expectTypeOf<Done["job"]["result"]>().toEqualTypeOf<{ sum: number } | undefined>();
  // An untyped map: unknown.
  expectTypeOf<
    import("./types.ts").HandlerResult<import("../engine/handlers.ts").Handlers, string>
  >().toEqualTypeOf<unknown>();
});
