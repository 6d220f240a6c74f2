/**
 * @module
 * The shapes of inbound-webhook verification: which sender signs how ({@link WebhookVerifier}),
 * the request as received ({@link WebhookRequest}), the answer ({@link VerifyResult}), and how
 * long each sender may deliver the same event again ({@link SENDER_RETRY_WINDOW_MS}).
 * docs/webhooks.md, "Verifiers", has one table per sender.
 */

/** The signing schemes tickwork verifies. */
export type WebhookScheme = "standard" | "stripe" | "github" | "slack" | "shopify" | "hmac";

/**
 * Verifier settings, as in configuration (JSON-safe); validate them with
 * `webhookVerifierSchema`. `secrets` holds every secret in use (rotation): a delivery passes
 * when any secret matches any signature it carries. `toleranceSec` bounds how old (and, for
 * `standard` and `hmac`, how far ahead) a signed timestamp may be; 300 s by default.
 */
export type WebhookVerifier =
  /** Standard Webhooks (Svix): `whsec_…` base64 secrets; the tolerance applies both ways. */
  | { scheme: "standard"; secrets: string[]; toleranceSec?: number }
  /** Stripe: the whole `whsec_…` string is the key; age only, plus {@link WEBHOOK_FUTURE_SKEW_SEC}. */
  | { scheme: "stripe"; secrets: string[]; toleranceSec?: number }
  /** GitHub: `X-Hub-Signature-256` only (the legacy SHA-1 header is not read). No timestamp. */
  | { scheme: "github"; secrets: string[] }
  /** Slack: the app's signing secret; age only, plus {@link WEBHOOK_FUTURE_SKEW_SEC}. */
  | { scheme: "slack"; secrets: string[]; toleranceSec?: number }
  /** Shopify: the app's client secret. No timestamp. */
  | { scheme: "shopify"; secrets: string[] }
  /**
   * Any sender that HMACs the body: the signature is in `header`, after `prefix` (e.g.
   * `"sha256="`, compared case-sensitively), as `encoding` (hex by default) of the
   * `algorithm` (SHA-256 by default) HMAC under the UTF-8 secret. With `timestampHeader`, the
   * signed content is `${ts}${separator}${body}` (`separator` `"."` by default), `ts` epoch
   * seconds within `toleranceSec` both ways. `idHeader` names the header with the event id.
   */
  | {
      scheme: "hmac";
      secrets: string[];
      algorithm?: "SHA-256" | "SHA-1" | "SHA-512";
      header: string;
      encoding?: "hex" | "base64";
      prefix?: string;
      timestampHeader?: string;
      toleranceSec?: number;
      separator?: string;
      idHeader?: string;
    };

/** A request as received: the exact raw body bytes and the headers. */
export interface WebhookRequest {
  body: Uint8Array;
  headers: Headers;
}

/**
 * What {@link verifyWebhook} found. `ok: true` carries the sender's event id when the scheme has
 * one (for idempotency) and the signed timestamp when the scheme signs one. A refusal names why:
 *
 * - `missing_signature`: the signature header is absent or empty.
 * - `malformed`: a header is there but unusable (unparseable, oversized, no signature of a
 *   version this scheme accepts, a missing id the signature covers), or the verifier is unusable.
 * - `bad_timestamp`: the timestamp is absent or not a plain count of seconds.
 * - `stale_timestamp`: a genuine signature over a timestamp outside the tolerance.
 * - `bad_signature`: no offered signature matches any secret.
 */
export type VerifyResult =
  | { ok: true; eventId?: string; timestampSec?: number }
  | {
      ok: false;
      reason:
        | "missing_signature"
        | "bad_signature"
        | "stale_timestamp"
        | "bad_timestamp"
        | "malformed";
      detail: string;
    };

/** Default `toleranceSec` of every scheme that signs a timestamp. */
export const DEFAULT_WEBHOOK_TOLERANCE_SEC = 300;

