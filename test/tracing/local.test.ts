/**
 * OpenTelemetry traces with the SDK's in-memory exporter (docs/adr/0019-opentelemetry-traces.md),
 * the app on a real server with the local queue delivering over HTTP to `/v1/worker`, on the
 * memory store and on Redis: one job's submit → publish → run → handler spans share one trace
 * (the caller's `traceparent`, or the active span when embedded); a job its handler submits joins
 * it; a schedule's occurrence carries its tick's context and its run links to that tick; hostile
 * trace headers are ignored.
 */
import { type Span, SpanKind, trace } from "@opentelemetry/api";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Handlers } from "../../src/engine/index.ts";
import { call, type Harness, startHarness, until } from "../http/harness.ts";
import { parentOf, randomTraceparent, registerSdk, type Sdk, spanOf } from "../support/otel.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";

let sdk: Sdk;
beforeAll(() => {
  sdk = registerSdk();
});
afterAll(() => sdk.shutdown());

const app = trace.getTracer("test-app");

const handlers: Handlers = {
  echo: { run: (input) => input },
  // The handler's own span, and a job it submits: both must join the run's trace.
  parent: {
    run: async (_input, ctx) =>
      app.startActiveSpan("handler work", async (span: Span) => {
        const { job } = await ctx.jobs.submit({ handler: "echo", input: { from: ctx.jobId } });
        span.end();
        return { child: job.id };
      }),
  },
};

