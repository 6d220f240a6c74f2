/**
 * The QStash double conforms to QStash's wire format as the real SDK sees it: the real `Client`
 * publishes and batches to it, and the real `Receiver` accepts its deliveries' signatures.
 */
import { Client, QstashError, Receiver } from "@upstash/qstash";
import { afterEach, describe, expect, it } from "vitest";
import {
  DEV_CURRENT_SIGNING_KEY,
  DEV_NEXT_SIGNING_KEY,
  DEV_TOKEN,
  type QStashDoubleOptions,
  startQStashDouble,
} from "../support/qstash-double/index.ts";
import { ok, type Route, startEndpoint } from "./endpoint.ts";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(routes: Record<string, Route>, options: QStashDoubleOptions = {}) {
  const endpoint = await startEndpoint(routes);
  cleanups.push(() => endpoint.close());
  const qstash = await startQStashDouble({ backoffScale: 0.002, ...options });
  cleanups.push(() => qstash.close());
  const client = new Client({
    baseUrl: qstash.url,
    token: qstash.token,
    retry: false,
    devMode: false,
  });
  return { endpoint, qstash, client };
}

const receiver = new Receiver({
  currentSigningKey: DEV_CURRENT_SIGNING_KEY,
  nextSigningKey: DEV_NEXT_SIGNING_KEY,
  devMode: false,
});

function verify(endpointHit: { headers: Headers; body: string }, url: string, r = receiver) {
  return r
    .verify({
      signature: endpointHit.headers.get("upstash-signature") ?? "",
      body: endpointHit.body,
      url,
    })
    .catch(() => false);
}

const fromBase64 = (value: string) => Buffer.from(value, "base64").toString("utf8");

