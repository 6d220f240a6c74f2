/**
 * `verifyWebhook` against each sender's own signing code (the Standard Webhooks reference library,
 * the Stripe SDK, `@octokit/webhooks-methods`) and the published or recomputed vectors: genuine
 * deliveries pass with the right event id; a changed body byte, a wrong secret, an old timestamp
 * and a missing header are each refused for the right reason; a rotated secret set accepts the
 * newer secret. Slack, Shopify and the generic scheme: verify-slack-shopify-hmac.test.ts.
 */
import { randomBytes } from "node:crypto";
import { sign as githubSign } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { describe, expect, it } from "vitest";
import { verifyWebhook, type WebhookVerifier } from "../../src/core/index.ts";
import { hmacHex, NOW, NOW_MS, refused, request, tampered } from "./support.ts";

describe("standard (Standard Webhooks / Svix)", () => {
  const secret = `whsec_${randomBytes(32).toString("base64")}`;
  const other = `whsec_${randomBytes(32).toString("base64")}`;
  const verifier: WebhookVerifier = { scheme: "standard", secrets: [secret] };
  const body = JSON.stringify({ type: "invoice.paid", data: { amount: 42, note: "ünïcode ✓" } });
  const id = "msg_2f0Yq1pHkG8z";

  /** Headers as the reference library signs them, at `ts`. */
  function signed(ts: number, key = secret, payload = body) {
    return {
      "webhook-id": id,
      "webhook-timestamp": String(ts),
      "webhook-signature": new Webhook(key).sign(id, new Date(ts * 1000), payload),
    };
  }

  it("accepts what the standardwebhooks library signs, with webhook-id as the event id", async () => {
    const result = await verifyWebhook(verifier, request(body, signed(NOW)), NOW_MS);
    expect(result).toEqual({ ok: true, eventId: id, timestampSec: NOW });
  });

  it("accepts the svix-* headers too", async () => {
    const h = signed(NOW);
    const svix = {
      "svix-id": h["webhook-id"],
      "svix-timestamp": h["webhook-timestamp"],
      "svix-signature": h["webhook-signature"],
    };
    expect(await verifyWebhook(verifier, request(body, svix), NOW_MS)).toEqual({
      ok: true,
      eventId: id,
      timestampSec: NOW,
    });
  });

  it("accepts the computed vector", async () => {
    const result = await verifyWebhook(
      { scheme: "standard", secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"] },
      request('{"test": 2432232314}', {
        "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "webhook-timestamp": "1614265330",
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
      }),
      1614265330 * 1000,
    );
    expect(result).toEqual({
      ok: true,
      eventId: "msg_p5jXN8AQM9LWM0D4loKWxJek",
      timestampSec: 1614265330,
    });
  });

  it("refuses a changed body byte, a wrong secret, a missing header", async () => {
    refused(
      await verifyWebhook(verifier, request(tampered(body), signed(NOW)), NOW_MS),
      "bad_signature",
    );
    refused(
      await verifyWebhook(verifier, request(body, signed(NOW, other)), NOW_MS),
      "bad_signature",
    );
    const { "webhook-signature": _, ...unsigned } = signed(NOW);
    refused(await verifyWebhook(verifier, request(body, unsigned), NOW_MS), "missing_signature");
    const { "webhook-id": __, ...noId } = signed(NOW);
    refused(await verifyWebhook(verifier, request(body, noId), NOW_MS), "malformed");
  });

  it("refuses a timestamp more than the tolerance old or ahead, both ways", async () => {
    refused(
      await verifyWebhook(verifier, request(body, signed(NOW - 301)), NOW_MS),
      "stale_timestamp",
    );
    refused(
      await verifyWebhook(verifier, request(body, signed(NOW + 301)), NOW_MS),
      "stale_timestamp",
    );
    expect(await verifyWebhook(verifier, request(body, signed(NOW - 299)), NOW_MS)).toMatchObject({
      ok: true,
    });
    const lenient = { ...verifier, toleranceSec: 3600 };
    expect(await verifyWebhook(lenient, request(body, signed(NOW - 3000)), NOW_MS)).toMatchObject({
      ok: true,
    });
  });

  it("signatures sent as two header lines (joined with a comma) are read, as the library reads them", async () => {
    const h = signed(NOW);
    const headers = new Headers({ "webhook-id": id, "webhook-timestamp": String(NOW) });
    // The matching signature first, then one by another key: fetch joins the lines with ", ".
    headers.append("webhook-signature", h["webhook-signature"]);
    headers.append("webhook-signature", signed(NOW, other)["webhook-signature"]);
    const joined = headers.get("webhook-signature") as string;
    expect(joined).toContain(", ");
    const payload = new TextEncoder().encode(body);
    expect(new Webhook(secret).verify(body, Object.fromEntries(headers))).toBeTruthy();
    expect(await verifyWebhook(verifier, { body: payload, headers }, NOW_MS)).toMatchObject({
      ok: true,
      eventId: id,
    });
  });

  it("rotation: any secret against any v1 entry; v1a and unknown versions are ignored", async () => {
    const rotated = { scheme: "standard" as const, secrets: [other, secret] };
    expect(await verifyWebhook(rotated, request(body, signed(NOW)), NOW_MS)).toMatchObject({
      ok: true,
    });
    const h = signed(NOW);
    const theirs = h["webhook-signature"];
    const several = `v1a,${randomBytes(64).toString("base64")} v2,abc ${signed(NOW, other)["webhook-signature"]} ${theirs}`;
    const result = await verifyWebhook(
      verifier,
      request(body, { ...h, "webhook-signature": several }),
      NOW_MS,
    );
    expect(result).toMatchObject({ ok: true, eventId: id });
    const onlyV1a = { ...h, "webhook-signature": theirs.replace(/^v1,/, "v1a,") };
    refused(await verifyWebhook(verifier, request(body, onlyV1a), NOW_MS), "malformed");
    const onlyV2 = { ...h, "webhook-signature": theirs.replace(/^v1,/, "v2,") };
    refused(await verifyWebhook(verifier, request(body, onlyV2), NOW_MS), "malformed");
  });
});

describe("stripe", () => {
  const stripe = new Stripe("sk_test_x");
  const secret = `whsec_${randomBytes(24).toString("hex")}`;
  const other = `whsec_${randomBytes(24).toString("hex")}`;
  const verifier: WebhookVerifier = { scheme: "stripe", secrets: [secret] };
  const body = JSON.stringify({ id: "evt_1Qx7", object: "event", type: "charge.succeeded" });
  const header = (timestamp: number, key = secret, payload = body) =>
    stripe.webhooks.generateTestHeaderString({ payload, secret: key, timestamp });

  it("accepts what the Stripe SDK signs, with the body's id as the event id", async () => {
    const result = await verifyWebhook(
      verifier,
      request(body, { "stripe-signature": header(NOW) }),
      NOW_MS,
    );
    expect(result).toEqual({ ok: true, eventId: "evt_1Qx7", timestampSec: NOW });
  });

  it("accepts the computed vector", async () => {
    const result = await verifyWebhook(
      { scheme: "stripe", secrets: ["whsec_test_secret"] },
      request('{"id":"evt_test_webhook","object":"event"}', {
        "Stripe-Signature":
          "t=1700000000,v1=d95c6b7477fbd7e9f90b1b0ef5f9c7ac25abca5382460e0d988c2b2a5b71b990",
      }),
      1700000000 * 1000 + 999,
    );
    expect(result).toEqual({ ok: true, eventId: "evt_test_webhook", timestampSec: 1700000000 });
  });

  it("has no event id when the body is not a JSON object with a string id", async () => {
    for (const payload of ["[1,2]", '{"id":42}', "not json", '"evt_x"', "{}"]) {
      const result = await verifyWebhook(
        verifier,
        request(payload, { "stripe-signature": header(NOW, secret, payload) }),
        NOW_MS,
      );
      expect(result).toEqual({ ok: true, timestampSec: NOW });
    }
  });

  it("refuses a changed body byte, a wrong secret, a missing header", async () => {
    const h = { "stripe-signature": header(NOW) };
    refused(await verifyWebhook(verifier, request(tampered(body), h), NOW_MS), "bad_signature");
    refused(
      await verifyWebhook(
        verifier,
        request(body, { "stripe-signature": header(NOW, other) }),
        NOW_MS,
      ),
      "bad_signature",
    );
    refused(await verifyWebhook(verifier, request(body, {}), NOW_MS), "missing_signature");
  });

  it("refuses an old timestamp; allows 300 s of future skew and no more", async () => {
    const at = (ts: number) =>
      verifyWebhook(verifier, request(body, { "stripe-signature": header(ts) }), NOW_MS);
    refused(await at(NOW - 301), "stale_timestamp");
    expect(await at(NOW - 299)).toMatchObject({ ok: true });
    expect(await at(NOW + 299)).toMatchObject({ ok: true });
    refused(await at(NOW + 301), "stale_timestamp");
  });

  it("counts only v1: v0 alone is malformed, v0 beside a good v1 is ignored; t= is required", async () => {
    const v1 = header(NOW)
      .split(",")
      .find((p) => p.startsWith("v1="))!;
    const v0 = `v0=${hmacHex(secret, `${NOW}.${body}`)}`; // a real MAC, under the wrong scheme
    refused(
      await verifyWebhook(
        verifier,
        request(body, { "stripe-signature": `t=${NOW},${v0}` }),
        NOW_MS,
      ),
      "malformed",
    );
    expect(
      await verifyWebhook(
        verifier,
        request(body, { "stripe-signature": `t=${NOW},${v0},${v1}` }),
        NOW_MS,
      ),
    ).toMatchObject({ ok: true });
    refused(
      await verifyWebhook(verifier, request(body, { "stripe-signature": v1 }), NOW_MS),
      "bad_timestamp",
    );
    refused(
      await verifyWebhook(
        verifier,
        request(body, { "stripe-signature": `t=${NOW},t=${NOW},${v1}` }),
        NOW_MS,
      ),
      "malformed",
    );
  });

  it("rotation: a second secret, and a header with one v1 per secret", async () => {
    const rotated = { scheme: "stripe" as const, secrets: [other, secret] };
    expect(
      await verifyWebhook(rotated, request(body, { "stripe-signature": header(NOW) }), NOW_MS),
    ).toMatchObject({ ok: true });
    const both = `t=${NOW},v1=${hmacHex(other, `${NOW}.${body}`)},v1=${hmacHex(secret, `${NOW}.${body}`)}`;
    expect(
      await verifyWebhook(verifier, request(body, { "stripe-signature": both }), NOW_MS),
    ).toMatchObject({ ok: true });
  });
});

describe("github", () => {
  const secret = randomBytes(16).toString("hex");
  const verifier: WebhookVerifier = { scheme: "github", secrets: [secret] };
  const body = JSON.stringify({ action: "opened", number: 7 });
  const delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958";

  it("accepts what @octokit/webhooks-methods signs, with X-GitHub-Delivery as the event id", async () => {
    const headers = {
      "X-Hub-Signature-256": await githubSign(secret, body),
      "X-GitHub-Delivery": delivery,
    };
    expect(await verifyWebhook(verifier, request(body, headers), NOW_MS)).toEqual({
      ok: true,
      eventId: delivery,
    });
  });

  it("accepts GitHub's documented vector", async () => {
    const result = await verifyWebhook(
      { scheme: "github", secrets: ["It's a Secret to Everybody"] },
      request("Hello, World!", {
        "x-hub-signature-256":
          "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
      }),
      NOW_MS,
    );
    expect(result).toEqual({ ok: true });
  });

  it("refuses a changed body byte, a wrong secret, a missing or legacy-only header", async () => {
    const h = { "x-hub-signature-256": await githubSign(secret, body) };
    refused(await verifyWebhook(verifier, request(tampered(body), h), NOW_MS), "bad_signature");
    const wrong = { "x-hub-signature-256": await githubSign("not-the-secret", body) };
    refused(await verifyWebhook(verifier, request(body, wrong), NOW_MS), "bad_signature");
    refused(await verifyWebhook(verifier, request(body, {}), NOW_MS), "missing_signature");
    const sha1 = { "x-hub-signature": `sha1=${hmacHex(secret, body, "sha1")}` };
    refused(await verifyWebhook(verifier, request(body, sha1), NOW_MS), "missing_signature");
    const noPrefix = { "x-hub-signature-256": h["x-hub-signature-256"].slice("sha256=".length) };
    refused(await verifyWebhook(verifier, request(body, noPrefix), NOW_MS), "malformed");
  });

  it("rotation: the second secret matches", async () => {
    const rotated = { scheme: "github" as const, secrets: ["old-secret", secret] };
    const h = { "x-hub-signature-256": await githubSign(secret, body) };
    expect(await verifyWebhook(rotated, request(body, h), NOW_MS)).toEqual({ ok: true });
  });
});
