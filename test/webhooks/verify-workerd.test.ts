/**
 * The verifiers inside real workerd: test/webhooks/fixtures/verify-worker.ts, bundled and run by
 * wrangler (`unstable_startWorker`), receives deliveries over HTTP signed by each sender's SDK or
 * published vector, verifies them with workerd's Web Crypto and `Headers`, and answers the result.
 * Genuine deliveries pass with their event ids; a changed byte, a wrong secret and a stale
 * timestamp are refused for the same reasons as on Node.
 */
import { createHmac, randomBytes } from "node:crypto";
import { sign as githubSign } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unstable_startWorker } from "wrangler";
import type { VerifyResult, WebhookVerifier } from "../../src/core/index.ts";
import { encode, NOW, NOW_MS, tampered } from "./support.ts";

type Worker = Awaited<ReturnType<typeof unstable_startWorker>>;
let worker: Worker | undefined;
let origin: string;

beforeAll(async () => {
  worker = await unstable_startWorker({
    name: "verify-webhooks",
    entrypoint: "test/webhooks/fixtures/verify-worker.ts",
    compatibilityDate: "2026-04-01",
    envFiles: [],
    sendMetrics: false,
    dev: {
      server: { hostname: "127.0.0.1", port: 0 },
      inspector: false,
      persist: false,
      watch: false,
      logLevel: "warn",
    },
  });
  await worker.ready;
  origin = String(await worker.url).replace(/\/$/, "");
}, 60_000);

afterAll(async () => {
  await worker?.dispose();
}, 30_000);

/** What the Worker's `verifyWebhook` answers for this delivery. */
async function verifyInWorkerd(
  verifier: WebhookVerifier,
  body: string | Uint8Array,
  headers: Record<string, string>,
  nowMs = NOW_MS,
): Promise<VerifyResult> {
  const res = await fetch(`${origin}/hooks`, {
    method: "POST",
    headers: {
      ...headers,
      "x-test-verifier": JSON.stringify(verifier),
      "x-test-now": String(nowMs),
    },
    body: (typeof body === "string" ? encode(body) : body) as Uint8Array<ArrayBuffer>,
  });
  expect(res.status).toBe(200);
  return (await res.json()) as VerifyResult;
}

describe("verifyWebhook in workerd", () => {
  it("standard: the standardwebhooks library's signature; a changed byte; a stale timestamp", async () => {
    const secret = `whsec_${randomBytes(32).toString("base64")}`;
    const verifier: WebhookVerifier = { scheme: "standard", secrets: [secret] };
    const body = JSON.stringify({ type: "ping", note: "ünïcode ✓" });
    const signed = (ts: number) => ({
      "webhook-id": "msg_w1",
      "webhook-timestamp": String(ts),
      "webhook-signature": new Webhook(secret).sign("msg_w1", new Date(ts * 1000), body),
    });
    expect(await verifyInWorkerd(verifier, body, signed(NOW))).toEqual({
      ok: true,
      eventId: "msg_w1",
      timestampSec: NOW,
    });
    expect(await verifyInWorkerd(verifier, tampered(body), signed(NOW))).toMatchObject({
      ok: false,
      reason: "bad_signature",
    });
    expect(await verifyInWorkerd(verifier, body, signed(NOW - 301))).toMatchObject({
      ok: false,
      reason: "stale_timestamp",
    });
  });

  it("stripe: the SDK's signature, with the body's id; a wrong secret", async () => {
    const secret = `whsec_${randomBytes(24).toString("hex")}`;
    const body = JSON.stringify({ id: "evt_workerd", object: "event" });
    const header = new Stripe("sk_test_x").webhooks.generateTestHeaderString({
      payload: body,
      secret,
      timestamp: NOW,
    });
    const ok = await verifyInWorkerd({ scheme: "stripe", secrets: ["whsec_old", secret] }, body, {
      "stripe-signature": header,
    });
    expect(ok).toEqual({ ok: true, eventId: "evt_workerd", timestampSec: NOW });
    const wrong = await verifyInWorkerd({ scheme: "stripe", secrets: ["whsec_old"] }, body, {
      "stripe-signature": header,
    });
    expect(wrong).toMatchObject({ ok: false, reason: "bad_signature" });
  });

  it("github, slack and shopify: SDK signature and published vectors", async () => {
    const secret = randomBytes(16).toString("hex");
    const body = '{"zen":"Keep it logically awesome."}';
    const github = await verifyInWorkerd({ scheme: "github", secrets: [secret] }, body, {
      "x-hub-signature-256": await githubSign(secret, body),
      "x-github-delivery": "d-workerd",
    });
    expect(github).toEqual({ ok: true, eventId: "d-workerd" });
    const vector = await verifyInWorkerd(
      { scheme: "github", secrets: ["It's a Secret to Everybody"] },
      "Hello, World!",
      {
        "x-hub-signature-256":
          "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
      },
    );
    expect(vector).toEqual({ ok: true });

    const slackBody = JSON.stringify({ type: "event_callback", event_id: "Ev_workerd" });
    const slack = await verifyInWorkerd({ scheme: "slack", secrets: [secret] }, slackBody, {
      "x-slack-request-timestamp": String(NOW),
      "x-slack-signature": `v0=${createHmac("sha256", secret).update(`v0:${NOW}:${slackBody}`).digest("hex")}`,
    });
    expect(slack).toEqual({ ok: true, eventId: "Ev_workerd", timestampSec: NOW });

    const shopify = await verifyInWorkerd({ scheme: "shopify", secrets: ["hush"] }, '{"id":1}', {
      "x-shopify-hmac-sha256": "VnKUjZsLuN5iZWjn5EntcBVCF9kMN43LglzCE1/GSeY=",
      "x-shopify-webhook-id": "s-workerd",
    });
    expect(shopify).toEqual({ ok: true, eventId: "s-workerd" });
  });

  it("hmac: SHA-512 base64 with a timestamp header", async () => {
    const secret = randomBytes(20).toString("hex");
    const body = "raw \u0000 bytes \u00ff";
    const verifier: WebhookVerifier = {
      scheme: "hmac",
      secrets: [secret],
      header: "x-sig",
      encoding: "base64",
      algorithm: "SHA-512",
      timestampHeader: "x-ts",
    };
    const sig = createHmac("sha512", secret).update(`${NOW}.${body}`).digest("base64");
    expect(await verifyInWorkerd(verifier, body, { "x-sig": sig, "x-ts": String(NOW) })).toEqual({
      ok: true,
      timestampSec: NOW,
    });
    expect(
      await verifyInWorkerd(
        verifier,
        body,
        { "x-sig": sig, "x-ts": String(NOW) },
        NOW_MS + 301_000,
      ),
    ).toMatchObject({ ok: false, reason: "stale_timestamp" });
  });
});
