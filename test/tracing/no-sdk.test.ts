/**
 * Without an OpenTelemetry SDK (docs/adr/0019-opentelemetry-traces.md): nothing breaks, a submit
 * without a `traceparent` stores no trace field, a valid one is stored as the caller sent it and
 * carried in the delivery's body, and a malformed one is neither stored nor carried. The local
 * queue delivers over HTTP; on the memory store, Redis and `@upstash/redis`.
 */
import { trace } from "@opentelemetry/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Handlers } from "../../src/engine/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { call, type Harness, startHarness, until } from "../http/harness.ts";
import { randomTraceparent } from "../support/otel.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import { recordingHandlers } from "../webhooks/harness.ts";
import { hmacSender } from "../webhooks/senders.ts";

const handlers: Handlers = {
  echo: { run: (input) => input },
  // A job a handler submits: with no SDK there is no active span, so it has no trace either.
  fanout: { run: async (_input, ctx) => (await ctx.jobs.submit({ handler: "echo" })).job.id },
};

describe.each(storeFactories)("no SDK, $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;
  /** Bodies of the deliveries to /v1/worker, by job id. */
  const delivered = new Map<string, Record<string, unknown>>();

  beforeEach(async () => {
    delivered.clear();
    handle = await factory.make();
    h = await startHarness({
      store: handle.store,
      handlers,
      wrap: (app) => ({
        async fetch(request) {
          if (new URL(request.url).pathname === "/v1/worker") {
            const body = JSON.parse(await request.clone().text()) as Record<string, unknown>;
            delivered.set(body.id as string, body);
          }
          return app.fetch(request);
        },
      }),
    });
  });
  afterEach(async () => {
    await h.close();
    await handle.cleanup();
  });

  async function submit(headers: Record<string, string> = {}, handler = "echo") {
    const res = await call(h.origin, "POST", "/v1/jobs", { json: { handler, input: 1 }, headers });
    expect(res.status).toBe(202);
    const id = res.body.id as string;
    await until(async () => (await h.store.getJob(id))?.status === "succeeded");
    return id;
  }

  it("no SDK is registered: spans do not record", () => {
    expect(trace.getTracer("probe").startSpan("probe").isRecording()).toBe(false);
  });

  it("no traceparent: the job runs, and neither its record nor its delivery has a trace field", async () => {
    const id = await submit({}, "fanout");
    const job = await h.store.getJob(id);
    expect(job && "trace" in job).toBe(false);
    expect("trace" in (delivered.get(id) ?? { trace: "missing delivery" })).toBe(false);
    const child = job?.result as string;
    await until(async () => (await h.store.getJob(child))?.status === "succeeded");
    expect("trace" in ((await h.store.getJob(child)) ?? {})).toBe(false);
  });

  it("a valid traceparent and tracestate are stored as sent and carried on the delivery", async () => {
    const { traceparent } = randomTraceparent();
    const id = await submit({ traceparent, tracestate: "congo=t61rcWkgMzE" });
    const expected = { traceparent, tracestate: "congo=t61rcWkgMzE" };
    expect((await h.store.getJob(id))?.trace).toEqual(expected);
    expect(delivered.get(id)?.trace).toEqual(expected);
  });

  it("a malformed traceparent is neither stored nor carried, and the submit succeeds", async () => {
    const { traceparent } = randomTraceparent();
    for (const bad of [traceparent.toUpperCase(), `ff${traceparent.slice(2)}`, "00-0-0-0"]) {
      const id = await submit({ traceparent: bad, tracestate: "a=b" });
      expect("trace" in ((await h.store.getJob(id)) ?? {}), bad).toBe(false);
      expect("trace" in (delivered.get(id) ?? { trace: "missing delivery" }), bad).toBe(false);
    }
  });
});

describe("no SDK, an inbound webhook", () => {
  it("stores the sender's valid traceparent with the job, and ignores a malformed one", async () => {
    const sender = hmacSender();
    const rec = recordingHandlers();
    const h = await startHarness({
      store: new MemoryStore(),
      handlers: rec.handlers,
      app: { webhooks: { hmac: { verifier: sender.verifier, handler: "hook.receive" } } },
    });
    try {
      const { traceparent } = randomTraceparent();
      for (const [sent, stored] of [
        [traceparent, { traceparent }],
        [traceparent.toUpperCase(), undefined],
      ] as const) {
        const eventId = `evt_${Math.random().toString(36).slice(2)}`;
        const body = sender.body(eventId);
        const headers = { ...(await sender.sign(body, eventId)), traceparent: sent };
        const res = await call(h.origin, "POST", "/v1/hooks/hmac", { body, headers });
        expect(res.status).toBe(202);
        expect((await h.store.getJob(res.body.id))?.trace).toEqual(stored);
      }
    } finally {
      await h.close();
    }
  });
});
