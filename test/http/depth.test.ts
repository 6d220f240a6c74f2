/**
 * How deep a job may nest is the same whatever route carries it: a job `POST /v1/jobs` takes is
 * taken inside a batch (`{"jobs":[…]}`) and a flow (`{"children":[…]}`, `parent`) too, and one it
 * refuses (400) is refused there as well. Over a real socket, on the memory store.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH } from "../../src/core/schemas.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { call, expectProblem, type Harness, startHarness } from "./harness.ts";

/** A job whose body nests exactly `depth` levels (its object, then arrays around a number). */
function jobOfDepth(depth: number): { handler: string; input: unknown } {
  let input: unknown = 1;
  for (let i = 1; i < depth; i++) input = [input];
  return { handler: "echo", input };
}

describe("nesting depth of a job, alone, in a batch and in a flow", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      store: new MemoryStore(),
      handlers: { echo: { run: (input: unknown) => input } },
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("a job at the limit is taken on every route", async () => {
    const deepest = jobOfDepth(MAX_JSON_DEPTH);
    expect((await call(h.origin, "POST", "/v1/jobs", { json: deepest })).status).toBe(202);
    const batch = await call(h.origin, "POST", "/v1/jobs/batch", {
      json: { jobs: [{ handler: "echo" }, deepest] },
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(batch.body.items.map((i: { outcome: string }) => i.outcome)).toEqual([
      "accepted",
      "accepted",
    ]);
    const flow = await call(h.origin, "POST", "/v1/flows", {
      json: { children: [deepest], parent: { ...jobOfDepth(MAX_JSON_DEPTH - 1) } },
    });
    expect(flow.status, JSON.stringify(flow.body)).toBe(202);
  });

  it("a job one level deeper is refused on every route, nothing written", async () => {
    const tooDeep = jobOfDepth(MAX_JSON_DEPTH + 1);
    const before = (await h.engine.store.stats()).totals.submitted;
    expectProblem(await call(h.origin, "POST", "/v1/jobs", { json: tooDeep }), 400);
    const batch = await call(h.origin, "POST", "/v1/jobs/batch", {
      json: { jobs: [{ handler: "echo" }, tooDeep] },
    });
    expectProblem(batch, 400);
    expect(batch.body.detail).toBe(
      `a job of the request body nests deeper than ${MAX_JSON_DEPTH} levels`,
    );
    expectProblem(
      await call(h.origin, "POST", "/v1/flows", {
        json: { children: [tooDeep], parent: { handler: "echo" } },
      }),
      400,
    );
    const parent = await call(h.origin, "POST", "/v1/flows", {
      json: { children: [{ handler: "echo" }], parent: tooDeep },
    });
    expectProblem(parent, 400);
    expect(parent.body.errors).toEqual([
      { path: "parent", message: `more than ${MAX_JSON_DEPTH} levels of objects and arrays` },
    ]);
    expect((await h.engine.store.stats()).totals.submitted).toBe(before);
  });
});
