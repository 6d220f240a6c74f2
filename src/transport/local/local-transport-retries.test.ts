/**
 * The local transport's retries (see `local-transport.test.ts`): backoff and `Retry-After` waits,
 * 489 with and without `Upstash-NonRetryable-Error`, the failure callback and its own retries,
 * network errors and attempts that outlive `requestTimeoutMs`.
 */

import { describe, expect, it, vi } from "vitest";
import {
  calls,
  cleanUpLast,
  expectStartAt,
  fromBase64,
  header,
  inProcessWorker,
  message,
  ok,
  receiver,
  startServer,
  transport,
  until,
  useFakeClock,
} from "../../../test/support/local-transport.ts";
import type { FailureCallbackBody } from "../port.ts";
import { LocalDeliveryError } from "./index.ts";

describe("LocalTransport retries", () => {
  it("retries a 500 with backoff, same message id, Upstash-Retried counting up", async () => {
    useFakeClock();
    const worker = inProcessWorker({
      "/v1/worker": (_r, i) => (i < 2 ? { status: 500, body: "not yet" } : { status: 200 }),
      "/v1/dead": ok,
    });
    const url = `${worker.base}/v1/worker`;
    const backoff = calls((retried: number) => 40 * 2 ** retried);
    const t = transport({
      workerUrl: url,
      failureCallbackUrl: `${worker.base}/v1/dead`,
      deliver: worker.deliver,
      backoff,
    });
    await t.publish([message({ retries: 3 })]);
    await vi.advanceTimersByTimeAsync(0);
    await backoff.reached(1); // the first attempt failed; the retry waits 40 ms
    await expectStartAt(t, worker, 40);
    await backoff.reached(2); // and the next one 80 ms
    await expectStartAt(t, worker, 80);
    await t.idle();

    const attempts = worker.at("/v1/worker");
    expect(attempts.map((r) => header(r, "upstash-retried"))).toEqual(["0", "1", "2"]);
    expect(new Set(attempts.map((r) => header(r, "upstash-message-id"))).size).toBe(1);
    for (const r of attempts) {
      const signature = header(r, "upstash-signature");
      await expect(receiver.verify({ signature, body: r.body, url })).resolves.toBe(true);
    }
    expect(worker.at("/v1/dead")).toHaveLength(0);
    expect(t.stats()).toMatchObject({ delivered: 1, retried: 2, failed: 0 });
    expect(t.errors).toEqual([]);
  });

  it("waits as long as a Retry-After answer asks", async () => {
    useFakeClock();
    const worker = inProcessWorker({
      "/v1/worker": (_r, i) =>
        i === 0 ? { status: 409, headers: { "Retry-After": "1" } } : { status: 200 },
    });
    const t = transport({
      workerUrl: `${worker.base}/v1/worker`,
      deliver: worker.deliver,
      backoff: () => 5,
    });
    await t.publish([message()]);
    await vi.advanceTimersByTimeAsync(0);
    await worker.arrived(1);
    await until(() => t.stats().retried === 1, "the 409 is answered with a retry");
    await expectStartAt(t, worker, 1000);
    await t.idle();
    expect(worker.received).toHaveLength(2);
    expect(t.stats()).toMatchObject({ delivered: 1, retried: 1 });
  });

  it("stops at once on 489 + Upstash-NonRetryable-Error and fires the failure callback", async () => {
    const server = await startServer({
      "/v1/worker": () => ({
        status: 489,
        headers: { "Upstash-NonRetryable-Error": "true", "Content-Type": "application/json" },
        body: '{"error":"bad input"}',
      }),
      "/v1/dead": ok,
    });
    const workerUrl = `${server.base}/v1/worker`;
    const callbackUrl = `${server.base}/v1/dead`;
    const t = transport({ workerUrl, failureCallbackUrl: callbackUrl });
    const msg = message({ retries: 3, notBefore: Date.now() - 5 });
    const [outcome] = await t.publish([msg]);
    await t.idle();

    expect(server.at("/v1/worker")).toHaveLength(1);
    const [callback] = server.at("/v1/dead");
    expect(callback).toBeDefined();
    expect(callback!.method).toBe("POST");
    expect(header(callback!, "content-type")).toBe("application/json");
    expect(header(callback!, "upstash-retried")).toBe("0");
    expect(header(callback!, "upstash-message-id")).not.toBe(outcome!.ok && outcome!.messageId);
    const signature = header(callback!, "upstash-signature");
    await expect(
      receiver.verify({ signature, body: callback!.body, url: callbackUrl }),
    ).resolves.toBe(true);
    const headers = new Headers({ "upstash-signature": signature });
    expect(await t.verify({ url: callbackUrl, headers, body: callback!.body })).toBe(true);

    const body = JSON.parse(callback!.body) as FailureCallbackBody;
    expect(body).toEqual({
      status: 489,
      header: expect.objectContaining({
        "Upstash-Nonretryable-Error": ["true"],
        "Content-Type": ["application/json"],
      }),
      body: expect.any(String),
      retried: 0,
      maxRetries: 3,
      dlqId: expect.stringMatching(/^\d+-\d+$/),
      sourceMessageId: outcome!.ok && outcome!.messageId,
      url: workerUrl,
      method: "POST",
      sourceHeader: { "Content-Type": ["application/json"] },
      sourceBody: expect.any(String),
      notBefore: String(msg.notBefore),
      createdAt: expect.stringMatching(/^\d+$/),
    });
    expect(fromBase64(body.body)).toBe('{"error":"bad input"}');
    expect(fromBase64(body.sourceBody)).toBe(JSON.stringify(msg.job));

    expect(t.stats()).toMatchObject({ failed: 1, retried: 0, callbacksDelivered: 1 });
    expect(t.errors).toHaveLength(1);
    expect(t.errors[0]).toMatchObject({ kind: "message", status: 489, retried: 0 });
  });

  it("retries a 489 that lacks the non-retryable header", async () => {
    const server = await startServer({
      "/v1/worker": (_r, i) => (i === 0 ? { status: 489 } : { status: 200 }),
    });
    const t = transport({ workerUrl: `${server.base}/v1/worker` });
    await t.publish([message({ retries: 1 })]);
    await t.idle();
    expect(server.received).toHaveLength(2);
    expect(t.stats()).toMatchObject({ delivered: 1, retried: 1 });
  });

  it("fires the failure callback when retries are exhausted", async () => {
    const server = await startServer({
      "/v1/worker": () => ({ status: 500, body: "boom" }),
      "/v1/dead": ok,
    });
    const workerUrl = `${server.base}/v1/worker`;
    const t = transport({ workerUrl, failureCallbackUrl: `${server.base}/v1/dead` });
    const msg = message({ retries: 2 });
    await t.publish([msg]);
    await t.idle();

    const attempts = server.at("/v1/worker");
    expect(attempts.map((r) => header(r, "upstash-retried"))).toEqual(["0", "1", "2"]);
    const callbacks = server.at("/v1/dead");
    expect(callbacks).toHaveLength(1);
    const body = JSON.parse(callbacks[0]!.body) as FailureCallbackBody;
    expect(body).toMatchObject({ status: 500, retried: 2, maxRetries: 2, url: workerUrl });
    expect(fromBase64(body.body)).toBe("boom");
    expect(JSON.parse(fromBase64(body.sourceBody))).toEqual(msg.job);
    expect(t.stats()).toMatchObject({ retried: 2, failed: 1, delivered: 0, callbacksDelivered: 1 });
    expect(t.errors.map((e) => e.kind)).toEqual(["message"]);
  });

  it("retries network errors (closed port) and reports them with status 0", async () => {
    const server = await startServer({ "/v1/dead": ok });
    const closed = await startServer({});
    const deadUrl = `${closed.base}/v1/worker`;
    await cleanUpLast(); // close it now: nothing listens on that port any more
    const t = transport({ workerUrl: deadUrl, failureCallbackUrl: `${server.base}/v1/dead` });
    await t.publish([message({ retries: 2 })]);
    await t.idle();

    expect(t.stats()).toMatchObject({ retried: 2, failed: 1, callbacksDelivered: 1 });
    const body = JSON.parse(server.at("/v1/dead")[0]!.body) as FailureCallbackBody;
    expect(body).toMatchObject({ status: 0, header: {}, retried: 2, maxRetries: 2, url: deadUrl });
    expect(fromBase64(body.body)).toMatch(/ECONNREFUSED|fetch failed/);
    expect(t.errors[0]).toBeInstanceOf(LocalDeliveryError);
    expect(t.errors[0]).toMatchObject({ status: 0, retried: 2 });
  });

  it("recovers from a network error on retry", async () => {
    const server = await startServer({ "/v1/worker": ok });
    let calls = 0;
    const t = transport({
      workerUrl: `${server.base}/v1/worker`,
      deliver: (request) => {
        if (calls++ === 0) throw new TypeError("fetch failed");
        return fetch(request);
      },
    });
    await t.publish([message({ retries: 1 })]);
    await t.idle();
    expect(header(server.received[0]!, "upstash-retried")).toBe("1");
    expect(t.stats()).toMatchObject({ delivered: 1, retried: 1, failed: 0 });
  });

  it("aborts an attempt that outlives requestTimeoutMs and retries it", async () => {
    useFakeClock();
    const worker = inProcessWorker({
      "/v1/worker": (_r, i) => (i === 0 ? { status: 200, hang: true } : { status: 200 }),
    });
    const t = transport({
      workerUrl: `${worker.base}/v1/worker`,
      deliver: worker.deliver,
      requestTimeoutMs: 100,
      backoff: () => 10,
    });
    await t.publish([message({ retries: 1 })]);
    await vi.advanceTimersByTimeAsync(0);
    await worker.arrived(1); // and hangs
    await vi.advanceTimersByTimeAsync(99);
    expect(t.stats()).toMatchObject({ inFlight: 1, retried: 0 });
    await vi.advanceTimersByTimeAsync(1);
    await until(() => t.stats().retried === 1, "aborted at 100 ms, and retried");
    await expectStartAt(t, worker, 10);
    await t.idle();
    expect(worker.received).toHaveLength(2);
    expect(t.stats()).toMatchObject({ delivered: 1, retried: 1 });
  });

  it("retries the failure callback, then gives it up and reports it", async () => {
    const server = await startServer({
      "/v1/worker": () => ({ status: 500 }),
      "/v1/dead": () => ({ status: 503 }),
    });
    const t = transport({
      workerUrl: `${server.base}/v1/worker`,
      failureCallbackUrl: `${server.base}/v1/dead`,
      failureCallbackRetries: 1,
    });
    await t.publish([message({ retries: 0 })]);
    await t.idle();
    expect(server.at("/v1/dead").map((r) => header(r, "upstash-retried"))).toEqual(["0", "1"]);
    expect(t.stats()).toMatchObject({ failed: 1, callbacksDelivered: 0, callbacksFailed: 1 });
    expect(t.errors.map((e) => e.kind)).toEqual(["message", "failure-callback"]);
  });
});
