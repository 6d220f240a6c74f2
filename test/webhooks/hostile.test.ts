/**
 * Inbound webhooks under hostile input, over a real socket on the memory store and on Redis:
 * endpoint names that are inherited object keys, dot segments or very long; a 10 MB body (sent
 * with and without a length); a body that is not UTF-8; a timestamp of 1e300; a wrong method —
 * each answered 4xx problem+json with nothing stored; what is refused is counted in
 * `tickwork_webhook_requests_total` with unknown names under one label; and `GET /v1/hooks`
 * lists a tenant's endpoints (never their secrets) with their last deliveries, as the typed client
 * (`tw.hooks.list()`) reads them.
 */
import { createHmac } from "node:crypto";
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../src/client/index.ts";
import { hashKey } from "../../src/config/keys.ts";
import { webhookLogId } from "../../src/store/port.ts";
import { call, expectProblem, type Harness, startHarness, until } from "../http/harness.ts";
import { parsePrometheus } from "../observability/prometheus-parser.ts";
import { makeRedisStore, type StoreHandle, storeFactories } from "../support/stores.ts";
import { footprint, recordingHandlers } from "./harness.ts";
import { hmacSender, stripeSender } from "./senders.ts";

/**
 * POST to `url` with `headers`, send `first`, and never end the body: resolves with the answer
 * the server gives while the body is still open (then drops the connection); rejects after 5 s
 * without one, i.e. when the server waits for the rest of the body.
 */
function answerWhileOpen(
  url: string,
  headers: Record<string, string>,
  first: Uint8Array,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", headers });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error("no answer while the body was still open: the server waited for it"));
    }, 5_000);
    req.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => {
        clearTimeout(timer);
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body: text });
      });
    });
    req.write(first);
  });
}

const KEY_ACME = "key-acme-0123456789abcdef0123456789";
const KEY_GLOBEX = "key-globex-0123456789abcdef012345678";

const factories = [
  storeFactories.find((f) => f.name === "memory")!,
  {
    name: "redis",
    make: async (): Promise<StoreHandle & { keys?: () => Promise<number> }> => {
      const handle = await makeRedisStore();
      // Every key but the webhook counters (a refusal is counted, and only counted).
      const keys = async () =>
        (await handle.redis.keys(`{${handle.prefix}}:*`)).filter((k) => !k.endsWith("}:hooks"))
          .length;
      return { ...handle, keys };
    },
  },
];

