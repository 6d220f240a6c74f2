/**
 * `verifyWebhook` for Slack and Shopify against their documented or recomputed vectors, and for
 * the generic `hmac` scheme against `node:crypto` (an independent HMAC), hex and base64, with and
 * without a timestamp: genuine deliveries pass with the right event id; a changed body byte, a
 * wrong secret, an old timestamp and a missing header are refused for the right reason; a second
 * secret (rotation) matches. Also the retry windows.
 */
import { createHmac, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  SENDER_RETRY_WINDOW_MS,
  verifyWebhook,
  type WebhookVerifier,
} from "../../src/core/index.ts";
import { hmacHex, NOW, NOW_MS, refused, request, tampered } from "./support.ts";

describe("slack", () => {
  const secret = randomBytes(16).toString("hex");
  const verifier: WebhookVerifier = { scheme: "slack", secrets: [secret] };
  const body = JSON.stringify({
    type: "event_callback",
    event_id: "Ev08MFMKH6",
    event: { type: "app_mention" },
  });
  const signed = (ts: number, key = secret, payload = body) => ({
    "x-slack-request-timestamp": String(ts),
    "x-slack-signature": `v0=${hmacHex(key, `v0:${ts}:${payload}`)}`,
  });

  it("accepts the documented slash-command vector, which has no event id", async () => {
    const docsBody =
      "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const result = await verifyWebhook(
      { scheme: "slack", secrets: ["8f742231b10e8888abcd99yyyzzz85a5"] },
      request(docsBody, {
        "X-Slack-Request-Timestamp": "1531420618",
        "X-Slack-Signature": "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
      }),
      1531420618 * 1000 + 60_000,
    );
    expect(result).toEqual({ ok: true, timestampSec: 1531420618 });
  });

  it("accepts an Events API delivery, with the body's event_id as the event id", async () => {
    expect(await verifyWebhook(verifier, request(body, signed(NOW)), NOW_MS)).toEqual({
      ok: true,
      eventId: "Ev08MFMKH6",
      timestampSec: NOW,
    });
  });

  it("refuses a changed body byte, a wrong secret, an old timestamp, a missing header", async () => {
    refused(
      await verifyWebhook(verifier, request(tampered(body), signed(NOW)), NOW_MS),
      "bad_signature",
    );
    refused(
      await verifyWebhook(verifier, request(body, signed(NOW, "wrong")), NOW_MS),
      "bad_signature",
    );
    refused(
      await verifyWebhook(verifier, request(body, signed(NOW - 301)), NOW_MS),
      "stale_timestamp",
    );
    refused(
      await verifyWebhook(verifier, request(body, signed(NOW + 301)), NOW_MS),
      "stale_timestamp",
    );
    const { "x-slack-signature": _, ...unsigned } = signed(NOW);
    refused(await verifyWebhook(verifier, request(body, unsigned), NOW_MS), "missing_signature");
    const { "x-slack-request-timestamp": __, ...undated } = signed(NOW);
    refused(await verifyWebhook(verifier, request(body, undated), NOW_MS), "bad_timestamp");
  });

  it("rotation: the second secret matches", async () => {
    const rotated = { scheme: "slack" as const, secrets: ["old", secret] };
    expect(await verifyWebhook(rotated, request(body, signed(NOW)), NOW_MS)).toMatchObject({
      ok: true,
    });
  });
});

describe("shopify", () => {
  const verifier: WebhookVerifier = { scheme: "shopify", secrets: ["hush"] };
  const body = '{"id":1}';
  const vector = "VnKUjZsLuN5iZWjn5EntcBVCF9kMN43LglzCE1/GSeY=";

  it("accepts the computed vector, with X-Shopify-Webhook-Id (else -Event-Id) as the event id", async () => {
    const h = { "X-Shopify-Hmac-Sha256": vector };
    expect(
      await verifyWebhook(
        verifier,
        request(body, { ...h, "X-Shopify-Webhook-Id": "b54557e4", "X-Shopify-Event-Id": "e-1" }),
        NOW_MS,
      ),
    ).toEqual({ ok: true, eventId: "b54557e4" });
    expect(
      await verifyWebhook(verifier, request(body, { ...h, "X-Shopify-Event-Id": "e-1" }), NOW_MS),
    ).toEqual({ ok: true, eventId: "e-1" });
    expect(await verifyWebhook(verifier, request(body, h), NOW_MS)).toEqual({ ok: true });
  });

  it("refuses a changed body byte, a wrong secret, a missing header, non-base64", async () => {
    const h = { "x-shopify-hmac-sha256": vector };
    refused(await verifyWebhook(verifier, request(tampered(body), h), NOW_MS), "bad_signature");
    refused(
      await verifyWebhook({ scheme: "shopify", secrets: ["hush!"] }, request(body, h), NOW_MS),
      "bad_signature",
    );
    refused(await verifyWebhook(verifier, request(body, {}), NOW_MS), "missing_signature");
    refused(
      await verifyWebhook(
        verifier,
        request(body, { "x-shopify-hmac-sha256": "not base64!" }),
        NOW_MS,
      ),
      "malformed",
    );
  });

  it("rotation: the second secret matches", async () => {
    const rotated = { scheme: "shopify" as const, secrets: ["new-secret", "hush"] };
    expect(
      await verifyWebhook(rotated, request(body, { "x-shopify-hmac-sha256": vector }), NOW_MS),
    ).toEqual({ ok: true });
  });
});