/**
 * How far ahead of our clock a Stripe or Slack timestamp may be. Their own libraries check age
 * only (a timestamp in the future passes); we allow this much clock skew and no more, so a
 * signature over a far-future timestamp cannot be replayed for as long as it claims.
 */
export const WEBHOOK_FUTURE_SKEW_SEC = 300;

const SECOND_MS = 1_000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/**
 * How long after the first delivery each sender may deliver the same event again, so an
 * idempotency record keyed by the event id must live at least this long.
 */
export const SENDER_RETRY_WINDOW_MS: Record<WebhookScheme, number> = {
  // Standard Webhooks: the spec's example schedule retries after 5 s, 5 min, 30 min, 2 h, 5 h,
  // 10 h, 14 h, 20 h and 24 h (each after the previous attempt): 75 h 35 min 5 s in all, a little
  // over three days.
  standard: 5 * SECOND_MS + 35 * MINUTE_MS + 75 * HOUR_MS,
  // Stripe: live-mode events are retried with exponential back-off for up to three days (test
  // mode: three times within hours). A secret being rolled stays valid for up to 24 h within it.
  stripe: 3 * DAY_MS,
  // GitHub: no automatic retries (a delivery must be answered 2xx within 10 s), but a person may
  // redeliver a recent delivery by hand with the same X-GitHub-Delivery id; GitHub offers
  // redelivery of deliveries from the past three days (GitHub Enterprise Server: seven), so keep
  // ids for three days.
  github: 3 * DAY_MS,
  // Slack: three retries, at about 0 s, 1 min and 5 min (the timing is not published precisely),
  // an acknowledgement being due within 3 s. One hour leaves a wide margin over those minutes.
  slack: HOUR_MS,
  // Shopify: eight retries spread over four hours.
  shopify: 4 * HOUR_MS,
  // A generic sender's schedule is unknown: as long as the longest common one (Stripe's).
  hmac: 3 * DAY_MS,
};

/**
 * How long an endpoint's idempotency record for an event must live: its sender's retry window
 * ({@link SENDER_RETRY_WINDOW_MS}), or longer when one signed delivery stays acceptable longer. A
 * timestamp may be up to `toleranceSec` old and (Stripe, Slack) {@link WEBHOOK_FUTURE_SKEW_SEC}
 * or (Standard Webhooks, `hmac`) `toleranceSec` ahead when first accepted, so the same request
 * passes for that whole span after it: a resend within it must find the record and replay.
 */
export function webhookDedupeMs(v: WebhookVerifier): number {
  const window = SENDER_RETRY_WINDOW_MS[v.scheme];
  let spanSec = 0;
  if (v.scheme === "stripe" || v.scheme === "slack") {
    spanSec = (v.toleranceSec ?? DEFAULT_WEBHOOK_TOLERANCE_SEC) + WEBHOOK_FUTURE_SKEW_SEC;
  } else if (v.scheme === "standard" || (v.scheme === "hmac" && v.timestampHeader)) {
    spanSec = 2 * (v.toleranceSec ?? DEFAULT_WEBHOOK_TOLERANCE_SEC);
  }
  return Math.max(window, spanSec * SECOND_MS);
}

/**
 * The input of a webhook job; `Body` is what the sender's JSON holds, for the handler to name
 * (nothing checks it: give the handler an `input` schema to have it checked).
 *
 * @example
 * "stripe.event": {
 *   run: async ({ body }: WebhookJobInput<{ type: string; data: { object: unknown } }>) => {
 *     if (body.type === "invoice.paid") await fulfil(body.data.object);
 *   },
 * },
 */
export interface WebhookJobInput<Body = unknown> {
  /**
   * The body: parsed JSON when the request said JSON (`application/json`, `…+json`) and it
   * parses (within 32 levels, no `__proto__`/`constructor`/`prototype` key);
   * otherwise the text when it is UTF-8; otherwise base64, with `encoding: "base64"`.
   */
  body: Body;
  encoding?: "base64";
  /** The configured headers the request carried, by lowercase name. */
  headers: Record<string, string>;
  event: { id?: string; endpoint: string; scheme: WebhookScheme };
}
