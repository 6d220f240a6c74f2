/**
 * The local transport's limits and lifecycle (see `local-transport.test.ts`): a throwing `backoff`,
 * `parallelism`, concurrency by default, `close()`, and option validation.
 */
import { describe, expect, it, vi } from "vitest";
import {
  gate,
  inProcessWorker,
  message,
  ok,
  signingKey,
  startServer,
  transport,
  useFakeClock,
} from "../../../test/support/local-transport.ts";
import { LocalTransport, LocalTransportClosedError } from "./index.ts";

describe("LocalTransport lifecycle", () => {
  it("gives a message up, reported, if `backoff` throws", async () => {
    const server = await startServer({ "/v1/worker": () => ({ status: 500 }) });
    const t = transport({
      workerUrl: `${server.base}/v1/worker`,
      backoff: () => {
        throw new Error("bad backoff");
      },
    });
    await t.publish([message({ retries: 2 })]);
    await t.idle();
    expect(server.received).toHaveLength(1);
    expect(t.stats()).toMatchObject({ failed: 1, pending: 0, inFlight: 0 });
    expect(t.errors[0]?.cause).toMatchObject({ message: "bad backoff" });
  });

  it("limits attempts in flight to `parallelism`", async () => {
    const answers = gate();
    const server = await startServer({
      "/v1/worker": () => ({ status: 200, after: answers.promise }),
    });
    const t = transport({ workerUrl: `${server.base}/v1/worker`, parallelism: 2 });
    await t.publish([message(), message(), message(), message()]);
    // Two reach the worker, which answers neither yet: the other two wait for a slot.
    await server.arrived(2);
    expect(t.stats()).toMatchObject({ inFlight: 2, pending: 2 });
    answers.open();
    await t.idle();
    expect(server.received).toHaveLength(4);
    expect(server.maxActive()).toBe(2);
  });

  it("runs deliveries concurrently by default", async () => {
    const answers = gate();
    const server = await startServer({
      "/v1/worker": () => ({ status: 200, after: answers.promise }),
    });
    const t = transport({ workerUrl: `${server.base}/v1/worker` });
    await t.publish([message(), message(), message(), message()]);
    // One reaches the worker, which answers none yet: all four are on their way already.
    await server.arrived(1);
    expect(t.stats()).toMatchObject({ inFlight: 4, pending: 0 });
    await server.arrived(4);
    answers.open();
    await t.idle();
    expect(server.maxActive()).toBe(4);
  });

  it("close() drops pending and in-flight deliveries and refuses later publishes", async () => {
    useFakeClock();
    const worker = inProcessWorker({
      "/v1/worker": () => ({ status: 500, hang: true }),
      "/v1/dead": ok,
    });
    const t = transport({
      workerUrl: `${worker.base}/v1/worker`,
      failureCallbackUrl: `${worker.base}/v1/dead`,
      deliver: worker.deliver,
    });
    await t.publish([message({ notBefore: Date.now() + 10_000 }), message()]);
    await vi.advanceTimersByTimeAsync(0);
    await worker.arrived(1);
    expect(t.stats()).toMatchObject({ pending: 1, inFlight: 1 });

    const idle = t.idle();
    await t.close();
    await idle;
    await t.idle();
    // Nothing is left armed (no retry, no held message, no callback), so nothing comes later.
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(worker.received).toHaveLength(1);
    expect(t.stats()).toMatchObject({ pending: 0, inFlight: 0, retried: 0, failed: 0 });
    const msg = message();
    expect(await t.publish([msg])).toEqual([
      { id: msg.id, ok: false, error: expect.any(LocalTransportClosedError) },
    ]);
  });

  it("validates its options", () => {
    expect(() => new LocalTransport({ workerUrl: "not a url", signingKey })).toThrow(TypeError);
    expect(() => new LocalTransport({ workerUrl: "http://x/w", signingKey: "" })).toThrow(
      RangeError,
    );
    expect(
      () => new LocalTransport({ workerUrl: "http://x/w", signingKey, parallelism: 0 }),
    ).toThrow(RangeError);
    // A request timeout past Node's timer limit aborted every attempt after 1 ms.
    for (const requestTimeoutMs of [Number.POSITIVE_INFINITY, 2 ** 31, 1e300, Number.NaN]) {
      expect(
        () => new LocalTransport({ workerUrl: "http://x/w", signingKey, requestTimeoutMs }),
      ).toThrow(/requestTimeoutMs/);
    }
    for (const dedupMaxEntries of [0, 1.5, 2 ** 28 + 1]) {
      expect(
        () => new LocalTransport({ workerUrl: "http://x/w", signingKey, dedupMaxEntries }),
      ).toThrow(RangeError);
    }
  });
});