describe("QStash double: publishing with the real Client", () => {
  it("publishJSON: answers {messageId, url} and delivers the body with QStash's headers", async () => {
    const { endpoint, qstash, client } = await setup({ "/hook": ok });
    const url = `${endpoint.base}/hook`;
    const body = { hello: "wörld", n: 1 };
    const res = await client.publishJSON({ url, body, headers: { "X-Custom": "yes" } });
    expect(res).toEqual({ messageId: expect.stringMatching(/^msg_\w{40}$/), url });
    await qstash.idle();
    expect(endpoint.hits).toHaveLength(1);
    const hit = endpoint.hits[0]!;
    expect(hit.method).toBe("POST");
    expect(hit.body).toBe(JSON.stringify(body));
    expect(hit.headers.get("content-type")).toBe("application/json");
    expect(hit.headers.get("user-agent")).toBe("Upstash-QStash");
    expect(hit.headers.get("upstash-message-id")).toBe(res.messageId);
    expect(hit.headers.get("upstash-retried")).toBe("0");
    expect(hit.headers.get("x-custom")).toBe("yes"); // Upstash-Forward-X-Custom, prefix stripped
    expect(hit.headers.has("upstash-forward-x-custom")).toBe(false);
    expect(qstash.counters).toMatchObject({
      requests: { "POST /v2/publish": 1 },
      messages: 1,
      deliveries: 1,
      delivered: 1,
    });
  });

  it("batchJSON: one request, one result per message, each delivered", async () => {
    const { endpoint, qstash, client } = await setup({ "/a": ok, "/b": ok });
    const res = await client.batchJSON([
      { url: `${endpoint.base}/a`, body: { n: 1 } },
      { url: `${endpoint.base}/b`, body: { n: 2 }, retries: 0 },
      { url: `${endpoint.base}/a`, body: { n: 3 }, delay: 0 },
    ]);
    expect(res).toEqual([
      { messageId: expect.any(String), url: `${endpoint.base}/a` },
      { messageId: expect.any(String), url: `${endpoint.base}/b` },
      { messageId: expect.any(String), url: `${endpoint.base}/a` },
    ]);
    await qstash.idle();
    expect(endpoint.hits.map((h) => JSON.parse(h.body).n).sort()).toEqual([1, 2, 3]);
    expect(qstash.counters.requests).toEqual({ "POST /v2/batch": 1 });
    expect(qstash.counters.batchSizes).toEqual([3]);
  });

  it("a batch entry QStash would refuse gets {error}; the others still go out", async () => {
    const { endpoint, qstash, client } = await setup({ "/a": ok });
    const res = await client.batch([
      { url: `${endpoint.base}/a`, body: "x" },
      { url: `${endpoint.base}/a`, body: "y", retryDelay: "pow(2, retried" },
    ]);
    expect(res[0]).toMatchObject({ messageId: expect.any(String) });
    expect(res[1]).toEqual({ error: expect.stringContaining("Upstash-Retry-Delay") });
    await qstash.idle();
    expect(endpoint.hits.map((h) => h.body)).toEqual(["x"]);
  });

  it("a raw batch entry's headers: names case-insensitive, values trimmed, a bad name or a CR/LF refused", async () => {
    const { endpoint, qstash } = await setup({ "/a": ok });
    const destination = `${endpoint.base}/a`;
    const raw = await fetch(`${qstash.url}/v2/batch`, {
      method: "POST",
      headers: { Authorization: `Bearer ${qstash.token}`, "Content-Type": "application/json" },
      body: JSON.stringify([
        {
          destination,
          headers: { "Upstash-Forward-X-Tag": "  one ", "UPSTASH-RETRIES": "0" },
          body: "ok",
        },
        { destination, headers: { "bad name": "x" }, body: "no" },
        { destination, headers: { "Upstash-Forward-X-Tag": "a\r\nb" }, body: "no" },
      ]),
    });
    const res = (await raw.json()) as Record<string, unknown>[];
    expect(res[0]).toMatchObject({ messageId: expect.any(String) });
    expect(res[1]).toEqual({ error: expect.stringContaining("header name") });
    expect(res[2]).toEqual({ error: expect.stringContaining("X-Tag") });
    await qstash.idle();
    expect(endpoint.hits.map((h) => h.body)).toEqual(["ok"]);
    expect(endpoint.hits[0]!.headers.get("x-tag")).toBe("one");
    expect(qstash.messages()[0]).toMatchObject({ maxRetries: 0 });
  });

  it("deduplicates by Upstash-Deduplication-Id: 202 with the first messageId, delivered once", async () => {
    const { endpoint, qstash, client } = await setup({ "/hook": ok });
    const url = `${endpoint.base}/hook`;
    const first = await client.publishJSON({ url, body: { n: 1 }, deduplicationId: "d-1" });
    const second = await client.publishJSON({ url, body: { n: 2 }, deduplicationId: "d-1" });
    expect(second).toEqual({ messageId: first.messageId, url, deduplicated: true });
    const [inBatch] = await client.batchJSON([{ url, body: { n: 3 }, deduplicationId: "d-1" }]);
    expect(inBatch).toMatchObject({ messageId: first.messageId, deduplicated: true });
    const raw = await fetch(`${qstash.url}/v2/publish/${url}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${qstash.token}`, "Upstash-Deduplication-Id": "d-1" },
      body: "{}",
    });
    expect(raw.status).toBe(202);
    await qstash.idle();
    expect(endpoint.hits.map((h) => JSON.parse(h.body).n)).toEqual([1]);
    expect(qstash.counters).toMatchObject({ messages: 1, deduplicated: 3 });
  });

  it("forgets a dedup id after the window", async () => {
    const { endpoint, qstash, client } = await setup({ "/hook": ok }, { dedupWindowMs: 100 });
    const url = `${endpoint.base}/hook`;
    const a = await client.publishJSON({ url, body: { n: 1 }, deduplicationId: "w" });
    // The window's end is the signal: a timer due after it (a busy machine only makes it later).
    await new Promise((resolve) => setTimeout(resolve, 150));
    const b = await client.publishJSON({ url, body: { n: 1 }, deduplicationId: "w" });
    expect(b.deduplicated).toBeUndefined();
    expect(b.messageId).not.toBe(a.messageId);
    await qstash.idle();
    expect(endpoint.hits).toHaveLength(2);
  });

  it("dedups by content when asked", async () => {
    // The default window (10 minutes): the three publishes fall in it however slow the machine.
    const { endpoint, qstash, client } = await setup({ "/hook": ok });
    const url = `${endpoint.base}/hook`;
    const c1 = await client.publishJSON({ url, body: { c: 1 }, contentBasedDeduplication: true });
    const c2 = await client.publishJSON({ url, body: { c: 1 }, contentBasedDeduplication: true });
    const c3 = await client.publishJSON({ url, body: { c: 2 }, contentBasedDeduplication: true });
    expect(c2).toMatchObject({ messageId: c1.messageId, deduplicated: true });
    expect(c3.deduplicated).toBeUndefined();
    await qstash.idle();
    expect(endpoint.hits).toHaveLength(2);
  });

  it("holds a message until Upstash-Delay / Upstash-Not-Before (unix seconds)", async () => {
    const { endpoint, qstash, client } = await setup({ "/d": ok, "/nb": ok });
    const publishedAt = Date.now();
    const notBefore = Math.ceil(publishedAt / 1000) + 1;
    await Promise.all([
      client.publishJSON({ url: `${endpoint.base}/d`, body: {}, delay: 1 }),
      client.publishJSON({ url: `${endpoint.base}/nb`, body: {}, notBefore }),
    ]);
    const [early] = qstash.messages().filter((m) => m.url.endsWith("/nb"));
    expect(early?.notBefore).toBe(notBefore * 1000);
    await qstash.idle();
    expect(endpoint.at("/d")[0]!.at - publishedAt).toBeGreaterThanOrEqual(1000);
    expect(endpoint.at("/nb")[0]!.at).toBeGreaterThanOrEqual(notBefore * 1000);
  });

  it("refuses a bad token with 401 (the Client throws QstashError)", async () => {
    const { endpoint, qstash } = await setup({ "/hook": ok });
    const wrong = new Client({ baseUrl: qstash.url, token: "nope", retry: false, devMode: false });
    const error = await wrong
      .publishJSON({ url: `${endpoint.base}/hook`, body: {} })
      .catch((e) => e);
    expect(error).toBeInstanceOf(QstashError);
    expect(error.status).toBe(401);
    expect(qstash.token).toBe(DEV_TOKEN);
  });
});

