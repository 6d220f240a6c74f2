/**
 * Inbound webhooks on the Workers entry in real workerd (set up as `workerd.test.ts` does:
 * `functions/cloudflare.ts` under wrangler's `unstable_startWorker`, Redis behind the
 * Upstash-compatible REST bridge, QStash played by the double): with `TICKWORK_CONFIG` declaring
 * a Stripe and a Standard Webhooks endpoint, a delivery signed by each sender's own SDK is
 * accepted and stored with Web Crypto inside workerd, and runs through QStash; a redelivery
 * replays the same job; a bad signature is refused with 401 problem+json and stores nothing.
 */
import { randomBytes } from "node:crypto";
import type { Redis as IORedis } from "ioredis";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { unstable_startWorker } from "wrangler";
import type { RedisStore } from "../../src/store/redis/index.ts";
import type { RedisRestServer } from "../../src/tools/redis-rest/index.ts";
import type { QStashDouble } from "../support/qstash-double/index.ts";
import { freePort, secret, startQStashWithSecrets, startRedisBehindRest, text } from "./harness.ts";

type Worker = Awaited<ReturnType<typeof unstable_startWorker>>;

const API_KEY = secret("key");
const REST_TOKEN = secret("rest");
const PREFIX = `cfw${randomBytes(4).toString("hex")}`;
const STRIPE_SECRET = `whsec_${randomBytes(24).toString("hex")}`;
const STANDARD_SECRET = `whsec_${randomBytes(32).toString("base64")}`;
const WAIT = { timeout: 20_000, interval: 100 };

let redis: IORedis;
let bridge: RedisRestServer;
let qstash: QStashDouble;
let worker: Worker | undefined;
let origin: string;
let store: RedisStore;

beforeAll(async () => {
  ({ redis, store, bridge } = await startRedisBehindRest(PREFIX, REST_TOKEN));
  qstash = await startQStashWithSecrets();
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  const config = {
    webhooks: {
      stripe: { verifier: { scheme: "stripe", secrets: [STRIPE_SECRET] }, handler: "echo" },
      svix: { verifier: { scheme: "standard", secrets: [STANDARD_SECRET] }, handler: "echo" },
    },
  };
  worker = await unstable_startWorker({
    config: "wrangler.toml",
    envFiles: [],
    sendMetrics: false,
    bindings: {
      UPSTASH_REDIS_REST_URL: text(bridge.url),
      UPSTASH_REDIS_REST_TOKEN: text(REST_TOKEN),
      QSTASH_TOKEN: text(qstash.token),
      QSTASH_URL: text(qstash.url),
      QSTASH_CURRENT_SIGNING_KEY: text(qstash.currentSigningKey),
      QSTASH_NEXT_SIGNING_KEY: text(qstash.nextSigningKey),
      TICKWORK_PUBLIC_URL: text(origin),
      TICKWORK_API_KEY: text(API_KEY),
      CRON_SECRET: text(secret("cron")),
      TICKWORK_CONFIG: text(JSON.stringify(config)),
      TICKWORK_PREFIX: text(PREFIX),
    },
    dev: {
      server: { hostname: "127.0.0.1", port },
      inspector: false,
      persist: false,
      watch: false,
      logLevel: "warn",
    },
  });
  await worker.ready;
}, 60_000);

afterAll(async () => {
  await worker?.dispose();
  await qstash?.close();
  await bridge?.close();
  if (redis) {
    let cursor = "0";
    do {
      const [next, found] = await redis.scan(cursor, "MATCH", `{${PREFIX}}:*`, "COUNT", 1000);
      if (found.length > 0) await redis.del(...found);
      cursor = next;
    } while (cursor !== "0");
    redis.disconnect();
  }
}, 30_000);

/** What a submit writes: job records, idempotency keys, outbox entries and events. */
async function storedKeys() {
  const keys = (await redis.keys(`{${PREFIX}}:*`)).filter((k) => /:(j|idem):/.test(k)).sort();
  return {
    keys,
    outbox: await redis.zcard(`{${PREFIX}}:outbox`),
    events: await redis.xlen(`{${PREFIX}}:events`),
  };
}

async function deliver(name: string, body: string, headers: Record<string, string>) {
  const res = await fetch(`${origin}/v1/hooks/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const text = await res.text();
  if (!res.headers.get("content-type")?.includes("json"))
    throw new Error(`${res.status}: ${text.slice(0, 3000)}`);
  return {
    status: res.status,
    headers: res.headers,
    body: JSON.parse(text) as Record<string, unknown>,
  };
}

describe("inbound webhooks in workerd", () => {
  const stripe = new Stripe("sk_test_x");
  const stripeHeader = (payload: string, key = STRIPE_SECRET) =>
    stripe.webhooks.generateTestHeaderString({
      payload,
      secret: key,
      timestamp: Math.floor(Date.now() / 1000),
    });

  it("accepts a delivery the Stripe SDK signed, stores it, runs it, and replays a redelivery", async () => {
    const body = JSON.stringify({ id: "evt_workerd_1", object: "event", type: "charge.succeeded" });
    const first = await deliver("stripe", body, { "stripe-signature": stripeHeader(body) });
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    const id = first.body.id as string;
    expect(await store.getJob(id)).toMatchObject({
      idempotencyKey: "hook:stripe:evt_workerd_1",
      input: {
        body: JSON.parse(body),
        event: { id: "evt_workerd_1", endpoint: "stripe", scheme: "stripe" },
      },
    });
    const again = await deliver("stripe", body, { "stripe-signature": stripeHeader(body) });
    expect(again.status).toBe(202);
    expect(again.body.id).toBe(id);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    await vi.waitFor(async () => {
      expect(await store.getJob(id)).toMatchObject({ status: "succeeded", attempts: 1 });
    }, WAIT);
  });

  it("accepts a Standard Webhooks delivery signed by its reference library", async () => {
    const body = JSON.stringify({ type: "invoice.paid", amount: 7 });
    const ts = new Date();
    const headers = {
      "webhook-id": "msg_workerd_1",
      "webhook-timestamp": String(Math.floor(ts.getTime() / 1000)),
      "webhook-signature": new Webhook(STANDARD_SECRET).sign("msg_workerd_1", ts, body),
    };
    const answer = await deliver("svix", body, headers);
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    expect(await store.getJob(answer.body.id as string)).toMatchObject({
      idempotencyKey: "hook:svix:msg_workerd_1",
    });
    await vi.waitFor(async () => {
      expect(await store.getJob(answer.body.id as string)).toMatchObject({ status: "succeeded" });
      expect(await redis.zcard(`{${PREFIX}}:outbox`)).toBe(0);
    }, WAIT);
  });

  it("refuses a bad signature and a changed byte with 401 problem+json, storing nothing", async () => {
    const body = JSON.stringify({ id: "evt_workerd_bad", object: "event" });
    const before = await storedKeys();
    const wrong = await deliver("stripe", body, {
      "stripe-signature": stripeHeader(body, `whsec_${randomBytes(24).toString("hex")}`),
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("content-type")).toBe("application/problem+json");
    expect(wrong.body.type).toBe("urn:tickwork:problem:webhook_bad_signature");
    const changed = await deliver("stripe", body.replace("bad", "bae"), {
      "stripe-signature": stripeHeader(body),
    });
    expect(changed.status).toBe(401);
    const unknown = await deliver("__proto__", body, { "stripe-signature": stripeHeader(body) });
    expect(unknown.status).toBe(404);
    expect(await storedKeys()).toEqual(before);
  });
});
