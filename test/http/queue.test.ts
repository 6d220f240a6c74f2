/**
 * The queue's routes over a real socket — tick, worker, dead-letter callback, dead-letter list —
 * on the memory store and on Redis. The local queue delivers end to end; the `ChaosQueue` double is
 * used where a test must decide exactly when (and how often) a delivery arrives.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JobRecord, JobSpec } from "../../src/core/model.ts";
import { signDelivery } from "../../src/transport/signing.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { prng } from "../support/prng.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import {
  call,
  expectProblem,
  type Harness,
  SIGNING_KEY,
  snapshot,
  startHarness,
  testHandlers,
} from "./harness.ts";

/** The spec a delivery carries for a stored job. */
function specOf(job: JobRecord): JobSpec {
  const {
    status: _s,
    attempts: _a,
    startedAt: _st,
    finishedAt: _f,
    result: _r,
    error: _e,
    ...spec
  } = job;
  return spec;
}

describe.each(storeFactories)("queue routes over HTTP on $name", (factory) => {
  let handle: StoreHandle;
  let t: ReturnType<typeof testHandlers>;
  const servers: Harness[] = [];

  async function start(options: Partial<Parameters<typeof startHarness>[0]> = {}) {
    const h = await startHarness({ store: handle.store, handlers: t.handlers, ...options });
    servers.push(h);
    return h;
  }

  beforeEach(async () => {
    handle = await factory.make();
    t = testHandlers();
  });

  afterEach(async () => {
    await Promise.all(servers.splice(0).map((h) => h.close()));
    await handle.cleanup();
  });

  it("tick: needs the secret when one is set (401), answers the tick's result with it", async () => {
    const h = await start({ app: { tickSecret: "cron-s3cret" } });
    const attempts: Record<string, string>[] = [
      {},
      { authorization: "Bearer wrong" },
      { authorization: "Basic cron-s3cret" },
    ];
    for (const headers of attempts) {
      const refused = await call(h.origin, "POST", "/v1/tick", { headers });
      expectProblem(refused, 401);
      expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer/);
    }
    for (const method of ["GET", "POST"]) {
      const ok = await call(h.origin, method, "/v1/tick", {
        headers: { authorization: "Bearer cron-s3cret" },
      });
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({
        leader: true,
        dispatched: 0,
        recovered: 0,
        due: 0,
        tookMs: expect.any(Number),
      });
    }
  });

  it("tick: answers leader false while another tick holds the lease", async () => {
    const h = await start();
    await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "s", handler: "echo", schedule: "1s" },
    });
    const lease = await h.store.acquireLease("tick", 5_000);
    expect(lease.acquired).toBe(true);
    const tick = await call(h.origin, "POST", "/v1/tick");
    expect(tick.status).toBe(200);
    expect(tick.body).toEqual({ leader: false, leaseRemainingMs: expect.any(Number) });
    expect(tick.body.leaseRemainingMs).toBeGreaterThan(0);
  });

  it("dead → dead-letter list → retry (202) → succeeded; a dead job can be deleted", async () => {
    const h = await start();
    const { body } = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "gated", retries: 0 },
    });
    const dead = await call(h.origin, "GET", `/v1/jobs/${body.id}?wait=5s`);
    expect(dead.body).toMatchObject({
      status: "dead",
      error: { name: "NonRetryableError", message: "the gate is closed" },
    });
    await h.local!.idle(); // the failure callback (POST /v1/dead) has been answered too
    const listed = await call(h.origin, "GET", "/v1/dlq");
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      items: [expect.objectContaining({ id: body.id, status: "dead" })],
    });

    t.gate.open = true;
    const retried = await call(h.origin, "POST", `/v1/dlq/${body.id}/retry`);
    expect(retried.status).toBe(202);
    expect(retried.body).toMatchObject({ id: body.id, status: "queued" });
    const done = await call(h.origin, "GET", `/v1/jobs/${body.id}?wait=5s`);
    expect(done.body).toMatchObject({ status: "succeeded", result: "passed" });
    expect((await call(h.origin, "GET", "/v1/dlq")).body).toEqual({ items: [] });
    expectProblem(await call(h.origin, "POST", `/v1/dlq/${body.id}/retry`), 404);

    t.gate.open = false;
    const second = (await call(h.origin, "POST", "/v1/jobs", { json: { handler: "gated" } })).body;
    await call(h.origin, "GET", `/v1/jobs/${second.id}?wait=5s`);
    await h.local!.idle();
    const removed = await call(h.origin, "DELETE", `/v1/dlq/${second.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ id: second.id, status: "deleted" });
    expectProblem(await call(h.origin, "GET", `/v1/jobs/${second.id}`), 404);
    expectProblem(await call(h.origin, "DELETE", `/v1/dlq/${second.id}`), 404);
    expectProblem(await call(h.origin, "GET", "/v1/dlq?limit=0"), 400);
  });

  it("worker and dead callback refuse unsigned deliveries (401) and change nothing", async () => {
    const h = await start();
    const { body } = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", delay: "1h" },
    });
    const spec = specOf((await h.store.getJob(body.id))!);
    const state = await snapshot(h.store);
    const worker = await call(h.origin, "POST", "/v1/worker", { json: spec });
    expectProblem(worker, 401, /signature/);
    const forged = await call(h.origin, "POST", "/v1/worker", {
      json: spec,
      headers: {
        "upstash-signature": await signDelivery({
          signingKey: "not-the-key",
          url: `${h.origin}/v1/worker`,
          body: JSON.stringify(spec),
        }),
      },
    });
    expectProblem(forged, 401, /signature/);
    const deadCallback = await call(h.origin, "POST", "/v1/dead", {
      json: { sourceBody: btoa(JSON.stringify(spec)) },
    });
    expectProblem(deadCallback, 401, /signature/);
    expect(await snapshot(h.store)).toBe(state);
  });

  it("checks signatures against publicUrl under a base path", async () => {
    const basePath = "/api/tickwork";
    const publicUrl = "https://jobs.example.com/api/tickwork/";
    const h = await start({ basePath, app: { basePath, publicUrl } });
    const { body } = await call(h.origin, "POST", `${basePath}/v1/jobs`, {
      json: { handler: "echo", input: 7, delay: "1h" },
    });
    expect(body.id).toEqual(expect.any(String));
    const text = JSON.stringify(specOf((await h.store.getJob(body.id))!));
    const signedFor = async (url: string) => ({
      body: text,
      headers: {
        "content-type": "application/json",
        "upstash-signature": await signDelivery({ signingKey: SIGNING_KEY, url, body: text }),
      },
    });
    const wrongUrl = await call(
      h.origin,
      "POST",
      `${basePath}/v1/worker`,
      await signedFor(`${h.origin}${basePath}/v1/worker`),
    );
    expectProblem(wrongUrl, 401, /signature/);
    const ok = await call(
      h.origin,
      "POST",
      `${basePath}/v1/worker`,
      await signedFor("https://jobs.example.com/api/tickwork/v1/worker"),
    );
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ id: body.id, status: "succeeded" });
    expect(ok.headers.get("x-request-id")).toBeTruthy();
    expect((await call(h.origin, "GET", `${basePath}/v1/jobs/${body.id}`)).body).toMatchObject({
      status: "succeeded",
      result: 7,
    });
  });

  it("worker: a concurrent attempt gets 409 + Retry-After, a duplicate delivery 200 without a second run", async () => {
    const queue = new ChaosQueue(prng(1));
    const h = await start({ transport: queue });
    // The first attempt runs until the test releases it: the second must meet it running,
    // however slow the machine.
    const { body } = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "latched" },
    });
    expect(queue.pending).toHaveLength(1);
    const job = queue.pending[0]!.message.job;
    const deliver = () =>
      call(h.origin, "POST", "/v1/worker", {
        body: JSON.stringify(job),
        headers: {
          "content-type": "application/json",
          "upstash-signature": "chaos-queue-signature",
        },
      });
    const first = deliver();
    await t.latch.running;
    const second = await deliver();
    expect(second.status).toBe(409);
    expect(Number(second.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    t.latch.release();
    expect((await first).status).toBe(200);
    const duplicate = await deliver();
    expect(duplicate.status).toBe(200);
    expect(duplicate.body).toEqual({ id: body.id, status: "succeeded" });
    expect(t.runs.filter((r) => r.jobId === body.id)).toHaveLength(1);

    // And the queue double's own path: worker answers drive its retries and failure callback.
    const url = (path: string) => `${h.origin}${path}`;
    const viaHttp = (path: string) => (d: { headers: Headers; body: string }) =>
      fetch(url(path), { method: "POST", headers: d.headers, body: d.body });
    const gated = (
      await call(h.origin, "POST", "/v1/jobs", { json: { handler: "gated", retries: 2 } })
    ).body;
    await queue.deliverSome(viaHttp("/v1/worker"), viaHttp("/v1/dead"), 10);
    expect(queue.stats.callbacks).toBe(1);
    expect(
      (await call(h.origin, "GET", "/v1/dlq")).body.items.map((j: { id: string }) => j.id),
    ).toEqual([gated.id]);
  });
});