describe("QStash double: signatures the real Receiver accepts", () => {
  it("verifies under the current key; a tampered body or another URL fails", async () => {
    const { endpoint, qstash, client } = await setup({ "/hook": ok });
    const url = `${endpoint.base}/hook`;
    await client.publishJSON({ url, body: { a: 1 } });
    await qstash.idle();
    const hit = endpoint.hits[0]!;
    expect(await verify(hit, url)).toBe(true);
    const currentOnly = new Receiver({
      currentSigningKey: DEV_CURRENT_SIGNING_KEY,
      nextSigningKey: "sig_unrelated",
      devMode: false,
    });
    expect(await verify(hit, url, currentOnly)).toBe(true);
    expect(await verify({ ...hit, body: `${hit.body} ` }, url)).toBe(false);
    expect(await verify(hit, `${endpoint.base}/other`)).toBe(false);
    const [, payload] = (hit.headers.get("upstash-signature") ?? "").split(".");
    expect(JSON.parse(Buffer.from(payload!, "base64url").toString())).toEqual({
      iss: "Upstash",
      sub: url,
      exp: expect.any(Number),
      nbf: expect.any(Number),
      iat: expect.any(Number),
      jti: expect.stringMatching(/^jwt_/),
      body: expect.stringMatching(/=$/),
    });
  });

  it("verifies under the next key (rotation) only when the Receiver knows it", async () => {
    const { endpoint, qstash, client } = await setup({ "/hook": ok }, { signWith: "next" });
    const url = `${endpoint.base}/hook`;
    await client.publishJSON({ url, body: { a: 1 } });
    await qstash.idle();
    const hit = endpoint.hits[0]!;
    expect(await verify(hit, url)).toBe(true);
    const stale = new Receiver({
      currentSigningKey: DEV_CURRENT_SIGNING_KEY,
      nextSigningKey: "sig_unrelated",
      devMode: false,
    });
    expect(await verify(hit, url, stale)).toBe(false);
  });
});