describe.each(storeFactories.filter((f) => f.name !== "upstash"))(
  "traces, local queue, $name",
  (factory) => {
    let handle: StoreHandle;
    let h: Harness;

    beforeEach(async () => {
      sdk.exporter.reset();
      handle = await factory.make();
      h = await startHarness({ store: handle.store, handlers });
    });
    afterEach(async () => {
      await h.close();
      await handle.cleanup();
    });

    async function succeeded(id: string) {
      await until(async () => (await h.store.getJob(id))?.status === "succeeded");
    }

    it("POST /v1/jobs with a traceparent: submit, publish, run and handler spans share its trace", async () => {
      const { traceparent, traceId, spanId } = randomTraceparent();
      const res = await call(h.origin, "POST", "/v1/jobs", {
        json: { handler: "parent", input: {} },
        headers: { traceparent, tracestate: "vendor=abc,other=x1" },
      });
      expect(res.status).toBe(202);
      const id = res.body.id as string;
      await succeeded(id);
      const child = ((await h.store.getJob(id))!.result as { child: string }).child;
      await succeeded(child);

      const submit = spanOf(sdk.spans("submit"), id);
      expect(submit.spanContext().traceId).toBe(traceId);
      expect(parentOf(submit)).toBe(spanId);
      expect(submit.kind).toBe(SpanKind.PRODUCER);
      expect(submit.name).toBe("submit parent");
      expect(submit.attributes).toMatchObject({
        "messaging.system": "tickwork",
        "messaging.operation.type": "create",
        "messaging.message.id": id,
        "messaging.destination.name": "parent",
        "tickwork.job.replayed": false,
      });
      // Stored: the submit span's context (the run's parent), with the caller's tracestate.
      const stored = (await h.store.getJob(id))?.trace;
      expect(stored).toEqual({
        traceparent: `00-${traceId}-${submit.spanContext().spanId}-01`,
        tracestate: "vendor=abc,other=x1",
      });

      const publish = sdk
        .spans("publish")
        .find((s) => s.links.some((l) => l.context.spanId === submit.spanContext().spanId));
      expect(publish?.spanContext().traceId).toBe(traceId);
      expect(publish?.kind).toBe(SpanKind.PRODUCER);
      expect(publish?.attributes).toMatchObject({
        "messaging.operation.type": "send",
        "messaging.batch.message_count": 1,
      });

      const run = spanOf(sdk.spans("run"), id);
      expect(run.spanContext().traceId).toBe(traceId);
      expect(parentOf(run)).toBe(submit.spanContext().spanId);
      expect(run.kind).toBe(SpanKind.CONSUMER);
      expect(run.attributes).toMatchObject({
        "messaging.operation.type": "process",
        "messaging.message.id": id,
        "messaging.destination.name": "parent",
        "tickwork.job.attempt": 1,
        "tickwork.job.outcome": "succeeded",
      });

      const work = sdk.all().find((s) => s.name === "handler work");
      expect(work?.spanContext().traceId).toBe(traceId);
      expect(parentOf(work!)).toBe(run.spanContext().spanId);

      // The job the handler submitted: its submit is a child of the handler's span, its run of that.
      const childSubmit = spanOf(sdk.spans("submit"), child);
      expect(childSubmit.spanContext().traceId).toBe(traceId);
      expect(parentOf(childSubmit)).toBe(work!.spanContext().spanId);
      const childRun = spanOf(sdk.spans("run"), child);
      expect(childRun.spanContext().traceId).toBe(traceId);
      expect(parentOf(childRun)).toBe(childSubmit.spanContext().spanId);
    });

    it("POST /v1/flows with a traceparent: every job of the flow joins its trace", async () => {
      const { traceparent, traceId, spanId } = randomTraceparent();
      const res = await call(h.origin, "POST", "/v1/flows", {
        json: { children: [{ handler: "echo", input: 1 }], parent: { handler: "echo", input: 2 } },
        headers: { traceparent },
      });
      expect(res.status).toBe(202);
      const ids = [res.body.children[0].id as string, res.body.parent.id as string];
      // The released parent waits in the outbox for a tick; it carries its own submit's context.
      await until(async () => {
        await h.engine.ticker.tick();
        return (await h.store.getJob(ids[1] as string))?.status === "succeeded";
      }, 15_000);
      for (const id of ids) {
        const submit = spanOf(sdk.spans("submit"), id);
        expect(submit.spanContext().traceId).toBe(traceId);
        expect(parentOf(submit)).toBe(spanId);
        const run = spanOf(sdk.spans("run"), id);
        expect(parentOf(run)).toBe(submit.spanContext().spanId);
      }
    });

    it("embedded: a submit inside an active span joins that span's trace", async () => {
      const { id, traceId, spanId } = await app.startActiveSpan("request", async (span: Span) => {
        const { job } = await h.engine.broker.submit({ handler: "echo", input: 1 });
        span.end();
        return {
          id: job.id,
          traceId: span.spanContext().traceId,
          spanId: span.spanContext().spanId,
        };
      });
      await succeeded(id);
      const submit = spanOf(sdk.spans("submit"), id);
      expect(submit.spanContext().traceId).toBe(traceId);
      expect(parentOf(submit)).toBe(spanId);
      const run = spanOf(sdk.spans("run"), id);
      expect(run.spanContext().traceId).toBe(traceId);
      expect(parentOf(run)).toBe(submit.spanContext().spanId);
    });

    it("a schedule's occurrence carries its tick's context; its run links to the tick", async () => {
      const startAt = Date.now() + 300;
      await h.engine.broker.createSchedule({
        id: "traced",
        handler: "echo",
        schedule: "1h",
        startAt,
      });
      const tick = await h.engine.ticker.tick();
      expect(tick).toMatchObject({ leader: true, dispatched: 1 });
      const id = `traced@${startAt}`;
      await succeeded(id);

      const [tickSpan] = sdk.spans("tick");
      expect(tickSpan?.attributes).toMatchObject({
        "messaging.batch.message_count": 1,
        "tickwork.tick.occurrences": [id],
      });
      const tickContext = tickSpan!.spanContext();
      expect((await h.store.getJob(id))?.trace).toEqual({
        traceparent: `00-${tickContext.traceId}-${tickContext.spanId}-01`,
      });
      // The tick's publish is its child.
      const publish = sdk
        .spans("publish")
        .find((s) => s.links.some((l) => l.context.spanId === tickContext.spanId));
      expect(parentOf(publish!)).toBe(tickContext.spanId);

      const run = spanOf(sdk.spans("run"), id);
      expect(run.spanContext().traceId).not.toBe(tickContext.traceId);
      expect(run.links.map((l) => l.context.spanId)).toEqual([tickContext.spanId]);
      expect(run.links[0]?.context.traceId).toBe(tickContext.traceId);
      expect(run.attributes).toMatchObject({ "tickwork.schedule.id": "traced" });
    });

    it("hostile traceparent and tracestate values are ignored: 202, nothing stored, a fresh trace", async () => {
      const { traceId, spanId } = randomTraceparent();
      const hostile = [
        `00-${traceId}-${spanId}-0`, // too short
        `00-${traceId}-${spanId}-011`, // too long for version 00
        `00-${traceId.toUpperCase()}-${spanId}-01`, // uppercase
        `00-${"0".repeat(32)}-${spanId}-01`, // all-zero trace id
        `00-${traceId}-${"0".repeat(16)}-01`, // all-zero span id
        `ff-${traceId}-${spanId}-01`, // version ff
        `00_${traceId}_${spanId}_01`,
        `00-${traceId}-${spanId}-01, 00-${traceId}-${spanId}-01`, // two headers, joined
        "x".repeat(8_000),
      ];
      for (const traceparent of hostile) {
        sdk.exporter.reset();
        const res = await call(h.origin, "POST", "/v1/jobs", {
          json: { handler: "echo", input: 1 },
          headers: { traceparent, tracestate: "a=b" },
        });
        expect(res.status, traceparent).toBe(202);
        const id = res.body.id as string;
        await succeeded(id);
        const submit = spanOf(sdk.spans("submit"), id);
        expect(submit.spanContext().traceId, traceparent).not.toBe(traceId);
        expect(parentOf(submit), traceparent).toBeUndefined();
        // What is stored is the submit span's own context, never the hostile value.
        const stored = (await h.store.getJob(id))?.trace;
        expect(stored?.traceparent.slice(3, 35)).toBe(submit.spanContext().traceId);
        expect(stored?.tracestate).toBeUndefined();
      }

      // A 10 kB tracestate, and one breaking W3C's list rules, are dropped; the traceparent is kept.
      const valid = randomTraceparent();
      for (const tracestate of [
        "k=v,".repeat(2_500),
        "Upper=1",
        "a=1,a=2",
        "a=b=c",
        "a=",
        `${Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(",")}`,
      ]) {
        sdk.exporter.reset();
        const res = await call(h.origin, "POST", "/v1/jobs", {
          json: { handler: "echo", input: 1 },
          headers: { traceparent: valid.traceparent, tracestate },
        });
        expect(res.status).toBe(202);
        const id = res.body.id as string;
        await succeeded(id);
        const submit = spanOf(sdk.spans("submit"), id);
        expect(submit.spanContext().traceId).toBe(valid.traceId);
        expect(submit.spanContext().traceState).toBeUndefined();
        expect(
          (await h.store.getJob(id))?.trace?.tracestate,
          tracestate.slice(0, 40),
        ).toBeUndefined();
      }
    });
  },
);
