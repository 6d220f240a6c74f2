/**
 * `POST /v1/jobs/batch` without an OpenTelemetry SDK (docs/adr/0019-opentelemetry-traces.md):
 * every job of the batch stores a valid `traceparent`/`tracestate` as the caller sent it (as a
 * single submit's job does), none stores a malformed one, and none a trace without the header. On
 * the memory store, Redis and `@upstash/redis`.
 */
import { trace } from "@opentelemetry/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Handlers } from "../../src/engine/index.ts";
import { call, type Harness, startHarness } from "../http/harness.ts";
import { randomTraceparent } from "../support/otel.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";

const handlers: Handlers = { echo: { run: (input) => input } };

describe.each(storeFactories)("batch, no SDK, $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;

  beforeEach(async () => {
    handle = await factory.make();
    h = await startHarness({ store: handle.store, handlers });
  });
  afterEach(async () => {
    await h.close();
    await handle.cleanup();
  });

  /** The stored `trace` of each job of a two-job batch sent with `headers`. */
  async function batchTraces(headers: Record<string, string>) {
    const res = await call(h.origin, "POST", "/v1/jobs/batch", {
      json: {
        jobs: [
          { handler: "echo", input: 1 },
          { handler: "echo", input: 2 },
        ],
      },
      headers,
    });
    expect(res.body).toMatchObject({ accepted: 2 });
    const jobs = await Promise.all(
      res.body.items.map((i: { job: { id: string } }) => h.store.getJob(i.job.id)),
    );
    return jobs.map((job) => (job && "trace" in job ? job.trace : "none"));
  }

  it("stores the caller's valid trace context with every job, a malformed one with none", async () => {
    expect(trace.getTracer("probe").startSpan("probe").isRecording()).toBe(false);
    const { traceparent } = randomTraceparent();
    const sent = { traceparent, tracestate: "congo=t61rcWkgMzE" };
    expect(await batchTraces(sent)).toEqual([sent, sent]);
    expect(await batchTraces({ traceparent: traceparent.toUpperCase() })).toEqual(["none", "none"]);
    expect(await batchTraces({})).toEqual(["none", "none"]);
  });
});