describe("QStash double: retries, non-retryable and the failure callback", () => {
  it("retries non-2xx with the scaled default backoff, same message id, Upstash-Retried up", async () => {
    const { endpoint, qstash, client } = await setup({
      "/hook": (_h, i) => (i < 2 ? { status: 500 } : { status: 200 }),
    });
    await client.publishJSON({ url: `${endpoint.base}/hook`, body: {}, retries: 3 });
    await qstash.idle();
    const hits = endpoint.hits;
    expect(hits.map((h) => h.headers.get("upstash-retried"))).toEqual(["0", "1", "2"]);
    expect(new Set(hits.map((h) => h.headers.get("upstash-message-id"))).size).toBe(1);
    // e^2.5 s and e^5 s, times 0.002: ≈ 24 ms and ≈ 297 ms.
    expect(hits[1]!.at - hits[0]!.at).toBeGreaterThanOrEqual(20);
    expect(hits[2]!.at - hits[1]!.at).toBeGreaterThanOrEqual(280);
    expect(qstash.counters).toMatchObject({ deliveries: 3, retries: 2, delivered: 1, failed: 0 });
  });

  it("uses Upstash-Retry-Delay (ms over `retried`) and a destination's Retry-After", async () => {
    const { endpoint, qstash, client } = await setup(
      {
        "/expr": (_h, i) => (i < 2 ? { status: 503 } : { status: 200 }),
        "/after": (_h, i) =>
          i === 0 ? { status: 429, headers: { "Retry-After": "150ms" } } : { status: 200 },
      },
      { backoffScale: 1 },
    );
    await client.publishJSON({
      url: `${endpoint.base}/expr`,
      body: {},
      retryDelay: "max(40, 40 * pow(2, retried))",
    });
    await client.publishJSON({ url: `${endpoint.base}/after`, body: {} });
    await qstash.idle();
    const [e0, e1, e2] = endpoint.at("/expr");
    expect(e1!.at - e0!.at).toBeGreaterThanOrEqual(38);
    expect(e2!.at - e1!.at).toBeGreaterThanOrEqual(78);
    const [a0, a1] = endpoint.at("/after");
    expect(a1!.at - a0!.at).toBeGreaterThanOrEqual(145);
  });

  it("defaultBackoffScale shortens the default backoff only, not Retry-Delay or Retry-After", async () => {
    const { endpoint, qstash, client } = await setup(
      {
        "/default": (_h, i) => (i < 1 ? { status: 500 } : { status: 200 }),
        "/expr": (_h, i) => (i < 1 ? { status: 500 } : { status: 200 }),
        "/after": (_h, i) =>
          i === 0 ? { status: 429, headers: { "Retry-After": "150ms" } } : { status: 200 },
      },
      { backoffScale: 1, defaultBackoffScale: 0.002 },
    );
    await client.publishJSON({ url: `${endpoint.base}/default`, body: {} });
    await client.publishJSON({ url: `${endpoint.base}/expr`, body: {}, retryDelay: "120" });
    await client.publishJSON({ url: `${endpoint.base}/after`, body: {} });
    // Unscaled, the default backoff's first wait is e^2.5 s ≈ 12 s: idle() would time out.
    await qstash.idle(5_000);
    const [d0, d1] = endpoint.at("/default");
    expect(d1!.at - d0!.at).toBeGreaterThanOrEqual(20);
    const [e0, e1] = endpoint.at("/expr");
    expect(e1!.at - e0!.at).toBeGreaterThanOrEqual(118);
    const [a0, a1] = endpoint.at("/after");
    expect(a1!.at - a0!.at).toBeGreaterThanOrEqual(145);
  });

  it("stops at 489 + Upstash-NonRetryable-Error and POSTs the documented failure callback", async () => {
    const { endpoint, qstash, client } = await setup({
      "/hook": () => ({
        status: 489,
        headers: { "Upstash-NonRetryable-Error": "true", "Content-Type": "text/plain" },
        body: "bad input",
      }),
      "/dead": ok,
    });
    const url = `${endpoint.base}/hook`;
    const callbackUrl = `${endpoint.base}/dead`;
    const body = { job: "x" };
    const { messageId } = await client.publishJSON({
      url,
      body,
      retries: 3,
      failureCallback: callbackUrl,
      headers: { "X-Trace": "t1" },
    });
    await qstash.idle();
    expect(endpoint.at("/hook")).toHaveLength(1);
    const [callback] = endpoint.at("/dead");
    expect(callback!.method).toBe("POST");
    expect(callback!.headers.get("content-type")).toBe("application/json");
    expect(callback!.headers.get("upstash-message-id")).not.toBe(messageId);
    expect(await verify(callback!, callbackUrl)).toBe(true);
    expect(await verify(callback!, url)).toBe(false);
    const payload = JSON.parse(callback!.body);
    expect(payload).toEqual({
      status: 489,
      header: expect.objectContaining({
        "Upstash-Nonretryable-Error": ["true"],
        "Content-Type": ["text/plain"],
      }),
      body: Buffer.from("bad input").toString("base64"),
      retried: 0,
      maxRetries: 3,
      dlqId: expect.stringMatching(/^\d+-\d+$/),
      sourceMessageId: messageId,
      url,
      method: "POST",
      sourceHeader: { "Content-Type": ["application/json"], "X-Trace": ["t1"] },
      sourceBody: Buffer.from(JSON.stringify(body)).toString("base64"),
      notBefore: expect.stringMatching(/^\d+$/),
      createdAt: expect.stringMatching(/^\d+$/),
      callerIP: expect.any(String),
    });
    expect(qstash.dlq).toEqual([
      expect.objectContaining({ messageId, responseStatus: 489, retried: 0 }),
    ]);
  });

  it("retries a 489 without the header; reports exhausted retries with the last answer", async () => {
    const { endpoint, qstash, client } = await setup({
      "/plain489": (_h, i) => (i === 0 ? { status: 489 } : { status: 200 }),
      "/boom": () => ({ status: 500, body: "boom" }),
      "/dead": ok,
    });
    await client.publishJSON({ url: `${endpoint.base}/plain489`, body: {}, retries: 1 });
    await client.publishJSON({
      url: `${endpoint.base}/boom`,
      body: { b: 1 },
      retries: 2,
      failureCallback: `${endpoint.base}/dead`,
    });
    await qstash.idle();
    expect(endpoint.at("/plain489")).toHaveLength(2);
    expect(endpoint.at("/boom")).toHaveLength(3);
    const payload = JSON.parse(endpoint.at("/dead")[0]!.body);
    expect(payload).toMatchObject({ status: 500, retried: 2, maxRetries: 2 });
    expect(fromBase64(payload.body)).toBe("boom");
    expect(JSON.parse(fromBase64(payload.sourceBody))).toEqual({ b: 1 });
    expect(qstash.counters).toMatchObject({ failed: 1, callbacksDelivered: 1, delivered: 1 });
  });

  it("times out an attempt after Upstash-Timeout and reports it with status 0", async () => {
    const { endpoint, qstash, client } = await setup({
      "/slow": () => ({ status: 200, hang: true }),
      "/dead": ok,
    });
    await client.publishJSON({
      url: `${endpoint.base}/slow`,
      body: {},
      retries: 0,
      timeout: 1,
      failureCallback: `${endpoint.base}/dead`,
    });
    await qstash.idle();
    const payload = JSON.parse(endpoint.at("/dead")[0]!.body);
    expect(payload).toMatchObject({ status: 0, retried: 0, maxRetries: 0 });
  });
});

