/**
 * Each sender as the endpoint tests use it: its verifier settings, and its deliveries signed by
 * its own SDK where one exists (Stripe, `standardwebhooks`, `@octokit/webhooks-methods`) or by
 * the published construction (Slack, Shopify, a generic HMAC sender), with `node:crypto`.
 */
import { createHmac, randomBytes } from "node:crypto";
import { sign as githubSign } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import type { WebhookScheme, WebhookVerifier } from "../../src/core/webhooks/index.ts";

/** How one delivery is signed. */
export interface SignOptions {
  /** The signed timestamp, epoch seconds (default: now). */
  ts?: number;
  /** Sign with this secret instead of the configured one. */
  secret?: string;
}

export interface Sender {
  scheme: WebhookScheme;
  verifier: WebhookVerifier;
  /**
   * A body for event `eventId` (Stripe and Slack carry the id in the body; the others' bodies
   * differ per event too, as real ones do: those endpoints dedupe on the body's digest).
   */
  body(eventId: string): string;
  /** The headers of a delivery of `body` (content type included). */
  sign(body: string, eventId: string, options?: SignOptions): Promise<Record<string, string>>;
  /** A secret of the right format that is not configured. */
  wrongSecret: string;
  /** The header without which the delivery must be refused. */
  signatureHeader: string;
  /** True when the scheme signs a timestamp. */
  timestamped: boolean;
}

const now = () => Math.floor(Date.now() / 1000);
const json = { "content-type": "application/json" };

export function standardSender(): Sender {
  const secret = `whsec_${randomBytes(32).toString("base64")}`;
  return {
    scheme: "standard",
    verifier: { scheme: "standard", secrets: [secret] },
    body: (id) => JSON.stringify({ type: "invoice.paid", data: { id, amount: 42 } }),
    async sign(body, id, o = {}) {
      const ts = o.ts ?? now();
      return {
        ...json,
        "webhook-id": id,
        "webhook-timestamp": String(ts),
        "webhook-signature": new Webhook(o.secret ?? secret).sign(id, new Date(ts * 1000), body),
      };
    },
    wrongSecret: `whsec_${randomBytes(32).toString("base64")}`,
    signatureHeader: "webhook-signature",
    timestamped: true,
  };
}

export function stripeSender(): Sender {
  const stripe = new Stripe("sk_test_x");
  const secret = `whsec_${randomBytes(24).toString("hex")}`;
  return {
    scheme: "stripe",
    verifier: { scheme: "stripe", secrets: [secret] },
    body: (id) => JSON.stringify({ id, object: "event", type: "charge.succeeded" }),
    async sign(body, _id, o = {}) {
      const header = stripe.webhooks.generateTestHeaderString({
        payload: body,
        secret: o.secret ?? secret,
        timestamp: o.ts ?? now(),
      });
      return { ...json, "stripe-signature": header };
    },
    wrongSecret: `whsec_${randomBytes(24).toString("hex")}`,
    signatureHeader: "stripe-signature",
    timestamped: true,
  };
}

export function githubSender(): Sender {
  const secret = randomBytes(20).toString("hex");
  return {
    scheme: "github",
    verifier: { scheme: "github", secrets: [secret] },
    // GitHub's payloads are unique per event (ids, SHAs, times): the id stands in for them.
    body: (id) => JSON.stringify({ action: "opened", number: 7, hook_event: id }),
    async sign(body, id, o = {}) {
      return {
        ...json,
        "x-github-event": "pull_request",
        "x-github-delivery": id,
        "x-hub-signature-256": await githubSign(o.secret ?? secret, body),
      };
    },
    wrongSecret: randomBytes(20).toString("hex"),
    signatureHeader: "x-hub-signature-256",
    timestamped: false,
  };
}

export function slackSender(): Sender {
  const secret = randomBytes(16).toString("hex");
  return {
    scheme: "slack",
    verifier: { scheme: "slack", secrets: [secret] },
    body: (id) => JSON.stringify({ type: "event_callback", event_id: id, event: { type: "x" } }),
    async sign(body, _id, o = {}) {
      const ts = o.ts ?? now();
      const mac = createHmac("sha256", o.secret ?? secret)
        .update(`v0:${ts}:${body}`)
        .digest("hex");
      return {
        ...json,
        "x-slack-request-timestamp": String(ts),
        "x-slack-signature": `v0=${mac}`,
      };
    },
    wrongSecret: randomBytes(16).toString("hex"),
    signatureHeader: "x-slack-signature",
    timestamped: true,
  };
}

export function shopifySender(): Sender {
  const secret = randomBytes(16).toString("hex");
  return {
    scheme: "shopify",
    verifier: { scheme: "shopify", secrets: [secret] },
    // A resource's state: its `updated_at` differs from one change to the next.
    body: (id) =>
      JSON.stringify({ id: 820982911946154500, email: "jon@example.com", updated_at: id }),
    async sign(body, id, o = {}) {
      const mac = createHmac("sha256", o.secret ?? secret)
        .update(body)
        .digest("base64");
      return {
        ...json,
        "x-shopify-topic": "orders/create",
        "x-shopify-webhook-id": id,
        "x-shopify-hmac-sha256": mac,
      };
    },
    wrongSecret: randomBytes(16).toString("hex"),
    signatureHeader: "x-shopify-hmac-sha256",
    timestamped: false,
  };
}

export function hmacSender(): Sender {
  const secret = randomBytes(16).toString("hex");
  return {
    scheme: "hmac",
    verifier: {
      scheme: "hmac",
      secrets: [secret],
      header: "x-signature",
      prefix: "sha256=",
      timestampHeader: "x-timestamp",
      idHeader: "x-event-id",
    },
    body: (id) => `plain text event ${id}`,
    async sign(body, id, o = {}) {
      const ts = o.ts ?? now();
      const mac = createHmac("sha256", o.secret ?? secret)
        .update(`${ts}.${body}`)
        .digest("hex");
      return {
        "content-type": "text/plain",
        "x-timestamp": String(ts),
        "x-event-id": id,
        "x-signature": `sha256=${mac}`,
      };
    },
    wrongSecret: randomBytes(16).toString("hex"),
    signatureHeader: "x-signature",
    timestamped: true,
  };
}

/** One of each sender. */
export function allSenders(): Sender[] {
  return [
    standardSender(),
    stripeSender(),
    githubSender(),
    slackSender(),
    shopifySender(),
    hmacSender(),
  ];
}
