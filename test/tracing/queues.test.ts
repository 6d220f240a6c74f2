/**
 * One job's spans share one trace across submit → delivery → handler on the other queues
 * (docs/adr/0019-opentelemetry-traces.md), with the SDK's in-memory exporter: QStash (the
 * QStash double delivering over HTTP to the app's `/v1/worker`, on memory and Redis) and Redis
 * Streams (dispatched inside the submit's script, run by a `PullWorker`, on a real Redis), and
 * Cloudflare Queues (the message body through a producer binding to the consumer loop).
 */
import { randomUUID } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { type Span, trace } from "@opentelemetry/api";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createEngine,
  type Engine,
  type Handlers,
  PullWorker,
  silentLogger,
} from "../../src/engine/index.ts";
import { createApp } from "../../src/http/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import {
  CloudflareQueuesTransport,
  consumeQueueBatch,
  type QueueMessage,
  type QueueSendRequest,
} from "../../src/transport/cloudflare-queues/index.ts";
import { QStashTransport } from "../../src/transport/qstash/index.ts";
import { call, until } from "../http/harness.ts";
import { parentOf, randomTraceparent, registerSdk, type Sdk, spanOf } from "../support/otel.ts";
import { type QStashDouble, startQStashDouble } from "../support/qstash-double/index.ts";
import { REDIS_URL, type StoreHandle, storeFactories } from "../support/stores.ts";

let sdk: Sdk;
beforeAll(() => {
  sdk = registerSdk();
});
afterAll(() => sdk.shutdown());

const app = trace.getTracer("test-app");

const handlers: Handlers = {
  traced: {
    run: (input) =>
      app.startActiveSpan("handler work", (span: Span) => {
        span.end();
        return input;
      }),
  },
};

/** The submit, run and handler spans of job `id` share `traceId`, each the child of the one before. */
function expectOneTrace(id: string, traceId: string, callerSpanId: string) {
  const submit = spanOf(sdk.spans("submit"), id);
  expect(submit.spanContext().traceId).toBe(traceId);
  expect(parentOf(submit)).toBe(callerSpanId);
  const run = spanOf(sdk.spans("run"), id);
  expect(run.spanContext().traceId).toBe(traceId);
  expect(parentOf(run)).toBe(submit.spanContext().spanId);
  const work = sdk.all().find((s) => s.name === "handler work");
  expect(work?.spanContext().traceId).toBe(traceId);
  expect(parentOf(work!)).toBe(run.spanContext().spanId);
}

describe.each(storeFactories.filter((f) => f.name !== "upstash"))(
  "traces, QStash double, $name",
  (factory) => {
    let handle: StoreHandle;
    let qstash: QStashDouble;
    let server: Server;
    let origin: string;
    let engine: Engine;

    beforeEach(async () => {
      sdk.exporter.reset();
      handle = await factory.make();
      qstash = await startQStashDouble({ backoffScale: 0.001 });
      let fetchApp: ((request: Request) => Response | Promise<Response>) | undefined;
      server = serve({
        fetch: (request) => fetchApp?.(request) ?? new Response(null, { status: 503 }),
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
      engine = createEngine({ store: handle.store, transport, handlers, logger: silentLogger });
      const served = createApp({ engine, publicUrl: origin, dev: true });
      fetchApp = (request) => served.fetch(request);
    });
    afterEach(async () => {
      await qstash.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await handle.cleanup();
    });

    it("POST /v1/jobs with a traceparent → QStash → /v1/worker: one trace", async () => {
      const { traceparent, traceId, spanId } = randomTraceparent();
      const res = await call(origin, "POST", "/v1/jobs", {
        json: { handler: "traced", input: { n: 1 } },
        headers: { traceparent },
      });
      expect(res.status).toBe(202);
      const id = res.body.id as string;
      await qstash.idle();
      await until(async () => (await handle.store.getJob(id))?.status === "succeeded");
      expectOneTrace(id, traceId, spanId);
      // The delivery QStash made carried the trace context in its body (the job spec).
      const publish = sdk.spans("publish").find((s) => s.links.length === 1);
      expect(publish?.spanContext().traceId).toBe(traceId);
    });
  },
);

describe("traces, Redis Streams", () => {
  const clients: Redis[] = [];
  let engine: Engine;
  let worker: PullWorker;
  let streams: RedisStreams;

  beforeEach(() => {
    sdk.exporter.reset();
    const redis = new Redis(REDIS_URL);
    clients.push(redis);
    const prefix = `trace-${randomUUID()}`;
    const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
    streams = new RedisStreams({ redis, prefix, backoff: () => 50, maintainEveryMs: 100 });
    engine = createEngine({ store, transport: streams, handlers, logger: silentLogger });
    worker = new PullWorker({ runner: engine.runner, queue: streams, idleWaitMs: 500 });
  });
  afterEach(async () => {
    await worker.stop({ deadlineMs: 1_000 });
    await streams.close();
    for (const c of clients.splice(0)) c.disconnect();
  });

  it("a job submitted inside an active span and pulled from the stream: one trace", async () => {
    const caller = await app.startActiveSpan("request", async (span: Span) => {
      const { job } = await engine.broker.submit({ handler: "traced", input: { n: 2 } });
      span.end();
      return { id: job.id, ...span.spanContext() };
    });
    await worker.start();
    await until(async () => (await engine.broker.getJob(caller.id)).status === "succeeded");
    expectOneTrace(caller.id, caller.traceId, caller.spanId);
    // Streams dispatch inside the submit's script: nothing is published through the transport.
    expect(sdk.spans("publish")).toEqual([]);
  });

  it("a traceparent given with the submit (SubmitVia.trace) is the parent when no span is active", async () => {
    const { traceparent, traceId, spanId } = randomTraceparent();
    const { job } = await engine.broker.submit(
      { handler: "traced", input: { n: 3 } },
      {},
      { trace: { traceparent } },
    );
    await worker.start();
    await until(async () => (await engine.broker.getJob(job.id)).status === "succeeded");
    expectOneTrace(job.id, traceId, spanId);
  });
});

describe("traces, Cloudflare Queues", () => {
  it("a submit's trace travels in the queue message's body to the consumer's run", async () => {
    sdk.exporter.reset();
    // The producer binding, and the consumer loop as the Worker's `queue()` runs it: the platform
    // boundary is the only double (delivery in workerd: test/cloudflare/workerd-queues.test.ts).
    const held: string[] = [];
    const queue = {
      send: async () => {
        throw new Error("the transport only uses sendBatch");
      },
      sendBatch: async (messages: Iterable<QueueSendRequest>) => {
        for (const m of messages) held.push(String(m.body));
      },
    };
    const engine = createEngine({
      store: new MemoryStore(),
      transport: new CloudflareQueuesTransport({ queue }),
      handlers,
      logger: silentLogger,
    });
    const { traceparent, traceId, spanId } = randomTraceparent();
    const { job } = await engine.broker.submit(
      { handler: "traced", input: { n: 4 } },
      {},
      { trace: { traceparent } },
    );
    expect(held).toHaveLength(1);
    expect(JSON.parse(held[0] as string).trace.traceparent).toMatch(new RegExp(`^00-${traceId}-`));
    const messages: QueueMessage[] = held.splice(0).map((body, i) => ({
      id: `m${i}`,
      body,
      attempts: 1,
      ack: () => {},
      retry: () => {},
    }));
    await consumeQueueBatch({ queue: "tickwork", messages }, (body) =>
      engine.runner.runPulled(body),
    );
    expect((await engine.broker.getJob(job.id)).status).toBe("succeeded");
    expectOneTrace(job.id, traceId, spanId);
  });
});
