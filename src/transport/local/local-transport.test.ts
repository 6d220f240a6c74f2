import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { Receiver } from "@upstash/qstash";
import { afterEach, describe, expect, it } from "vitest";
import type { JobSpec, OutboxMessage } from "../../core/model.ts";
import type { FailureCallbackBody } from "../port.ts";
import {
  LocalDeliveryError,
  LocalTransport,
  LocalTransportClosedError,
  type LocalTransportOptions,
} from "./index.ts";

const signingKey = "sig_local_current_key";
const nextSigningKey = "sig_local_next_key";
const receiver = new Receiver({ currentSigningKey: signingKey, nextSigningKey });

interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Never answer (the client must abort). */
  hang?: boolean;
  delayMs?: number;
}

type Route = (request: Received, index: number) => Reply;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A real HTTP server on 127.0.0.1:0 that records requests and answers per path. */
async function startServer(routes: Record<string, Route>) {
  const received: Received[] = [];
  let active = 0;
  let maxActive = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const path = req.url ?? "/";
      const record: Received = {
        method: req.method ?? "",
        path,
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
      };
      const index = received.filter((r) => r.path === path).length;
      received.push(record);
      const route = routes[path];
      const reply = route ? route(record, index) : { status: 404 };
      if (reply.hang) return;
      active++;
      maxActive = Math.max(maxActive, active);
      setTimeout(() => {
        active--;
        res.writeHead(reply.status, reply.headers);
        res.end(reply.body ?? "");
      }, reply.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return {
    base,
    received,
    at: (path: string) => received.filter((r) => r.path === path),
    maxActive: () => maxActive,
  };
}

function transport(options: Partial<LocalTransportOptions> & { workerUrl: string }) {
  const errors: LocalDeliveryError[] = [];
  const t = new LocalTransport({
    signingKey,
    nextSigningKey,
    backoff: () => 10,
    onError: (error) => errors.push(error),
    ...options,
  });
  cleanups.push(() => t.close());
  return Object.assign(t, { errors });
}

let seq = 0;
function message(opts: { retries?: number; notBefore?: number; dedupId?: string } = {}) {
  const id = `job-${++seq}`;
  const job: JobSpec = {
    id,
    tenant: "default",
    handler: "email.send",
    input: { to: "a@example.com", note: "héllo 🚀" },
    priority: 5,
    timeoutMs: 30_000,
    retries: opts.retries ?? 3,
    tags: ["t"],
    runAt: 0,
    createdAt: 0,
  };
  const msg: OutboxMessage = {
    id,
    dedupId: opts.dedupId ?? id,
    job,
    notBefore: opts.notBefore ?? 0,
    recoverAt: 0,
  };
  return msg;
}

function fromBase64(value: string): string {
  return Buffer.from(value, "base64").toString("utf8");
}

function header(record: Received, name: string): string {
  return String(record.headers[name.toLowerCase()]);
}

const ok: Route = () => ({ status: 200, body: "ok" });

describe("LocalTransport delivery", () => {
  it("POSTs the job with QStash's headers and a signature the Receiver accepts", async () => {
    const server = await startServer({ "/v1/worker": ok });
    const url = `${server.base}/v1/worker`;
    const t = transport({ workerUrl: url });
    const msg = message();

    const [outcome] = await t.publish([msg]);
    expect(outcome).toEqual({
      id: msg.id,
      ok: true,
      messageId: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
      deduplicated: false,
    });
    await t.idle();

    expect(server.received).toHaveLength(1);
    const got = server.received[0]!;
    expect(got.method).toBe("POST");
    expect(got.body).toBe(JSON.stringify(msg.job));
    expect(header(got, "content-type")).toBe("application/json");
    expect(header(got, "upstash-message-id")).toBe(outcome!.ok && outcome!.messageId);
    expect(header(got, "upstash-retried")).toBe("0");
    const signature = header(got, "upstash-signature");
    await expect(receiver.verify({ signature, body: got.body, url })).resolves.toBe(true);

    const headers = new Headers({ "upstash-signature": signature });
    expect(await t.verify({ url, headers, body: got.body })).toBe(true);
    expect(await t.verify({ url, headers, body: `${got.body} ` })).toBe(false);
    expect(await t.verify({ url: `${server.base}/other`, headers, body: got.body })).toBe(false);
    expect(await t.verify({ url, headers: new Headers(), body: got.body })).toBe(false);

    expect(t.stats()).toEqual({
      published: 1,
      deduplicated: 0,
      delivered: 1,
      retried: 0,
      failed: 0,
      callbacksDelivered: 0,
      callbacksFailed: 0,
      pending: 0,
      inFlight: 0,
      dedupIds: 1,
      dedupEvictedEarly: 0,
    });
  });

  it("delivers in-process through `deliver`, where verify() accepts request.url", async () => {
    const verified: boolean[] = [];
    const t: LocalTransport = transport({
      workerUrl: "http://Worker.local:80/v1/worker",
      deliver: async (request) => {
        const body = await request.text();
        verified.push(await t.verify({ url: request.url, headers: request.headers, body }));
        return new Response(null, { status: 204 });
      },
    });
    await t.publish([message()]);
    await t.idle();
    expect(verified).toEqual([true]);
    expect(t.stats().delivered).toBe(1);
  });

  it("accepts signatures under the next key (rotation)", async () => {
    const server = await startServer({ "/v1/worker": ok });
    const url = `${server.base}/v1/worker`;
    const signer = transport({ workerUrl: url, signingKey: nextSigningKey });
    await signer.publish([message()]);
    await signer.idle();
    const got = server.received[0]!;
    const verifier = transport({ workerUrl: url });
    const headers = new Headers({ "upstash-signature": header(got, "upstash-signature") });
    expect(await verifier.verify({ url, headers, body: got.body })).toBe(true);
    const noRotation = transport({ workerUrl: url, nextSigningKey: undefined });
    expect(await noRotation.verify({ url, headers, body: got.body })).toBe(false);
  });

  it("does not deliver before notBefore", async () => {
    const server = await startServer({ "/v1/worker": ok });
    const t = transport({ workerUrl: `${server.base}/v1/worker` });
    const publishedAt = Date.now();
    const later = message({ notBefore: publishedAt + 150 });
    const now = message({ notBefore: publishedAt - 1000 });
    await t.publish([later, now]);
    await t.idle();

    expect(server.received.map((r) => JSON.parse(r.body).id)).toEqual([now.id, later.id]);
    expect(server.received[1]!.at).toBeGreaterThanOrEqual(later.notBefore);
  });

  it("holds a far-future message instead of firing it (timer overflow)", async () => {
    const server = await startServer({ "/v1/worker": ok });
    const t = transport({ workerUrl: `${server.base}/v1/worker` });
    await t.publish([message({ notBefore: Date.now() + 30 * 86_400_000 })]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(server.received).toHaveLength(0);
    expect(t.stats()).toMatchObject({ pending: 1, inFlight: 0 });
  });

  it("deduplicates by dedupId within the window", async () => {
    const server = await startServer({ "/v1/worker": ok });
    const t = transport({ workerUrl: `${server.base}/v1/worker`, dedupWindowMs: 200 });
    const first = message({ dedupId: "sched-1@1000" });
    const [a, b] = await t.publish([first, message({ dedupId: "sched-1@1000" })]);
    const [c] = await t.publish([message({ dedupId: "sched-1@1000" })]);
    const [other] = await t.publish([message({ dedupId: "sched-1@2000" })]);
    await t.idle();

    expect(a).toMatchObject({ ok: true, deduplicated: false });
    const firstId = a!.ok ? a!.messageId : "";
    expect(b).toMatchObject({ ok: true, deduplicated: true, messageId: firstId });
    expect(c).toMatchObject({ ok: true, deduplicated: true, messageId: firstId });
    expect(other).toMatchObject({ ok: true, deduplicated: false });
    expect(server.received.map((r) => JSON.parse(r.body).id)).toEqual([first.id, other!.id]);
    expect(t.stats()).toMatchObject({ published: 2, deduplicated: 2, delivered: 2 });

    await new Promise((resolve) => setTimeout(resolve, 250));
    const [afterWindow] = await t.publish([message({ dedupId: "sched-1@1000" })]);
    expect(afterWindow).toMatchObject({ ok: true, deduplicated: false });
    expect(afterWindow!.ok && afterWindow!.messageId).not.toBe(firstId);
    await t.idle();
    expect(server.received).toHaveLength(3);
  });

  it("past dedupMaxEntries forgets the oldest dedup id early (a duplicate of it gets through)", async () => {
    const server = await startServer({ "/v1/worker": ok });
    const t = transport({ workerUrl: `${server.base}/v1/worker`, dedupMaxEntries: 2 });
    await t.publish([message({ dedupId: "d1" }), message({ dedupId: "d2" })]);
    expect(t.stats()).toMatchObject({ dedupIds: 2, dedupEvictedEarly: 0 });
    await t.publish([message({ dedupId: "d3" })]);
    const [d1, d3] = await t.publish([message({ dedupId: "d1" }), message({ dedupId: "d3" })]);
    await t.idle();
    expect(d1).toMatchObject({ ok: true, deduplicated: false });
    expect(d3).toMatchObject({ ok: true, deduplicated: true });
    expect(server.received).toHaveLength(4);
    expect(t.stats()).toMatchObject({ dedupIds: 2, dedupEvictedEarly: 2, deduplicated: 1 });
  });

  it("gives every message its own id and forgets dedup ids after the window", async () => {
    let now = 1_000_000;
    const t = transport({
      workerUrl: "http://worker.local/v1/worker",
      deliver: () => new Response(null, { status: 204 }),
      dedupWindowMs: 1_000,
      now: () => now,
    });
    const outcomes = await t.publish(Array.from({ length: 50 }, () => message()));
    const ids = outcomes.map((o) => (o.ok ? o.messageId : ""));
    expect(new Set(ids).size).toBe(50);
    for (const id of ids) expect(id).toMatch(/^msg_[0-9a-f]{32}$/);
    await t.idle();
    expect(t.stats()).toMatchObject({ delivered: 50, dedupIds: 50 });
    now += 1_000;
    await t.publish([message()]);
    expect(t.stats()).toMatchObject({ dedupIds: 1 });
    await t.close();
    expect(t.stats()).toMatchObject({ dedupIds: 0 });
  });

  it("answers each bad message with ok: false and still accepts the rest", async () => {
    const server = await startServer({ "/v1/worker": ok });
    const t = transport({ workerUrl: `${server.base}/v1/worker` });
    const bad = message({ retries: -1 });
    const good = message();
    const [badOutcome, goodOutcome] = await t.publish([bad, good]);
    expect(badOutcome).toMatchObject({ id: bad.id, ok: false, error: expect.any(RangeError) });
    expect(goodOutcome).toMatchObject({ id: good.id, ok: true });
    await t.idle();
    expect(server.received).toHaveLength(1);
  });
});

describe("LocalTransport retries", () => {
  it("retries a 500 with backoff, same message id, Upstash-Retried counting up", async () => {
    const server = await startServer({
      "/v1/worker": (_r, i) => (i < 2 ? { status: 500, body: "not yet" } : { status: 200 }),
      "/v1/dead": ok,
    });
    const url = `${server.base}/v1/worker`;
    const t = transport({
      workerUrl: url,
      failureCallbackUrl: `${server.base}/v1/dead`,
      backoff: (retried) => 40 * 2 ** retried,
    });
    await t.publish([message({ retries: 3 })]);
    await t.idle();

    const attempts = server.at("/v1/worker");
    expect(attempts.map((r) => header(r, "upstash-retried"))).toEqual(["0", "1", "2"]);
    expect(new Set(attempts.map((r) => header(r, "upstash-message-id"))).size).toBe(1);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(40);
    expect(attempts[2]!.at - attempts[1]!.at).toBeGreaterThanOrEqual(80);
    for (const r of attempts) {
      const signature = header(r, "upstash-signature");
      await expect(receiver.verify({ signature, body: r.body, url })).resolves.toBe(true);
    }
    expect(server.at("/v1/dead")).toHaveLength(0);
    expect(t.stats()).toMatchObject({ delivered: 1, retried: 2, failed: 0 });
    expect(t.errors).toEqual([]);
  });

  it("waits as long as a Retry-After answer asks", async () => {
    const server = await startServer({
      "/v1/worker": (_r, i) =>
        i === 0 ? { status: 409, headers: { "Retry-After": "1" } } : { status: 200 },
    });
    const t = transport({ workerUrl: `${server.base}/v1/worker`, backoff: () => 5 });
    await t.publish([message()]);
    await t.idle();
    const [first, second] = server.received;
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1000);
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
    await cleanups.pop()!(); // close it now: nothing listens on that port any more
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
    const server = await startServer({
      "/v1/worker": (_r, i) => (i === 0 ? { status: 200, hang: true } : { status: 200 }),
    });
    const t = transport({ workerUrl: `${server.base}/v1/worker`, requestTimeoutMs: 100 });
    await t.publish([message({ retries: 1 })]);
    await t.idle();
    expect(server.received).toHaveLength(2);
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
    const server = await startServer({ "/v1/worker": () => ({ status: 200, delayMs: 60 }) });
    const t = transport({ workerUrl: `${server.base}/v1/worker`, parallelism: 2 });
    await t.publish([message(), message(), message(), message()]);
    await t.idle();
    expect(server.received).toHaveLength(4);
    expect(server.maxActive()).toBe(2);
  });

  it("runs deliveries concurrently by default", async () => {
    const server = await startServer({ "/v1/worker": () => ({ status: 200, delayMs: 60 }) });
    const t = transport({ workerUrl: `${server.base}/v1/worker` });
    await t.publish([message(), message(), message(), message()]);
    await t.idle();
    expect(server.maxActive()).toBe(4);
  });

  it("close() drops pending and in-flight deliveries and refuses later publishes", async () => {
    const server = await startServer({
      "/v1/worker": () => ({ status: 500, hang: true }),
      "/v1/dead": ok,
    });
    const t = transport({
      workerUrl: `${server.base}/v1/worker`,
      failureCallbackUrl: `${server.base}/v1/dead`,
    });
    await t.publish([message({ notBefore: Date.now() + 10_000 }), message()]);
    while (server.received.length === 0) await new Promise((r) => setTimeout(r, 5));
    expect(t.stats()).toMatchObject({ pending: 1, inFlight: 1 });

    const idle = t.idle();
    await t.close();
    await idle;
    await t.idle();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(server.received).toHaveLength(1);
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
    for (const dedupMaxEntries of [0, 1.5, 2 ** 28 + 1]) {
      expect(
        () => new LocalTransport({ workerUrl: "http://x/w", signingKey, dedupMaxEntries }),
      ).toThrow(RangeError);
    }
  });
});