describe("QStash double: flow control and fault knobs", () => {
  it("honours flow-control parallelism", async () => {
    const { endpoint, qstash, client } = await setup({
      "/slow": () => ({ status: 200, delayMs: 40 }),
    });
    const flowControl = { key: "k", parallelism: 1 };
    await client.batchJSON(
      [1, 2, 3, 4].map((n) => ({ url: `${endpoint.base}/slow`, body: { n }, flowControl })),
    );
    await qstash.idle();
    expect(endpoint.hits).toHaveLength(4);
    expect(endpoint.maxActive()).toBe(1);
  });

  it("fails N publish requests with 5xx, then accepts", async () => {
    const { endpoint, qstash, client } = await setup(
      { "/hook": ok },
      { faults: { failPublishRequests: 2, failStatus: 503 } },
    );
    const url = `${endpoint.base}/hook`;
    for (let i = 0; i < 2; i++) {
      const error = await client.publishJSON({ url, body: {} }).catch((e) => e);
      expect(error).toMatchObject({ status: 503 });
    }
    await expect(client.publishJSON({ url, body: {} })).resolves.toMatchObject({ url });
    await qstash.idle();
    expect(endpoint.hits).toHaveLength(1);
    expect(qstash.counters.publishRequests).toBe(3);
  });

  it("delays publish answers, duplicates deliveries and reorders them", async () => {
    const { endpoint, qstash, client } = await setup({ "/hook": ok });
    const url = `${endpoint.base}/hook`;
    qstash.faults.publishDelayMs = 120;
    const started = Date.now();
    await client.publishJSON({ url, body: { n: 0 } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(115);
    qstash.faults.publishDelayMs = 0;
    await qstash.idle();

    qstash.faults.duplicateDeliveries = true;
    const { messageId } = await client.publishJSON({ url, body: { n: 1 } });
    await qstash.idle();
    const twins = endpoint.hits.filter((h) => h.headers.get("upstash-message-id") === messageId);
    expect(twins).toHaveLength(2);
    expect(twins.map((h) => h.headers.get("upstash-retried"))).toEqual(["0", "0"]);
    qstash.faults.duplicateDeliveries = false;

    qstash.faults.reorderMs = 200;
    const bodies = Array.from({ length: 12 }, (_, n) => ({ url, body: { r: n } }));
    await client.batchJSON(bodies);
    await qstash.idle();
    const order = endpoint.hits.map((h) => JSON.parse(h.body).r).filter((r) => r !== undefined);
    expect(order).toHaveLength(12);
    expect(order).not.toEqual([...order].sort((a, b) => a - b));
  });
});

describe("QStash double: holding deliveries (the benchmarks)", () => {
  it("accepts and keeps the messages, delivers none", async () => {
    const { endpoint, qstash, client } = await setup(
      { "/hook": ok },
      {
        faults: { holdDeliveries: true },
      },
    );
    const url = `${endpoint.base}/hook`;
    await client.publishJSON({ url, body: { n: 1 } });
    await client.batchJSON([
      { url, body: { n: 2 } },
      { url, body: { n: 3 } },
    ]);
    await qstash.idle();
    expect(qstash.counters).toMatchObject({ messages: 3, deliveries: 0, delivered: 0 });
    expect(endpoint.hits).toHaveLength(0);
  });
});
