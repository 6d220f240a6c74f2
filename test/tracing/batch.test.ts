/**
 * OpenTelemetry traces of `POST /v1/jobs/batch` (docs/adr/0019-opentelemetry-traces.md,
 * docs/adr/0020-batch-submit.md) with the SDK's in-memory exporter, the app on a real server with
 * the local queue delivering over HTTP, on the memory store and on Redis: one submit span for the
 * batch, a child of the caller's `traceparent`; every job of the batch stores that span's context
 * (with the caller's `tracestate`), as a single submit's job does, and its run span is a child of
 * it; a malformed `traceparent` is ignored.
 */
import { SpanKind } from "@opentelemetry/api";
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

const handlers: Handlers = { echo: { run: (input) => input } };

describe.each(storeFactories.filter((f) => f.name !== "upstash"))(
  "batch traces, local queue, $name",
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

    it("one submit span for the batch, a child of the traceparent; each job stores its context and runs under it", async () => {
      const { traceparent, traceId, spanId } = randomTraceparent();
      const key = `k-${Math.random().toString(36).slice(2, 10)}`;
      const res = await call(h.origin, "POST", "/v1/jobs/batch", {
        json: {
          jobs: [
            { handler: "echo", input: 1, idempotencyKey: key },
            { handler: "echo", input: 2 },
            { handler: "nope" },
            { handler: "echo", input: 3, idempotencyKey: key },
          ],
        },
        headers: { traceparent, tracestate: "vendor=abc" },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ accepted: 2, replayed: 1, failed: 1 });
      const ids = [res.body.items[0].job.id as string, res.body.items[1].job.id as string];
      expect(res.body.items[3].job.id).toBe(ids[0]);
      for (const id of ids) await succeeded(id);

      const submits = sdk.spans("submit");
      expect(submits).toHaveLength(1);
      const submit = submits[0]!;
      expect(submit.spanContext().traceId).toBe(traceId);
      expect(parentOf(submit)).toBe(spanId);
      expect(submit.kind).toBe(SpanKind.PRODUCER);
      expect(submit.name).toBe("submit echo");
      expect(submit.attributes).toMatchObject({
        "messaging.system": "tickwork",
        "messaging.operation.type": "create",
        "messaging.destination.name": "echo",
        "messaging.batch.message_count": 4,
      });
      const context = `00-${traceId}-${submit.spanContext().spanId}-01`;
      for (const id of ids) {
        expect((await h.store.getJob(id))?.trace).toEqual({
          traceparent: context,
          tracestate: "vendor=abc",
        });
        const run = spanOf(sdk.spans("run"), id);
        expect(run.spanContext().traceId).toBe(traceId);
        expect(parentOf(run)).toBe(submit.spanContext().spanId);
      }
    });

    it("a malformed traceparent is ignored: the batch's span starts a trace of its own", async () => {
      const res = await call(h.origin, "POST", "/v1/jobs/batch", {
        json: { jobs: [{ handler: "echo" }] },
        headers: { traceparent: "00-zzzz-not-a-trace-01", tracestate: "vendor=abc" },
      });
      expect(res.status).toBe(200);
      const id = res.body.items[0].job.id as string;
      await succeeded(id);
      const [submit] = sdk.spans("submit");
      expect(parentOf(submit!)).toBeUndefined();
      const { traceId, spanId } = submit!.spanContext();
      expect((await h.store.getJob(id))?.trace).toEqual({
        traceparent: `00-${traceId}-${spanId}-01`,
      });
      expect(parentOf(spanOf(sdk.spans("run"), id))).toBe(spanId);
    });
  },
);