describe("hmac (generic)", () => {
  const secret = randomBytes(20).toString("hex");
  const body = JSON.stringify({ order: 9, total: "12.50" });

  it("hex with a prefix, no timestamp, id from idHeader", async () => {
    const verifier: WebhookVerifier = {
      scheme: "hmac",
      secrets: [secret],
      header: "X-Signature",
      prefix: "sha256=",
      idHeader: "X-Delivery",
    };
    const h = { "x-signature": `sha256=${hmacHex(secret, body)}`, "x-delivery": "d-1" };
    expect(await verifyWebhook(verifier, request(body, h), NOW_MS)).toEqual({
      ok: true,
      eventId: "d-1",
    });
    refused(await verifyWebhook(verifier, request(tampered(body), h), NOW_MS), "bad_signature");
    refused(
      await verifyWebhook({ ...verifier, secrets: ["wrong"] }, request(body, h), NOW_MS),
      "bad_signature",
    );
    refused(
      await verifyWebhook(verifier, request(body, { "x-delivery": "d-1" }), NOW_MS),
      "missing_signature",
    );
    refused(
      await verifyWebhook(
        verifier,
        request(body, { "x-signature": hmacHex(secret, body) }),
        NOW_MS,
      ),
      "malformed",
    );
    const rotated = { ...verifier, secrets: ["old", secret] };
    expect(await verifyWebhook(rotated, request(body, h), NOW_MS)).toMatchObject({ ok: true });
  });

  it("SHA-1 and SHA-512 hex: the algorithm setting is honoured", async () => {
    const sha1: WebhookVerifier = {
      scheme: "hmac",
      secrets: [secret],
      header: "x-sig",
      algorithm: "SHA-1",
    };
    expect(
      await verifyWebhook(sha1, request(body, { "x-sig": hmacHex(secret, body, "sha1") }), NOW_MS),
    ).toEqual({ ok: true });
    refused(
      await verifyWebhook(sha1, request(body, { "x-sig": hmacHex(secret, body) }), NOW_MS),
      "bad_signature",
    );
    const sha512 = { ...sha1, algorithm: "SHA-512" as const };
    expect(
      await verifyWebhook(
        sha512,
        request(body, { "x-sig": hmacHex(secret, body, "sha512") }),
        NOW_MS,
      ),
    ).toEqual({ ok: true });
  });

  it("base64 with a timestamp header and separator: ts + separator + body", async () => {
    const verifier: WebhookVerifier = {
      scheme: "hmac",
      secrets: [secret],
      header: "x-sig",
      encoding: "base64",
      algorithm: "SHA-512",
      timestampHeader: "x-ts",
      separator: ":",
      idHeader: "x-id",
    };
    const signed = (ts: number) => ({
      "x-ts": String(ts),
      "x-id": "evt-77",
      "x-sig": createHmac("sha512", secret).update(`${ts}:${body}`).digest("base64"),
    });
    expect(await verifyWebhook(verifier, request(body, signed(NOW)), NOW_MS)).toEqual({
      ok: true,
      eventId: "evt-77",
      timestampSec: NOW,
    });
    refused(
      await verifyWebhook(verifier, request(tampered(body), signed(NOW)), NOW_MS),
      "bad_signature",
    );
    refused(
      await verifyWebhook(verifier, request(body, signed(NOW - 301)), NOW_MS),
      "stale_timestamp",
    );
    refused(
      await verifyWebhook(verifier, request(body, signed(NOW + 301)), NOW_MS),
      "stale_timestamp",
    );
    const { "x-ts": _, ...undated } = signed(NOW);
    refused(await verifyWebhook(verifier, request(body, undated), NOW_MS), "bad_timestamp");
    // The default separator is "." — a signature over "ts:body" does not pass with it.
    const { separator: __, ...dotted } = verifier as Extract<WebhookVerifier, { scheme: "hmac" }>;
    refused(await verifyWebhook(dotted, request(body, signed(NOW)), NOW_MS), "bad_signature");
    const dot = {
      ...signed(NOW),
      "x-sig": createHmac("sha512", secret).update(`${NOW}.${body}`).digest("base64"),
    };
    expect(await verifyWebhook(dotted, request(body, dot), NOW_MS)).toMatchObject({ ok: true });
  });
});

describe("SENDER_RETRY_WINDOW_MS", () => {
  it("covers each sender's retry schedule", () => {
    const hour = 3_600_000;
    expect(SENDER_RETRY_WINDOW_MS).toEqual({
      standard: (75 * 3600 + 35 * 60 + 5) * 1000, // 5s+5m+30m+2h+5h+10h+14h+20h+24h
      stripe: 72 * hour,
      github: 72 * hour,
      slack: hour,
      shopify: 4 * hour,
      hmac: 72 * hour,
    });
  });
});
