/**
 * Without an OpenTelemetry SDK a submit's and a run's `tracestate` is checked once (it is stored
 * and carried) and never parsed again by the API (docs/adr/0019-opentelemetry-traces.md): the
 * no-op tracer never reads the remote parent's trace state, so `createTraceState` must not run.
 * Spied on through a module mock, over real HTTP and the local queue.
 */
import * as api from "@opentelemetry/api";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { call, type Harness, startHarness, until } from "../http/harness.ts";
import { randomTraceparent } from "../support/otel.ts";

vi.mock("@opentelemetry/api", async (importOriginal) => {
  const original = await importOriginal<typeof import("@opentelemetry/api")>();
  return { ...original, createTraceState: vi.fn(original.createTraceState) };
});

describe("no SDK: the tracestate is not parsed per submit or run", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("stores and carries it without createTraceState", async () => {
    expect(api.trace.getTracer("probe").startSpan("probe").isRecording()).toBe(false);
    h = await startHarness({ store: new MemoryStore(), handlers: { echo: { run: (x) => x } } });
    const tracestate = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";
    const res = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", input: 1 },
      headers: { traceparent: randomTraceparent().traceparent, tracestate },
    });
    expect(res.status).toBe(202);
    const id = res.body.id as string;
    await until(async () => (await h?.store.getJob(id))?.status === "succeeded");
    expect((await h.store.getJob(id))?.trace?.tracestate).toBe(tracestate);
    expect(vi.mocked(api.createTraceState)).not.toHaveBeenCalled();
  });
});
