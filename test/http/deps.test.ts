/**
 * Job dependencies over HTTP (ADR 0014): `after` and `onFailure` on `POST /v1/jobs`, unknown ids
 * answered 422, a waiting job listed and released through the local queue, on every store.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import {
  call,
  expectProblem,
  type Harness,
  snapshot,
  startHarness,
  testHandlers,
  until,
} from "./harness.ts";

describe.each(storeFactories)("job dependencies over HTTP on $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;
  let t: ReturnType<typeof testHandlers>;

  beforeEach(async () => {
    handle = await factory.make();
    t = testHandlers();
    h = await startHarness({ store: handle.store, handlers: t.handlers });
  });

  afterEach(async () => {
    await h.close();
    await handle.cleanup();
  });

  const submit = (json: unknown) => call(h.origin, "POST", "/v1/jobs", { json });
  const job = async (id: string) => (await call(h.origin, "GET", `/v1/jobs/${id}`)).body;

  it("unknown ids answer 422 naming them, and nothing is written", async () => {
    const before = await snapshot(h.store);
    const missing = `j_${"1".repeat(21)}`;
    const answer = await submit({ handler: "echo", after: [missing] });
    expectProblem(answer, 422, new RegExp(missing));
    expect(answer.body.type).toBe("urn:tickwork:problem:unknown_dependencies");
    expect(await snapshot(h.store)).toBe(before);
    // Not a job id at all: a malformed request.
    expectProblem(await submit({ handler: "echo", after: ["nope"] }), 400);
    expectProblem(await submit({ handler: "echo", after: [missing], onFailure: "x" }), 400);
    const tooMany = Array.from({ length: 101 }, (_, i) => `j_${String(i).padStart(21, "0")}`);
    expectProblem(await submit({ handler: "echo", after: tooMany }), 400);
  });

  it("a job after another waits, is listed as waiting, and runs once it succeeded", async () => {
    const a = await submit({ handler: "latched", input: {} });
    expect(a.status).toBe(202);
    const c = await submit({ handler: "echo", input: { c: 1 }, after: [a.body.id] });
    expect(c.status).toBe(202);
    expect(c.body.status).toBe("waiting");
    expect(await job(c.body.id)).toMatchObject({
      status: "waiting",
      after: [a.body.id],
      onFailure: "cancel",
    });
    const waiting = await call(h.origin, "GET", "/v1/jobs?status=waiting");
    expect(waiting.body.items.map((j: { id: string }) => j.id)).toEqual([c.body.id]);
    await t.latch.running;
    // A is running: a tick publishes nothing for C.
    await h.engine.ticker.tick();
    expect((await job(c.body.id)).status).toBe("waiting");
    t.latch.release();
    await until(async () => (await job(a.body.id)).status === "succeeded");
    expect((await job(c.body.id)).status).toBe("queued");
    // Released into the outbox: the tick's recover step publishes it.
    await h.engine.ticker.tick();
    await until(async () => (await job(c.body.id)).status === "succeeded");
    expect(t.runs.map((r) => r.jobId)).toEqual([a.body.id, c.body.id]);
  });

  it("a dependency dead-lettered cancels a dependent; onFailure run runs it", async () => {
    const a = await submit({ handler: "gated", retries: 0 });
    const cancelled = await submit({ handler: "echo", after: [a.body.id] });
    const runs = await submit({ handler: "echo", after: [a.body.id], onFailure: "run" });
    await until(async () => (await job(a.body.id)).status === "dead");
    expect((await job(cancelled.body.id)).status).toBe("cancelled");
    await h.engine.ticker.tick();
    await until(async () => (await job(runs.body.id)).status === "succeeded");
    expect(t.runs.map((r) => r.jobId)).toEqual([runs.body.id]);
  });
});