describe.each(factories)("hostile webhook requests on $name", (factory) => {
  const stripe = stripeSender();
  const hmac = hmacSender();
  let handle: StoreHandle & { keys?: () => Promise<number> };
  let h: Harness;

  beforeAll(async () => {
    handle = await factory.make();
    const rec = recordingHandlers();
    h = await startHarness({
      store: handle.store,
      handlers: rec.handlers,
      app: {
        dev: false,
        tickSecret: false,
        bodyLimitBytes: 65_536,
        cors: { origins: ["https://app.example"] },
        tenants: [
          {
            id: "acme",
            keys: [{ hash: await hashKey(KEY_ACME), scopes: ["read", "jobs:write"] }],
            webhooks: {
              stripe: { verifier: stripe.verifier, handler: "hook.receive" },
              "generic.v1": { verifier: hmac.verifier, handler: "hook.receive", status: 200 },
            },
          },
          {
            id: "globex",
            keys: [{ hash: await hashKey(KEY_GLOBEX), scopes: ["read"] }],
            manifest: { quotas: { submit: { perMinute: 1 } } },
            webhooks: {
              "globex.every": {
                verifier: stripe.verifier,
                handler: "hook.receive",
                idempotencyKey: "none",
                status: 204,
              },
            },
          },
        ],
      },
    });
  });

  afterAll(async () => {
    await h?.close();
    await handle?.cleanup();
  });

  const stored = () => footprint(h.engine.store, handle.keys);

  /** A JSON delivery to `generic.v1` of `body` as sent, signed with its secret at `ts`. */
  const signedHook = (body: Uint8Array<ArrayBuffer> | string, eventId: string, ts: number) => {
    const secret = (hmac.verifier as { secrets: string[] }).secrets[0]!;
    const mac = createHmac("sha256", secret)
      .update(Buffer.concat([Buffer.from(`${ts}.`), Buffer.from(body)]))
      .digest("hex");
    const headers = {
      "content-type": "application/json",
      "x-timestamp": String(ts),
      "x-event-id": eventId,
      "x-signature": `sha256=${mac}`,
    };
    return { mac, answer: call(h.origin, "POST", "/v1/hooks/generic.v1", { body, headers }) };
  };

  it("unknown, inherited, dot-segment and very long names → 404, nothing stored", async () => {
    const body = stripe.body("evt_x");
    const headers = await stripe.sign(body, "evt_x");
    const before = await stored();
    for (const name of [
      "__proto__",
      "constructor",
      "toString",
      "hasOwnProperty",
      "%2e%2e",
      "%2E",
      "nope",
      "stripe%00",
      "x".repeat(5_000),
    ]) {
      const answer = await call(h.origin, "POST", `/v1/hooks/${name}`, { body, headers });
      expectProblem(answer, 404);
    }
    expect(await stored()).toEqual(before);
  });

  it("CORS does not apply to deliveries (it does to the listing)", async () => {
    const origin = { origin: "https://app.example" };
    const body = stripe.body("evt_cors");
    const delivered = await call(h.origin, "POST", "/v1/hooks/stripe", {
      body,
      headers: { ...(await stripe.sign(body, "evt_cors")), ...origin },
    });
    expect(delivered.status).toBe(202);
    expect(delivered.headers.get("access-control-allow-origin")).toBeNull();
    const preflight = await call(h.origin, "OPTIONS", "/v1/hooks/stripe", {
      headers: { ...origin, "access-control-request-method": "POST" },
    });
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    const listed = await call(h.origin, "GET", "/v1/hooks", {
      headers: { ...origin, authorization: `Bearer ${KEY_ACME}` },
    });
    expect(listed.headers.get("access-control-allow-origin")).toBe("https://app.example");
    await until(
      async () => (await h.engine.store.getJob(delivered.body.id))?.status === "succeeded",
    );
  });

  it("a wrong method → 405 with Allow", async () => {
    const answer = await call(h.origin, "GET", "/v1/hooks/stripe");
    expectProblem(answer, 405);
    expect(answer.headers.get("allow")).toContain("POST");
  });

  it("a 10 MB body → 413 without reading it, with or without Content-Length", async () => {
    const before = await stored();
    const big = new Uint8Array(10 * 1024 * 1024).fill(0x61);
    const headers = await stripe.sign("x", "evt_big");
    expectProblem(await call(h.origin, "POST", "/v1/hooks/stripe", { body: big, headers }), 413);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 160; i++) controller.enqueue(new Uint8Array(65_536).fill(0x62));
        controller.close();
      },
    });
    expectProblem(await call(h.origin, "POST", "/v1/hooks/stripe", { body: stream, headers }), 413);
    // Bodies that never end: answered all the same, so the rest was never waited for. A declared
    // 10 MB with 1 KiB sent (refused by its length), and a chunked body one byte over the limit.
    const declared = await answerWhileOpen(
      `${h.origin}/v1/hooks/stripe`,
      { ...headers, "content-length": String(10 * 1024 * 1024) },
      new Uint8Array(1_024).fill(0x63),
    );
    expect(declared.status).toBe(413);
    expect(JSON.parse(declared.body)).toMatchObject({ status: 413 });
    const chunked = await answerWhileOpen(
      `${h.origin}/v1/hooks/stripe`,
      headers,
      new Uint8Array(65_537).fill(0x64),
    );
    expect(chunked.status).toBe(413);
    expect(await stored()).toEqual(before);
  });

  it("a body that is not UTF-8, correctly signed, is stored as base64", async () => {
    const bytes = new Uint8Array([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x61]);
    const ts = Math.floor(Date.now() / 1000);
    const signed = signedHook(bytes, "bin-1", ts);
    const { mac } = signed;
    const answer = await signed.answer;
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const job = await h.engine.store.getJob(answer.body.id);
    expect(job?.tenant).toBe("acme");
    await until(async () => (await h.engine.store.getJob(answer.body.id))?.status === "succeeded");
    expect(job?.input).toMatchObject({
      body: Buffer.from(bytes).toString("base64"),
      encoding: "base64",
    });
    // The same bytes with one changed: refused, nothing stored.
    const before = await stored();
    const changed = bytes.slice();
    changed[0] = 0x00;
    const refused = await call(h.origin, "POST", "/v1/hooks/generic.v1", {
      body: changed,
      headers: {
        "x-timestamp": String(ts),
        "x-event-id": "bin-2",
        "x-signature": `sha256=${mac}`,
      },
    });
    expectProblem(refused, 401);
    expect(await stored()).toEqual(before);
  });

  it("a JSON body with a number past a double's range is kept as its text, not with a null", async () => {
    const text = '{"amount":1e400,"ok":1}';
    const answer = await signedHook(text, "big-1", Math.floor(Date.now() / 1000)).answer;
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const job = await h.engine.store.getJob(answer.body.id);
    expect(job?.input).toMatchObject({ body: text });
    // Done before the next case counts what is stored.
    await until(async () => (await h.engine.store.getJob(answer.body.id))?.status === "succeeded");
  });

  it("a JSON body with an integer a double cannot hold is kept as its text, not rounded", async () => {
    // Shopify's own sample order id: JSON.parse reads 820982911946154500.
    const text = '{"id":820982911946154508,"email":"jon@example.com","total":"1.00"}';
    const answer = await signedHook(text, "big-int-1", Math.floor(Date.now() / 1000)).answer;
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect((await h.engine.store.getJob(answer.body.id))?.input).toMatchObject({ body: text });
    await until(async () => (await h.engine.store.getJob(answer.body.id))?.status === "succeeded");
  });

  it("timestamps 1e300, -1, NaN and far ahead → 401, nothing stored", async () => {
    const body = stripe.body("evt_ts");
    const before = await stored();
    for (const ts of ["1e300", "-1", "NaN", "99999999999999999999"]) {
      const headers = await stripe.sign(body, "evt_ts");
      headers["stripe-signature"] = headers["stripe-signature"]!.replace(/t=\d+/, `t=${ts}`);
      expectProblem(await call(h.origin, "POST", "/v1/hooks/stripe", { body, headers }), 401);
      const h2 = await hmac.sign("x", "e1");
      h2["x-timestamp"] = ts;
      expectProblem(
        await call(h.origin, "POST", "/v1/hooks/generic.v1", { body: "x", headers: h2 }),
        401,
      );
    }
    // Signed genuinely, 10 years ahead.
    const future = Math.floor(Date.now() / 1000) + 10 * 365 * 86_400;
    const ahead = await stripe.sign(body, "evt_ts", { ts: future });
    expectProblem(await call(h.origin, "POST", "/v1/hooks/stripe", { body, headers: ahead }), 401);
    expect(await stored()).toEqual(before);
  });

  it("a tenant over its quota: 429 with Retry-After, counted as limited; idempotencyKey none", async () => {
    const body = stripe.body("evt_quota");
    const first = await call(h.origin, "POST", "/v1/hooks/globex.every", {
      body,
      headers: await stripe.sign(body, "evt_quota"),
    });
    expect(first.status).toBe(204);
    expect(first.headers.get("location")).toMatch(/^\/v1\/jobs\/j_/);
    expect(first.headers.get("ratelimit-remaining")).toBe("0");
    const firstId = first.headers.get("location")!.split("/").pop()!;
    await until(async () => (await h.engine.store.getJob(firstId))?.status === "succeeded");
    // The same event again: with idempotencyKey "none" it is a second job, and over the quota.
    const before = await stored();
    const second = await call(h.origin, "POST", "/v1/hooks/globex.every", {
      body,
      headers: await stripe.sign(body, "evt_quota"),
    });
    expectProblem(second, 429);
    expect(Number(second.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(second.headers.get("ratelimit-limit")).toBe("1");
    expect(await stored()).toEqual(before);
    const counts = await h.engine.store.webhookCounts!();
    // Kept under the endpoint's tenant and name.
    expect(Object.fromEntries(counts.get(webhookLogId("globex", "globex.every"))!)).toEqual({
      accepted: 1,
      limited: 1,
    });
    const job = await h.engine.store.getJob(firstId);
    expect(job).toMatchObject({ tenant: "globex" });
    expect(job?.idempotencyKey).toBeUndefined();
  });

  it("counts outcomes in the store, unknown names under one label, and lists the tenant's endpoints", async () => {
    const scrape = async () => {
      const metrics = await call(h.origin, "GET", "/metrics", {
        headers: { authorization: `Bearer ${KEY_ACME}` },
      });
      expect(metrics.status).toBe(200);
      return parsePrometheus(metrics.body as string).get("tickwork_webhook_requests_total");
    };
    const count = (
      family: Awaited<ReturnType<typeof scrape>>,
      endpoint: string,
      outcome: string,
    ): number =>
      family?.samples.find((s) => s.labels.endpoint === endpoint && s.labels.outcome === outcome)
        ?.value ?? 0;
    // What this test sends, counted from what the store held before (other tests count too).
    const start = await scrape();
    const body = stripe.body("evt_listed");
    const signed = await stripe.sign(body, "evt_listed");
    const big = new Uint8Array(65_537).fill(0x61);
    for (let i = 0; i < 2; i++) {
      expectProblem(
        await call(h.origin, "POST", "/v1/hooks/stripe", { body: big, headers: signed }),
        413,
      );
    }
    for (let i = 0; i < 3; i++) {
      expectProblem(
        await call(h.origin, "POST", "/v1/hooks/stripe", { body: `${body} `, headers: signed }),
        401,
      );
    }
    for (const name of ["__proto__", "constructor", "nope", "x".repeat(5_000)]) {
      expectProblem(
        await call(h.origin, "POST", `/v1/hooks/${name}`, { body, headers: signed }),
        404,
      );
    }
    // `%2e%2e` is a dot segment the URL parser removes before sending: the path is then no
    // endpoint's (404 from the app, not counted).
    expectProblem(await call(h.origin, "POST", "/v1/hooks/%2e%2e", { body, headers: signed }), 404);
    for (let i = 0; i < 2; i++) {
      const answer = await call(h.origin, "POST", "/v1/hooks/stripe", {
        body,
        headers: await stripe.sign(body, "evt_listed"),
      });
      expect(answer.status).toBe(202);
      expect(answer.headers.get("idempotent-replayed")).toBe(i === 0 ? null : "true");
    }
    const family = await scrape();
    expect(family?.type).toBe("counter");
    const added = (endpoint: string, outcome: string) =>
      count(family, endpoint, outcome) - count(start, endpoint, outcome);
    // The first delivery of evt_listed may be this test's or an earlier one's: at least a replay.
    expect(added("stripe", "accepted") + added("stripe", "replayed")).toBe(2);
    expect(added("stripe", "replayed")).toBeGreaterThanOrEqual(1);
    expect(added("stripe", "too_large")).toBe(2);
    expect(added("stripe", "unauthorized")).toBe(3);
    expect(added("_unknown", "not_found")).toBe(4);
    // Labels: configured names and `_unknown` only, whatever names were sent.
    const labels = new Set(family?.samples.map((s) => s.labels.endpoint));
    expect(labels.has("stripe") && labels.has("_unknown")).toBe(true);
    // acme's key sees its own endpoints' counts, and no other tenant's (globex's endpoint name
    // and counts were shown to every key before).
    for (const label of labels) expect(["stripe", "generic.v1", "_unknown"]).toContain(label);
    await call(h.origin, "POST", "/v1/hooks/globex.every", { body, headers: signed });
    expect((await scrape())?.samples.map((s) => s.labels.endpoint)).not.toContain("globex.every");
    const asGlobex = await call(h.origin, "GET", "/metrics", {
      headers: { authorization: `Bearer ${KEY_GLOBEX}` },
    });
    const globexLabels = parsePrometheus(asGlobex.body as string)
      .get("tickwork_webhook_requests_total")
      ?.samples.map((s) => s.labels.endpoint);
    expect(new Set(globexLabels)).toEqual(new Set(["globex.every", "_unknown"]));

    const listed = await call(h.origin, "GET", "/v1/hooks", {
      headers: { authorization: `Bearer ${KEY_ACME}` },
    });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((e: { name: string }) => e.name).sort()).toEqual([
      "generic.v1",
      "stripe",
    ]);
    expect(JSON.stringify(listed.body)).not.toContain("whsec_");
    const stripeItem = listed.body.items.find((e: { name: string }) => e.name === "stripe");
    expect(stripeItem).toMatchObject({ scheme: "stripe", handler: "hook.receive" });
    expect(stripeItem.deliveries.slice(0, 2)).toEqual([
      {
        at: expect.any(String),
        eventId: "evt_listed",
        outcome: "replayed",
        jobId: expect.any(String),
      },
      {
        at: expect.any(String),
        eventId: "evt_listed",
        outcome: "accepted",
        jobId: expect.any(String),
      },
    ]);
    // The typed client reads the same list.
    const client = createClient({ url: h.origin, apiKey: KEY_ACME });
    const viaClient = await client.hooks.list();
    expect(viaClient).toEqual(listed.body);
    // Another tenant sees only its own endpoints; no key → 401.
    const other = await call(h.origin, "GET", "/v1/hooks", {
      headers: { authorization: `Bearer ${KEY_GLOBEX}` },
    });
    expect(other.body.items.map((e: { name: string }) => e.name)).toEqual(["globex.every"]);
    expectProblem(await call(h.origin, "GET", "/v1/hooks"), 401);
  });
});
