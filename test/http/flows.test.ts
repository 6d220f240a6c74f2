/**
 * Flows over HTTP (src/engine/flows.ts): `POST /v1/flows` stores the children, then the parent
 * waiting for them; the parent runs once they all succeeded and reads their results through
 * `ctx.after` and `ctx.jobs.get`. A bad job anywhere in the flow writes nothing; the same flow
 * again with its idempotency key answers the same jobs. A handler fans out with
 * `ctx.jobs.submitFlow`, and its retry does not fan out twice. On every store.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { HandlerContext, Handlers } from "../../src/engine/index.ts";
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

describe.each(storeFactories)("flows over HTTP on $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;
  let fanOuts = 0;

  const handlers: Handlers = {
    ...testHandlers().handlers,
    square: { run: (input: unknown) => (input as { n: number }).n ** 2 },
    sum: {
      run: async (_input: unknown, ctx: HandlerContext) => {
        const children = await Promise.all((ctx.after ?? []).map((id) => ctx.jobs.get(id)));
        return children.reduce((total, child) => total + (child.result as number), 0);
      },
    },
    peek: {
      run: async (input: unknown, ctx: HandlerContext) => {
        try {
          return (await ctx.jobs.get((input as { id: string }).id)).id;
        } catch (error) {
          return (error as Error).name;
        }
      },
    },
    fanOut: {
      retries: 1,
      run: async (_input: unknown, ctx: HandlerContext) => {
        fanOuts += 1;
        const flow = await ctx.jobs.submitFlow({
          children: [1, 2, 3].map((n) => ({ handler: "square", input: { n } })),
          parent: { handler: "sum" },
          idempotencyKey: `${ctx.jobId}:fan-out`,
        });
        if (ctx.attempt === 1)
          throw new Error("fail after fanning out: the retry must not fan out again");
        return flow.parent.id;
      },
    },
  };

  beforeEach(async () => {
    fanOuts = 0;
    handle = await factory.make();
    h = await startHarness({ store: handle.store, handlers });
  });

  afterEach(async () => {
    await h.close();
    await handle.cleanup();
  });

  const flow = (json: unknown) => call(h.origin, "POST", "/v1/flows", { json });
  const job = async (id: string) => (await call(h.origin, "GET", `/v1/jobs/${id}`)).body;
  /** Ticks until `id` is `status` (a released parent waits in the outbox for the tick). */
  const settle = (id: string, status: string) =>
    until(async () => {
      await h.engine.ticker.tick();
      return (await job(id)).status === status;
    }, 15_000);

  it("children run, then the parent, which reads their results", async () => {
    const body = {
      children: [2, 3, 4].map((n) => ({ handler: "square", input: { n } })),
      parent: { handler: "sum", tags: ["report"] },
    };
    const answer = await flow(body);
    expect(answer.status).toBe(202);
    expect(answer.body.children).toHaveLength(3);
    expect(answer.body.parent.status).toBe("waiting");
    expect(answer.headers.get("location")).toMatch(
      new RegExp(`/v1/jobs/${answer.body.parent.id}$`),
    );
    const ids = answer.body.children.map((c: { id: string }) => c.id);
    expect(await job(answer.body.parent.id)).toMatchObject({ after: ids, tags: ["report"] });
    await settle(answer.body.parent.id, "succeeded");
    expect((await job(answer.body.parent.id)).result).toBe(4 + 9 + 16);
  });

  it("a bad job anywhere in the flow is a 4xx and writes nothing", async () => {
    const before = await snapshot(h.store);
    const good = { handler: "square", input: { n: 1 } };
    expectProblem(await flow({ children: [good, { handler: "nope" }], parent: good }), 422);
    // A job's own checks name their paths from the flow's body: the job's place, then its field.
    const badInput = await flow({
      children: [good, { handler: "typed", input: { n: "x" } }],
      parent: good,
    });
    expectProblem(badInput, 422);
    expect(badInput.body.errors.map((e: { path: string }) => e.path)).toEqual([
      "children.1.input.n",
    ]);
    const badParent = await flow({ children: [good], parent: { handler: "typed", input: [1] } });
    expectProblem(badParent, 422);
    expect(badParent.body.errors.map((e: { path: string }) => e.path)).toEqual(["parent.input"]);
    expectProblem(await flow({ children: [good], parent: { handler: "sum", priority: 99 } }), 400);
    expectProblem(await flow({ children: [], parent: good }), 400);
    expectProblem(await flow({ children: Array(101).fill(good), parent: good }), 400);
    expectProblem(await flow({ children: [good] }), 400);
    expectProblem(await flow({ children: [good], parent: good, extra: 1 }), 400);
    // A child naming a job the tenant does not have: refused before the first child is stored.
    const unknown = await flow({
      children: [good, { ...good, after: ["j_0mwxa9xfphc7zv0crypps", "j_0mwxa9xfphc7zv0cryppt"] }],
      parent: good,
    });
    expectProblem(unknown, 422, /unknown jobs: j_0mwxa9xfphc7zv0crypps, j_0mwxa9xfphc7zv0cryppt/);
    expect(unknown.body.type).toBe("urn:tickwork:problem:unknown_dependencies");
    const handlerUnknown = await flow({ children: [good, { handler: "nope" }], parent: good });
    expectProblem(handlerUnknown, 422);
    expect(handlerUnknown.body.errors).toEqual([
      { path: "children.1.handler", message: 'no handler named "nope" is registered' },
    ]);
    // Its path names the child, as every error of a flow does.
    expect(unknown.body.errors.map((e: { path: string }) => e.path)).toEqual([
      "children.1.after",
      "children.1.after",
    ]);
    // So when the flow or the child names a key (the child is then tried first, by the store,
    // which refuses it without writing anything).
    for (const keyed of [
      { children: [good, { ...good, after: ["j_0mwxa9xfphc7zv0crypps"] }], idempotencyKey: "fk9" },
      { children: [good, { ...good, after: ["j_0mwxa9xfphc7zv0crypps"], idempotencyKey: "c1" }] },
    ]) {
      const answer = await flow({ ...keyed, parent: good });
      expectProblem(answer, 422);
      expect(answer.body.type).toBe("urn:tickwork:problem:unknown_dependencies");
      expect(answer.body.errors.map((e: { path: string }) => e.path)).toEqual(["children.1.after"]);
    }
    // Two jobs of one flow with one idempotencyKey: the second would replay the first.
    const shared = { ...good, idempotencyKey: "same" };
    for (const body of [
      { children: [shared, good], parent: shared },
      { children: [good, shared, shared], parent: good },
    ]) {
      const answer = await flow(body);
      expectProblem(answer, 400);
      expect(answer.body.errors[0].message).toMatch(/same idempotencyKey as children\.\d/);
    }
    // The parent waits for its children; it names no `after` of its own, in any shape.
    for (const after of [[], ["j_0mwxa9xfphc7zv0crypps"], "j_0mwxa9xfphc7zv0crypps", null]) {
      expectProblem(await flow({ children: [good], parent: { ...good, after } }), 400);
    }
    // The keys a flow derives are reserved: no plain submit takes them first.
    expectProblem(
      await call(h.origin, "POST", "/v1/jobs", {
        json: { ...good, idempotencyKey: "flow:k:parent" },
      }),
      400,
    );
    expectProblem(
      await flow(
        JSON.parse('{"children":[{"handler":"square","__proto__":{}}],"parent":{"handler":"sum"}}'),
      ),
      400,
    );
    expect(await snapshot(h.store)).toBe(before);
  });

  it("the same flow again with its key answers the same jobs and stores nothing new", async () => {
    const body = {
      children: [5, 6].map((n) => ({ handler: "square", input: { n } })),
      parent: { handler: "sum" },
      idempotencyKey: "nightly-2026-11-26",
    };
    const first = await flow(body);
    const again = await flow(body);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    // The same jobs (their statuses may have moved on meanwhile: the children run at once).
    const ids = (b: { parent: { id: string }; children: { id: string }[] }) => [
      b.parent.id,
      ...b.children.map((c) => c.id),
    ];
    expect(ids(again.body)).toEqual(ids(first.body));
    await settle(first.body.parent.id, "succeeded");
    expect((await job(first.body.parent.id)).result).toBe(25 + 36);
  });

  it("in process, a job whose idempotencyKey (or parent's after) is undefined gets the flow's key: submitted again, the same jobs", async () => {
    // A body built as `{ handler, input, idempotencyKey: maybeKey }` with no key at hand.
    const none: string | undefined = undefined;
    const noAfter: string[] | undefined = undefined;
    const body = {
      children: [{ handler: "square", input: { n: 3 }, idempotencyKey: none }],
      // An `after` left undefined is no `after`, as a key left undefined is no key.
      parent: { handler: "sum", idempotencyKey: none, after: noAfter },
      idempotencyKey: "in-process",
    };
    const first = await h.engine.broker.submitFlow(body);
    const again = await h.engine.broker.submitFlow(body);
    expect(again.replayed).toBe(true);
    expect([again.parent.id, again.children[0]?.id]).toEqual([
      first.parent.id,
      first.children[0]?.id,
    ]);
  });

  it("a flow submitted again answers its jobs even when a child's dependency has gone since", async () => {
    const dep = (await call(h.origin, "POST", "/v1/jobs", { json: { handler: "gated" } })).body;
    await settle(dep.id, "dead");
    const body = {
      children: [{ handler: "square", input: { n: 2 }, after: [dep.id] }],
      parent: { handler: "sum" },
      idempotencyKey: "after-gone",
    };
    const first = await flow(body);
    expect(first.status).toBe(202);
    expect((await call(h.origin, "DELETE", `/v1/dlq/${dep.id}`)).status).toBe(200);
    expect((await call(h.origin, "GET", `/v1/jobs/${dep.id}`)).status).toBe(404);
    const again = await flow(body);
    expect(again.status).toBe(200);
    const ids = (b: { parent: { id: string }; children: { id: string }[] }) => [
      b.parent.id,
      ...b.children.map((c) => c.id),
    ];
    expect(ids(again.body)).toEqual(ids(first.body));
    // Without the key it is a new flow, refused, and nothing is written.
    const before = await snapshot(h.store);
    expectProblem(await flow({ ...body, idempotencyKey: undefined }), 422);
    expect(await snapshot(h.store)).toBe(before);
  });

  it("a handler reads jobs of its own tenant only", async () => {
    const theirs = await h.engine.broker.submit(
      { handler: "square", input: { n: 1 } },
      { tenant: "other" },
    );
    const ours = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "square", input: { n: 2 } },
    });
    const peek = async (id: string) => {
      const started = await call(h.origin, "POST", "/v1/jobs", {
        json: { handler: "peek", input: { id } },
      });
      await settle(started.body.id, "succeeded");
      return (await job(started.body.id)).result;
    };
    expect(await peek(ours.body.id)).toBe(ours.body.id);
    expect(await peek(theirs.job.id)).toBe("RecordNotFoundError");
  });

  it("a handler fans out with ctx.jobs.submitFlow; its retry answers the same flow", async () => {
    const started = await call(h.origin, "POST", "/v1/jobs", { json: { handler: "fanOut" } });
    await settle(started.body.id, "succeeded");
    expect(fanOuts).toBe(2);
    const parentId = (await job(started.body.id)).result as string;
    await settle(parentId, "succeeded");
    expect((await job(parentId)).result).toBe(1 + 4 + 9);
    const sums = await call(h.origin, "GET", "/v1/jobs?handler=sum");
    expect(sums.body.items).toHaveLength(1);
  });
});
