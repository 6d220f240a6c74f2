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
