/**
 * `/v1/jobs` over a real socket, end to end through the local queue delivering to the app's own
 * `/v1/worker`, on the memory store and on Redis.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/port.ts";
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

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe.each(storeFactories)("jobs over HTTP on $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;
  let t: ReturnType<typeof testHandlers>;
  const extra: Harness[] = [];

  beforeEach(async () => {
    handle = await factory.make();
    t = testHandlers();
    h = await startHarness({ store: handle.store, handlers: t.handlers });
  });

  afterEach(async () => {
    await Promise.all([h, ...extra.splice(0)].map((x) => x.close()));
    await handle.cleanup();
  });

  it("submits a job (202), runs it through the queue and long-polls its result", async () => {
    const before = Date.now();
    const submitted = await call(h.origin, "POST", "/v1/jobs", {
      json: {
        handler: "echo",
        input: { hello: "world" },
        priority: 8,
        tags: ["batch"],
        timeout: "5s",
      },
    });
    expect(submitted.status).toBe(202);
    expect(submitted.headers.get("idempotent-replayed")).toBeNull();
    const { id } = submitted.body;
    expect(submitted.headers.get("location")).toBe(`/v1/jobs/${id}`);
    expect(submitted.body).toEqual({
      id: expect.stringMatching(/^j_/),
      handler: "echo",
      status: "queued",
      runAt: expect.stringMatching(ISO),
      priority: 8,
      attempts: 0,
      createdAt: expect.stringMatching(ISO),
    });
    expect(Date.parse(submitted.body.runAt)).toBeGreaterThanOrEqual(before - 1_000);

    const done = await call(h.origin, "GET", `/v1/jobs/${id}?wait=5s`);
    expect(done.status).toBe(200);
    expect(done.body).toEqual({
      id,
      handler: "echo",
      status: "succeeded",
      input: { hello: "world" },
      result: { hello: "world" },
      attempts: 1,
      priority: 8,
      tags: ["batch"],
      runAt: submitted.body.runAt,
      createdAt: submitted.body.createdAt,
      startedAt: expect.stringMatching(ISO),
      finishedAt: expect.stringMatching(ISO),
      timeout: 5_000,
      retries: 3,
      // The node that ran it: this app's engine.
      node: expect.stringMatching(/^tw-[0-9a-f]{8}$/),
    });
  });

  it("replays an idempotency key: 200, Idempotent-Replayed, the first job, nothing new", async () => {
    const first = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", input: 1, idempotencyKey: "order-123", delay: "1h" },
    });
    const again = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", input: 2, idempotencyKey: "order-123", delay: "1h" },
    });
    expect(first.status).toBe(202);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    const listed = await call(h.origin, "GET", "/v1/jobs");
    expect(listed.body.items).toHaveLength(1);
    expect(listed.body.items[0]).toMatchObject({
      id: first.body.id,
      input: 1,
      idempotencyKey: "order-123",
    });
  });

  it("retries a failing handler through the queue until it succeeds", async () => {
    const { body } = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "flaky", input: { times: 2 }, retries: 3 },
    });
    const done = await call(h.origin, "GET", `/v1/jobs/${body.id}?wait=10s`);
    expect(done.body).toMatchObject({ status: "succeeded", attempts: 3, result: { attempt: 3 } });
  });

  it("cancels a delayed job (200); cancelling it again is 409, an unknown id 404", async () => {
    const { body } = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", delay: "1h" },
    });
    expect(Date.parse(body.runAt) - Date.parse(body.createdAt)).toBe(3_600_000);
    const cancelled = await call(h.origin, "DELETE", `/v1/jobs/${body.id}`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toEqual({ id: body.id, status: "cancelled" });
    expect((await call(h.origin, "GET", `/v1/jobs/${body.id}`)).body.status).toBe("cancelled");

    const state = await snapshot(h.store);
    expectProblem(await call(h.origin, "DELETE", `/v1/jobs/${body.id}`), 409, /cancelled/);
    expectProblem(await call(h.origin, "DELETE", "/v1/jobs/j_nope"), 404);
    expect(await snapshot(h.store)).toBe(state);
  });

  it("asks a running job to stop (202), and it ends cancelled, never retried", async () => {
    // The handler runs until released: the job is `running` for as long as the test needs.
    const { body } = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "latched", retries: 3 },
    });
    await t.latch.running;
    expect((await h.store.getJob(body.id))?.status).toBe("running");
    const asked = await call(h.origin, "DELETE", `/v1/jobs/${body.id}`);
    expect(asked.status).toBe(202);
    expect(asked.body).toMatchObject({ id: body.id, status: "running", cancelRequested: true });
    // The runner sees the request within `cancelCheckMs` (1 s) and stops waiting for the handler.
    const done = await call(h.origin, "GET", `/v1/jobs/${body.id}?wait=10s`);
    expect(done.body).toMatchObject({
      status: "cancelled",
      attempts: 1,
      cancelRequested: true,
      error: { name: "CancelledError" },
    });
    t.latch.release();
    expectProblem(await call(h.origin, "DELETE", `/v1/jobs/${body.id}`), 409, /cancelled/);
  });

  it("long-poll answers the current state when the wait is over, and caps the wait", async () => {
    const { body } = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", delay: "1h" },
    });
    let started = Date.now();
    const waited = await call(h.origin, "GET", `/v1/jobs/${body.id}?wait=300ms`);
    expect(waited.body.status).toBe("queued");
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);

    const capped = await startHarness({
      store: h.store,
      handlers: t.handlers,
      app: { maxWaitMs: 200 },
    });
    extra.push(capped);
    started = Date.now();
    const short = await call(capped.origin, "GET", `/v1/jobs/${body.id}?wait=30s`);
    expect(short.body.status).toBe("queued");
    // Capped (200 ms), not the 30 s asked for; the bound leaves room for a busy machine.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("stops polling the store when the client goes away", async () => {
    let reads = 0;
    const counting = new Proxy(h.store, {
      get(target, prop, receiver) {
        if (prop === "getJob") {
          return (id: string) => {
            reads++;
            return target.getJob(id);
          };
        }
        const value = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as Store;
    // The server side of the long-poll: its request's signal aborts when the client goes away.
    let serverSawAbort = false;
    const watched = await startHarness({
      store: counting,
      handlers: t.handlers,
      wrap: (app) => ({
        fetch: (request: Request) => {
          if (new URL(request.url).searchParams.has("wait")) {
            request.signal.addEventListener("abort", () => {
              serverSawAbort = true;
            });
          }
          return app.fetch(request);
        },
      }),
    });
    extra.push(watched);
    const { body } = await call(watched.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", delay: "1h" },
    });
    const abort = new AbortController();
    const pending = call(watched.origin, "GET", `/v1/jobs/${body.id}?wait=20s`, {
      signal: abort.signal,
    });
    const readsBefore = reads;
    await until(() => reads >= readsBefore + 2); // the long-poll is polling the store
    abort.abort();
    await expect(pending).rejects.toThrow();
    await until(() => serverSawAbort);
    const afterAbort = reads;
    expect(afterAbort).toBeGreaterThan(1);
    // Nothing reads the store any more: a window longer than the poll's backoff at this point.
    await new Promise((r) => setTimeout(r, 800));
    expect(reads).toBe(afterAbort);
  });

  it("lists jobs newest first, filtered and paged", async () => {
    const ids: string[] = [];
    for (const handler of ["echo", "echo", "typed"]) {
      const input = handler === "typed" ? { n: 1 } : null;
      ids.push(
        (await call(h.origin, "POST", "/v1/jobs", { json: { handler, input, delay: "1h" } })).body
          .id,
      );
      await new Promise((r) => setTimeout(r, 5));
    }
    const page1 = await call(h.origin, "GET", "/v1/jobs?limit=2");
    expect(page1.status).toBe(200);
    expect(page1.body.items.map((j: { id: string }) => j.id)).toEqual([ids[2], ids[1]]);
    expect(page1.body.cursor).toEqual(expect.any(String));
    const page2 = await call(
      h.origin,
      "GET",
      `/v1/jobs?limit=2&cursor=${encodeURIComponent(page1.body.cursor)}`,
    );
    expect(page2.body).toEqual({ items: [expect.objectContaining({ id: ids[0] })] });

    const typed = await call(h.origin, "GET", "/v1/jobs?handler=typed&status=queued");
    expect(typed.body.items.map((j: { id: string }) => j.id)).toEqual([ids[2]]);
    expect((await call(h.origin, "GET", "/v1/jobs?status=succeeded")).body).toEqual({ items: [] });
    expect((await call(h.origin, "GET", "/v1/jobs?scheduleId=nope")).body).toEqual({ items: [] });
  });

  it("lists only the fields asked for (id always); an unknown field is a 400", async () => {
    const big = "x".repeat(50_000);
    const { id } = (
      await call(h.origin, "POST", "/v1/jobs", {
        json: { handler: "echo", input: { big }, delay: "1h", tags: ["t"] },
      })
    ).body;
    const listed = await call(h.origin, "GET", "/v1/jobs?fields=status,%20tags,status,error");
    expect(listed.status).toBe(200);
    // No error yet: a member the job lacks stays out, as in the whole resource.
    expect(listed.body).toEqual({ items: [{ id, status: "queued", tags: ["t"] }] });
    expect(JSON.stringify(listed.body).length).toBeLessThan(200);
    const paged = await call(h.origin, "GET", "/v1/jobs?fields=input&limit=1&status=queued");
    expect(paged.body.items).toEqual([{ id, input: { big } }]);

    for (const query of ["fields=status,constructor", "fields=", "fields=,", "fields=__proto__"]) {
      const refused = await call(h.origin, "GET", `/v1/jobs?${query}`);
      expectProblem(refused, 400);
      expect(refused.body.errors[0].path).toBe("fields");
    }
    const twice = await call(h.origin, "GET", "/v1/jobs?fields=id&fields=status");
    expectProblem(twice, 400);
  });
});
