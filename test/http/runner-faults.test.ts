/**
 * The two ways a job could be lost or run twice that the fault suite (`npm run chaos`) found, over
 * real HTTP on every store: a failure callback that arrives while the reported attempt still holds
 * its run lease, and a store that fails to record an outcome after the handler ran.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JobSpec } from "../../src/core/model.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { faultyStore } from "../support/faulty-store.ts";
import { prng } from "../support/prng.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import { call, expectProblem, type Harness, startHarness, testHandlers } from "./harness.ts";

const SIGNED = { "content-type": "application/json", "upstash-signature": "chaos-queue-signature" };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A failure callback for `spec`, in QStash's documented shape. */
function failureCallback(spec: JobSpec): string {
  return JSON.stringify({
    status: 500,
    header: {},
    body: btoa("boom"),
    retried: 0,
    maxRetries: 0,
    sourceMessageId: "msg_1",
    url: "http://worker.example/v1/worker",
    method: "POST",
    sourceHeader: {},
    sourceBody: btoa(JSON.stringify(spec)),
  });
}

describe.each(storeFactories)("runner under faults on $name", (factory) => {
  let handle: StoreHandle;
  const servers: Harness[] = [];

  beforeEach(async () => {
    handle = await factory.make();
  });

  afterEach(async () => {
    await Promise.all(servers.splice(0).map((h) => h.close()));
    await handle.cleanup();
  });

  it("a failure callback for an attempt still under its lease gets 409 + Retry-After, then the job dies", async () => {
    const queue = new ChaosQueue(prng(2));
    const h = await startHarness({
      store: handle.store,
      handlers: testHandlers().handlers,
      transport: queue,
    });
    servers.push(h);
    const { body } = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", retries: 0, timeout: "1s" },
    });
    const spec = queue.pending[0]!.message.job;
    // A worker began the attempt and died mid-handler: the job is running under a lease.
    const begun = await handle.store.beginRun(spec, spec.timeoutMs + 100);
    expect(begun.kind).toBe("run");

    const early = await call(h.origin, "POST", "/v1/dead", {
      body: failureCallback(spec),
      headers: SIGNED,
    });
    expectProblem(early, 409, /still running/);
    expect(Number(early.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await handle.store.getJob(body.id))?.status).toBe("running");

    await sleep(spec.timeoutMs + 200); // the lease has run out: the queue's retry of the callback
    const late = await call(h.origin, "POST", "/v1/dead", {
      body: failureCallback(spec),
      headers: SIGNED,
    });
    expect(late.status).toBe(200);
    expect(late.body).toEqual({ id: body.id, status: "dead" });
    expect((await handle.store.listDead({ limit: 10 })).items.map((j) => j.id)).toEqual([body.id]);
  });

  it("a store that cannot be reached: the queue routes answer 503 without Retry-After, the API routes with it", async () => {
    const queue = new ChaosQueue(prng(4));
    const outage = { on: false };
    // Every call fails as an unreachable Redis does while the outage lasts.
    const store = new Proxy(handle.store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) =>
          outage.on
            ? Promise.reject(
                Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }),
              )
            : value.apply(target, args);
      },
    });
    const t = testHandlers();
    const h = await startHarness({ store, handlers: t.handlers, transport: queue });
    servers.push(h);
    const { body } = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", input: 1 },
    });
    const spec = queue.pending[0]!.message.job;
    outage.on = true;
    // QStash honours a Retry-After on any answer: 5 s would spend the job's retries within an
    // outage of 20 s. Without one it backs off on its own (12 s, 2.5 min, 30 min, …).
    for (const [path, payload] of [
      ["/v1/worker", JSON.stringify(spec)],
      ["/v1/dead", failureCallback(spec)],
    ] as const) {
      const answer = await call(h.origin, "POST", path, { body: payload, headers: SIGNED });
      expectProblem(answer, 503);
      expect(answer.body.code ?? answer.body.type, path).toMatch(/store_unavailable/);
      expect(answer.headers.get("retry-after"), path).toBeNull();
    }
    const read = await call(h.origin, "GET", `/v1/jobs/${body.id}`);
    expectProblem(read, 503);
    expect(read.headers.get("retry-after")).toBe("5");
    outage.on = false;
    // Nothing was lost: the queue's next try runs it.
    const delivered = await call(h.origin, "POST", "/v1/worker", {
      body: JSON.stringify(spec),
      headers: SIGNED,
    });
    expect(delivered.status).toBe(200);
    expect((await handle.store.getJob(body.id))?.status).toBe("succeeded");
  });

  it("an outcome the store failed to record is retried while the lease holds: the handler runs once", async () => {
    const queue = new ChaosQueue(prng(3));
    let failures = 1;
    const store = faultyStore(
      handle.store,
      (method, phase) => method === "finishRun" && phase === "before" && failures-- > 0,
    );
    const t = testHandlers();
    const h = await startHarness({ store, handlers: t.handlers, transport: queue });
    servers.push(h);
    const { body } = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", input: 1, timeout: "5s" },
    });
    const spec = queue.pending[0]!.message.job;
    const delivered = await call(h.origin, "POST", "/v1/worker", {
      body: JSON.stringify(spec),
      headers: SIGNED,
    });
    expect(delivered.status).toBe(200);
    expect(store.crashes).toBe(1);
    expect((await handle.store.getJob(body.id))?.status).toBe("succeeded");
    // A duplicate delivery finds the recorded success and does not run the handler again.
    await call(h.origin, "POST", "/v1/worker", { body: JSON.stringify(spec), headers: SIGNED });
    expect(t.runs.filter((r) => r.jobId === body.id)).toHaveLength(1);
  });
});
