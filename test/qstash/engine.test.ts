/**
 * The engine end to end in its production shape: the HTTP app on a real server, QStashTransport
 * publishing to the QStash double, the double delivering back over HTTP to `/v1/worker` and
 * `/v1/dead` — on the memory store and on Redis.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { RetryAfterError } from "../../src/core/errors.ts";
import { createEngine, type Engine, type Handlers, silentLogger } from "../../src/engine/index.ts";
import { createApp } from "../../src/http/index.ts";
import { QStashTransport } from "../../src/transport/qstash/index.ts";
import { type QStashDouble, startQStashDouble } from "../support/qstash-double/index.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const DAY = 86_400_000;

interface Call {
  jobId: string;
  attempt: number;
  scheduleId?: string;
  fireAt?: number;
  at: number;
}

describe.each(storeFactories)("engine + QStashTransport + QStash double on $name", (factory) => {
  let handle: StoreHandle;
  let qstash: QStashDouble;
  let server: Server;
  let origin: string;
  let engine: Engine;
  const calls: Call[] = [];

  const handlers: Handlers = {
    echo: {
      run: (input, ctx) => {
        calls.push({
          jobId: ctx.jobId,
          attempt: ctx.attempt,
          ...(ctx.scheduleId !== undefined ? { scheduleId: ctx.scheduleId } : {}),
          ...(ctx.fireAt !== undefined ? { fireAt: ctx.fireAt } : {}),
          at: Date.now(),
        });
        return input;
      },
    },
    broken: {
      run: (_input, ctx) => {
        calls.push({ jobId: ctx.jobId, attempt: ctx.attempt, at: Date.now() });
        throw new Error(`broken, attempt ${ctx.attempt}`);
      },
    },
    later: {
      run: (_input, ctx) => {
        calls.push({ jobId: ctx.jobId, attempt: ctx.attempt, at: Date.now() });
        throw new RetryAfterError("come back in two days", 2 * DAY);
      },
    },
  };

  beforeEach(async () => {
    calls.length = 0;
    handle = await factory.make();
    qstash = await startQStashDouble({ backoffScale: 0.001 });
    let app: { fetch(request: Request): Response | Promise<Response> } | undefined;
    server = serve({
      fetch: (request) => app?.fetch(request) ?? new Response(null, { status: 503 }),
      port: 0,
      hostname: "127.0.0.1",
    }) as Server;
    if (!server.listening) await new Promise((resolve) => server.once("listening", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const transport = new QStashTransport({
      token: qstash.token,
      baseUrl: qstash.url,
      workerUrl: `${origin}/v1/worker`,
      failureCallbackUrl: `${origin}/v1/dead`,
      currentSigningKey: qstash.currentSigningKey,
      nextSigningKey: qstash.nextSigningKey,
      retry: false,
    });
    engine = createEngine({
      store: handle.store,
      transport,
      handlers,
      logger: silentLogger,
      leaseGraceMs: 100,
      tick: { horizonMs: 1_000 },
    });
    app = createApp({ engine, publicUrl: origin, dev: true });
  });

  afterEach(async () => {
    vi.unstubAllGlobals();
    await qstash.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await handle.cleanup();
  });

  async function api(method: string, path: string, body?: unknown) {
    const res = await fetch(`${origin}${path}`, {
      method,
      ...(body !== undefined
        ? { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }
        : {}),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it("runs a submitted job: POST /v1/jobs → QStash → /v1/worker → succeeded", async () => {
    const submitted = await api("POST", "/v1/jobs", { handler: "echo", input: { hi: "there" } });
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;
    await qstash.idle();
    const job = await api("GET", `/v1/jobs/${id}`);
    expect(job.body).toMatchObject({
      id,
      status: "succeeded",
      result: { hi: "there" },
      attempts: 1,
    });
    expect(qstash.counters).toMatchObject({
      requests: { "POST /v2/batch": 1 },
      deliveries: 1,
      delivered: 1,
    });
    expect(qstash.deliveries[0]!.url).toBe(`${origin}/v1/worker`);
  });

  it("a job due at a sub-second time starts no earlier than its runAt (QStash takes whole seconds)", async () => {
    // 600 ms into a second at least a second ahead: published for the start of that second, so
    // the double delivers it about 600 ms early and the runner waits out the rest.
    const runAt = (Math.floor(Date.now() / 1000) + 2) * 1000 + 600;
    const submitted = await api("POST", "/v1/jobs", {
      handler: "echo",
      input: 1,
      runAt: new Date(runAt).toISOString(),
    });
    expect(submitted.status).toBe(202);
    await qstash.idle();
    const delivered = qstash.deliveries.find((d) => d.kind === "message");
    expect(delivered?.at).toBeLessThan(runAt);
    const [call] = calls.filter((c) => c.jobId === submitted.body.id);
    expect(call!.at).toBeGreaterThanOrEqual(runAt);
  });

  it("a job that always fails with retries 1 ends dead and in /v1/dlq via the failure callback", async () => {
    const submitted = await api("POST", "/v1/jobs", { handler: "broken", retries: 1 });
    const id = submitted.body.id as string;
    await qstash.idle();
    expect(calls.map((c) => c.attempt)).toEqual([1, 2]);
    expect(qstash.deliveries.map((d) => [d.kind, d.retried, d.status])).toEqual([
      ["message", 0, 500],
      ["message", 1, 489], // the runner knows it is the last attempt and gives up
      ["failure-callback", 0, 200],
    ]);
    const job = await api("GET", `/v1/jobs/${id}`);
    expect(job.body).toMatchObject({ id, status: "dead" });
    const dlq = await api("GET", "/v1/dlq");
    expect((dlq.body.items as { id: string }[]).map((j) => j.id)).toEqual([id]);
  });

  it('a "1s" schedule, ticked: every occurrence delivered once, on time, with distinct fireAt', async () => {
    const created = await api("POST", "/v1/schedules", { handler: "echo", schedule: "1s" });
    expect(created.status).toBe(201);
    const scheduleId = created.body.id as string;
    let dispatched = 0;
    for (let i = 0; i < 3; i++) {
      const tick = await api("POST", "/v1/tick");
      expect(tick.body).toMatchObject({ leader: true });
      dispatched += tick.body.dispatched as number;
      await sleep(1_000);
    }
    await api("DELETE", `/v1/schedules/${scheduleId}`);
    await qstash.idle();
    const fired = calls.filter((c) => c.scheduleId === scheduleId);
    expect(fired.length).toBeGreaterThanOrEqual(3);
    expect(fired).toHaveLength(dispatched);
    const fireAts = fired.map((c) => c.fireAt!);
    expect(new Set(fireAts).size).toBe(fireAts.length);
    for (const fireAt of fireAts) expect(fireAt % 1000).toBe(0);
    for (const call of fired) expect(call.at).toBeGreaterThanOrEqual(call.fireAt!);
    expect(new Set(fired.map((c) => c.jobId)).size).toBe(fired.length);
  });

  it("a retry asked for past a day (more than QStash waits) is not run sooner: acked, left to the job's watch", async () => {
    // QStash ignores a Retry-After over one day and retries on its own backoff (the double too).
    const submitted = await api("POST", "/v1/jobs", { handler: "later", retries: 3 });
    const id = submitted.body.id as string;
    await qstash.idle();
    expect(calls.map((c) => c.attempt)).toEqual([1]);
    const answers = qstash.deliveries.filter((d) => d.kind === "message");
    expect(answers.map((d) => d.status)).toEqual([200]);
    const job = await api("GET", `/v1/jobs/${id}`);
    expect(job.body).toMatchObject({ status: "failed", attempts: 1 });
    // Its watch waits out the two days (and reapAfterMs): a tick now sends nothing again.
    const tick = await engine.ticker.tick();
    expect(tick).toMatchObject({ leader: true, recovered: 0 });
  });

  it("a tick with 250 due occurrences makes ≤ ceil(250/100) QStash requests", async () => {
    // First fire at startAt for all 250 ("1h" anchored at startAt), due within the tick's horizon.
    const startAt = Date.now() + 1_500;
    await Promise.all(
      Array.from({ length: 250 }, (_, i) =>
        engine.broker.createSchedule({ id: `bulk-${i}`, handler: "echo", schedule: "1h", startAt }),
      ),
    );
    await sleep(Math.max(0, startAt - 900 - Date.now()));
    const qstashRequests: string[] = [];
    const realFetch = globalThis.fetch;
    vi.stubGlobal("fetch", (input: RequestInfo | URL, init?: RequestInit) => {
      const url = input instanceof Request ? input.url : String(input);
      if (url.startsWith(`${qstash.url}/`)) qstashRequests.push(url);
      return realFetch(input, init);
    });
    const tick = await engine.ticker.tick();
    vi.unstubAllGlobals();
    expect(tick).toMatchObject({ leader: true, dispatched: 250, fenced: false });
    expect(qstashRequests.length).toBeLessThanOrEqual(Math.ceil(250 / 100));
    expect(qstashRequests.every((url) => url === `${qstash.url}/v2/batch`)).toBe(true);
    expect(qstash.counters.publishRequests).toBe(qstashRequests.length);
    await qstash.idle();
    const fired = calls.filter((c) => c.scheduleId?.startsWith("bulk-"));
    expect(fired).toHaveLength(250);
    expect(new Set(fired.map((c) => c.scheduleId)).size).toBe(250);
    expect(fired.every((c) => c.fireAt === startAt && c.at >= startAt)).toBe(true);
  });
});
