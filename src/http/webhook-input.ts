/**
 * @module
 * What an accepted webhook delivery becomes (docs/webhooks.md, "The job"): the job's input —
 * the body (parsed JSON, else text, else base64), the configured headers and the event — and its
 * idempotency key: `hook:<endpoint>:<event id>` when the signature covers the id, else the body's
 * digest. Web APIs only (Workers run this too).
 */

import { hasUnsafeInteger } from "../core/json-values.ts";
import {
  bodyIssues,
  isWellFormedText,
  jsonDepth,
  MAX_IDEMPOTENCY_KEY,
  MAX_JSON_DEPTH,
} from "../core/schemas.ts";
import type { WebhookJobInput, WebhookVerifier } from "../core/webhooks/index.ts";

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** The body as the job's input holds it (see {@link WebhookJobInput.body}). */
export function bodyInput(
  bytes: Uint8Array,
  contentType: string | null,
): { body: unknown; encoding?: "base64" } {
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return { body: toBase64(bytes), encoding: "base64" };
  }
  const type = contentType?.split(";")[0]?.trim().toLowerCase() ?? "";
  const json = type === "application/json" || /^application\/[\w.+-]+\+json$/.test(type);
  if (json && jsonDepth(text, MAX_JSON_DEPTH) <= MAX_JSON_DEPTH) {
    try {
      const value: unknown = JSON.parse(text);
      // A reserved key, or a number JSON cannot carry (1e400 would be stored as null), or an
      // integer a double cannot hold (Shopify's and Twitter's 64-bit ids: 820982911946154508
      // would read 820982911946154500): the text, for the handler to read as it must.
      if (bodyIssues(value, { max: 1, parsed: true }).length === 0 && !hasUnsafeInteger(text)) {
        return { body: value };
      }
    } catch {
      // Not JSON after all: kept as the text it is.
    }
  }
  return { body: text };
}

/**
 * The configured headers present on the request, in a null-prototype object (a header named
 * `__proto__` cannot reach `Object.prototype`).
 */
export function headersInput(headers: Headers, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const name of names) {
    const value = headers.get(name);
    if (value !== null) out[name] = value;
  }
  return { ...out };
}

/**
 * The job's idempotency key for event `eventId` of endpoint `endpoint`: `hook:<endpoint>:<id>`,
 * or, when that is longer than {@link MAX_IDEMPOTENCY_KEY} or holds text a key may not
 * (control characters, lone surrogates), `hook:<endpoint>:sha256:<hex of the id's SHA-256>`.
 */
export async function webhookIdempotencyKey(endpoint: string, eventId: string): Promise<string> {
  const plain = `hook:${endpoint}:${eventId}`;
  if (plain.length <= MAX_IDEMPOTENCY_KEY && isKeyText(eventId)) return plain;
  return `hook:${endpoint}:sha256:${await sha256Hex(eventId)}`;
}

/**
 * True when the sender's event id is not covered by the signature: GitHub (`X-GitHub-Delivery`)
 * and Shopify (`X-Shopify-Webhook-Id`), which sign no timestamp either, and an `hmac` sender's
 * `idHeader` (a signed timestamp, if any, only narrows the window). Anyone holding one captured
 * delivery could send it again with fresh ids, so such endpoints dedupe on the signed body
 * instead ({@link webhookBodyKey}); the id is still shown.
 */
export function dedupesOnBody(verifier: WebhookVerifier): boolean {
  return (
    verifier.scheme === "github" ||
    verifier.scheme === "shopify" ||
    (verifier.scheme === "hmac" && verifier.idHeader !== undefined)
  );
}

/**
 * The idempotency key of a delivery to an endpoint that {@link dedupesOnBody}:
 * `hook:<endpoint>:body-sha256:<hex of the raw body's SHA-256>`. A redelivery carries the same
 * bytes (re-signed or not, whatever its delivery id), so it replays the first job; two events
 * with byte-identical bodies are one job (docs/webhooks.md, "Idempotency and retry windows").
 */
export async function webhookBodyKey(endpoint: string, body: Uint8Array): Promise<string> {
  return `hook:${endpoint}:body-sha256:${await sha256Hex(body)}`;
}

/** The event id as the endpoint's history shows it: itself, or its hash when unfit for a key. */
export async function shownEventId(eventId: string): Promise<string> {
  return eventId.length <= 256 && isKeyText(eventId)
    ? eventId
    : `sha256:${await sha256Hex(eventId)}`;
}

function isKeyText(text: string): boolean {
  return text.length > 0 && isWellFormedText(text) && !/\p{Cc}/u.test(text);
}

async function sha256Hex(data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
