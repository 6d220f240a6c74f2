/**
 * @module
 * {@link verifyWebhook}: checks an inbound webhook's signature the way its sender signs it
 * (Standard Webhooks/Svix, Stripe, GitHub, Slack, Shopify, or a generic HMAC), over the exact raw
 * body bytes, and names the sender's event id for idempotency. Pure: Web Crypto only, no I/O, the
 * clock passed in. docs/webhooks.md, "Verifiers", tabulates each scheme.
 *
 * Hostile input is answered, never thrown: every header read is capped
 * ({@link MAX_WEBHOOK_HEADER_CHARS}), at most {@link MAX_WEBHOOK_SIGNATURES} signatures are
 * considered, timestamps must be plain digit strings, and digests are compared in constant time.
 * A signature is checked before its timestamp's window, so `stale_timestamp` means "genuine, but
 * too old (or too far ahead)", never "forged".
 */
import { isWellFormedText } from "../schemas.ts";
import {
  concat,
  DIGEST_BYTES,
  decodeBase64,
  decodeHex,
  type HmacHash,
  hmac,
  timingSafeEqual,
  utf8,
} from "./bytes.ts";
import { MAX_WEBHOOK_TOLERANCE_SEC, standardWebhookKey } from "./schema.ts";
import {
  DEFAULT_WEBHOOK_TOLERANCE_SEC,
  type VerifyResult,
  WEBHOOK_FUTURE_SKEW_SEC,
  type WebhookRequest,
  type WebhookVerifier,
} from "./types.ts";

/** Longest header value read, in characters; a longer one is `malformed`. */
export const MAX_WEBHOOK_HEADER_CHARS = 4096;
/** Most signatures one header may offer (rotation sends a few); more is `malformed`. */
export const MAX_WEBHOOK_SIGNATURES = 16;
/** Longest event id returned; a longer (or non-printable) one is left out. */
export const MAX_WEBHOOK_EVENT_ID_CHARS = 256;

/** Epoch seconds: 1–12 digits (up to the year 33658), nothing else — no sign, exponent or dot. */
const TIMESTAMP = /^\d{1,12}$/;
/** An id taken from a header: visible ASCII, no spaces. */
const HEADER_ID = new RegExp(`^[\\x21-\\x7e]{1,${MAX_WEBHOOK_EVENT_ID_CHARS}}$`);

type Refusal = Extract<VerifyResult, { ok: false }>;
type Reason = Refusal["reason"];

function refuse(reason: Reason, detail: string): Refusal {
  return { ok: false, reason, detail };
}

function isRefusal(value: unknown): value is Refusal {
  return typeof value === "object" && value !== null && (value as Refusal).ok === false;
}

/** The trimmed value of header `name`; `undefined` when absent or blank; a refusal when huge. */
function readHeader(headers: Headers, name: string): string | undefined | Refusal {
  const value = headers.get(name);
  if (value === null) return undefined;
  if (value.length > MAX_WEBHOOK_HEADER_CHARS) {
    return refuse("malformed", `${name} is longer than ${MAX_WEBHOOK_HEADER_CHARS} chars`);
  }
  const trimmed = value.trim();
  return trimmed === "" ? undefined : trimmed;
}

/** The signature header's value, or the refusal when it is absent, blank or huge. */
function signatureHeader(headers: Headers, name: string): string | Refusal {
  const value = readHeader(headers, name);
  return value === undefined ? refuse("missing_signature", `no ${name} header`) : value;
}

/** An id header's value when it is a usable id, else `undefined` (never a refusal). */
function headerId(headers: Headers, name: string): string | undefined {
  const value = readHeader(headers, name);
  return typeof value === "string" && HEADER_ID.test(value) ? value : undefined;
}

/** Epoch seconds from a timestamp's text, or `bad_timestamp`. */
function parseTimestamp(text: string | undefined | Refusal, what: string): number | Refusal {
  if (isRefusal(text)) return text;
  if (text === undefined) return refuse("bad_timestamp", `no ${what}`);
  if (!TIMESTAMP.test(text)) {
    return refuse("bad_timestamp", `${what} is not epoch seconds: ${show(text)}`);
  }
  return Number(text);
}

/** `stale_timestamp` unless `ts` is at most `pastSec` before and `futureSec` after now. */
function outsideWindow(
  ts: number,
  nowMs: number,
  pastSec: number,
  futureSec: number,
): Refusal | undefined {
  const nowSec = Math.floor(nowMs / 1000);
  if (nowSec - ts > pastSec) {
    return refuse("stale_timestamp", `signed ${nowSec - ts} s ago; at most ${pastSec} s allowed`);
  }
  if (ts - nowSec > futureSec) {
    return refuse(
      "stale_timestamp",
      `signed ${ts - nowSec} s ahead; at most ${futureSec} s allowed`,
    );
  }
  return undefined;
}

/** Some of `text` for a message. */
function show(text: string): string {
  const cut = text.length > 32 ? `${text.slice(0, 29)}...` : text;
  return JSON.stringify(cut);
}

/** One HMAC key: its bytes and what names it in the key cache. */
interface Key {
  cacheKey: string;
  bytes: Uint8Array;
}

/** Keys whose bytes are the secret's UTF-8 (every scheme but Standard Webhooks). */
function utf8Keys(scheme: string, secrets: readonly string[]): Key[] {
  return secrets.map((secret) => ({ cacheKey: `${scheme}\u0000${secret}`, bytes: utf8(secret) }));
}

/**
 * True when the HMAC of `content` under any key equals any offered signature. Each key's HMAC is
 * computed once and compared, in constant time, with every signature.
 */
async function anyMatches(
  keys: readonly Key[],
  hash: HmacHash,
  content: Uint8Array,
  offered: readonly Uint8Array[],
): Promise<boolean> {
  for (const key of keys) {
    if (key.bytes.length === 0) continue;
    const mac = await hmac(key.cacheKey, key.bytes, hash, content);
    let matched = false;
    for (const signature of offered) matched = timingSafeEqual(mac, signature) || matched;
    if (matched) return true;
  }
  return false;
}

/** `bad_signature` unless a key signed `content` as one of `offered` says. */
async function checkSignature(
  keys: readonly Key[],
  hash: HmacHash,
  content: Uint8Array,
  offered: readonly Uint8Array[],
): Promise<Refusal | undefined> {
  if (keys.length === 0) return refuse("malformed", "the verifier has no usable secret");
  if (await anyMatches(keys, hash, content, offered)) return undefined;
  return refuse("bad_signature", "no signature matches any secret");
}

/**
 * The body's top-level string `field` when the body is a JSON object, else `undefined`. Read
 * only after the signature is verified.
 */
function bodyId(body: Uint8Array, field: string): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  if (!Object.hasOwn(value, field)) return undefined;
  const id = (value as Record<string, unknown>)[field];
  return typeof id === "string" &&
    id.length > 0 &&
    id.length <= MAX_WEBHOOK_EVENT_ID_CHARS &&
    isWellFormedText(id)
    ? id
    : undefined;
}

/** Success, leaving out an `eventId` there is none of. */
function accepted(eventId: string | undefined, timestampSec?: number): VerifyResult {
  return {
    ok: true,
    ...(eventId !== undefined ? { eventId } : {}),
    ...(timestampSec !== undefined ? { timestampSec } : {}),
  };
}

// ── schemes ──────────────────────────────────────────────────────────────────

type Of<S extends WebhookVerifier["scheme"]> = Extract<WebhookVerifier, { scheme: S }>;

/**
 * Standard Webhooks: `webhook-signature` holds space-separated `v1,<base64>` entries (others,
 * such as the asymmetric `v1a`, are ignored; several header lines, joined by ", ", are read as one) over `${id}.${timestamp}.${body}`; `svix-*`
 * headers are read when the `webhook-*` ones are absent.
 */
async function verifyStandard(v: Of<"standard">, req: WebhookRequest, nowMs: number) {
  const set = req.headers.has("webhook-signature") ? "webhook" : "svix";
  if (set === "svix" && !req.headers.has("svix-signature")) {
    return refuse("missing_signature", "no webhook-signature (or svix-signature) header");
  }
  const value = signatureHeader(req.headers, `${set}-signature`);
  if (isRefusal(value)) return value;
  const id = readHeader(req.headers, `${set}-id`);
  if (isRefusal(id)) return id;
  if (id === undefined || !HEADER_ID.test(id)) {
    return refuse("malformed", `${set}-id is missing or not a printable id`);
  }
  const tsText = readHeader(req.headers, `${set}-timestamp`);
  const ts = parseTimestamp(tsText, `${set}-timestamp`);
  if (isRefusal(ts)) return ts;
  // Two header lines arrive joined by ", " (fetch's Headers): an entry's trailing comma is the
  // join's, never base64's.
  const entries = value
    .split(" ")
    .map((entry) => (entry.endsWith(",") ? entry.slice(0, -1) : entry))
    .filter((entry) => entry !== "");
  if (entries.length > MAX_WEBHOOK_SIGNATURES) {
    return refuse("malformed", `more than ${MAX_WEBHOOK_SIGNATURES} signatures`);
  }
  const offered = entries
    .filter((entry) => entry.startsWith("v1,"))
    .map((entry) => decodeBase64(entry.slice(3)))
    .filter((bytes) => bytes !== undefined);
  if (offered.length === 0) return refuse("malformed", "no well-formed v1 signature");
  const keys: Key[] = [];
  for (const secret of v.secrets) {
    const bytes = standardWebhookKey(secret);
    if (bytes) keys.push({ cacheKey: `standard\u0000${secret}`, bytes });
  }
  const content = concat(utf8(`${id}.${tsText as string}.`), req.body);
  const bad = await checkSignature(keys, "SHA-256", content, offered);
  if (bad) return bad;
  const tolerance = v.toleranceSec ?? DEFAULT_WEBHOOK_TOLERANCE_SEC;
  return outsideWindow(ts, nowMs, tolerance, tolerance) ?? accepted(id, ts);
}

/**
 * Stripe: `Stripe-Signature: t=<s>,v1=<hex>[,v1=…][,v0=…]` over `${t}.${body}`, keyed by the
 * whole `whsec_…` string. Only `v1` counts; `t` is required, once.
 */
async function verifyStripe(v: Of<"stripe">, req: WebhookRequest, nowMs: number) {
  const value = signatureHeader(req.headers, "stripe-signature");
  if (isRefusal(value)) return value;
  const parts = value.split(",");
  if (parts.length > 2 * MAX_WEBHOOK_SIGNATURES + 1) {
    return refuse("malformed", "Stripe-Signature has too many entries");
  }
  let tText: string | undefined;
  const offered: Uint8Array[] = [];
  for (const part of parts) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const item = part.slice(eq + 1).trim();
    if (key === "t") {
      if (tText !== undefined) return refuse("malformed", "Stripe-Signature has more than one t=");
      tText = item;
    } else if (key === "v1") {
      const bytes = decodeHex(item);
      if (bytes) offered.push(bytes);
    }
  }
  if (offered.length > MAX_WEBHOOK_SIGNATURES) {
    return refuse("malformed", `more than ${MAX_WEBHOOK_SIGNATURES} signatures`);
  }
  const ts = parseTimestamp(tText, "t= in Stripe-Signature");
  if (isRefusal(ts)) return ts;
  if (offered.length === 0)
    return refuse("malformed", "no well-formed v1= signature (v0 is ignored)");
  const content = concat(utf8(`${tText as string}.`), req.body);
  const bad = await checkSignature(utf8Keys("stripe", v.secrets), "SHA-256", content, offered);
  if (bad) return bad;
  const stale = outsideWindow(
    ts,
    nowMs,
    v.toleranceSec ?? DEFAULT_WEBHOOK_TOLERANCE_SEC,
    WEBHOOK_FUTURE_SKEW_SEC,
  );
  return stale ?? accepted(bodyId(req.body, "id"), ts);
}

/** A single `<prefix><encoded digest>` signature, decoded; a refusal when it is not one. */
function singleSignature(
  value: string,
  name: string,
  prefix: string,
  encoding: "hex" | "base64",
): Uint8Array | Refusal {
  if (!value.startsWith(prefix))
    return refuse("malformed", `${name} does not start with ${prefix}`);
  const text = value.slice(prefix.length);
  const bytes = encoding === "hex" ? decodeHex(text) : decodeBase64(text);
  return bytes && bytes.length > 0 ? bytes : refuse("malformed", `${name} is not ${encoding}`);
}

/** GitHub: `X-Hub-Signature-256: sha256=<hex>` over the body. */
async function verifyGithub(v: Of<"github">, req: WebhookRequest) {
  const value = signatureHeader(req.headers, "x-hub-signature-256");
  if (isRefusal(value)) return value;
  const signature = singleSignature(value, "X-Hub-Signature-256", "sha256=", "hex");
  if (isRefusal(signature)) return signature;
  const keys = utf8Keys("github", v.secrets);
  const bad = await checkSignature(keys, "SHA-256", req.body, [signature]);
  return bad ?? accepted(headerId(req.headers, "x-github-delivery"));
}

/**
 * Slack: `X-Slack-Signature: v0=<hex>` over `v0:${X-Slack-Request-Timestamp}:${body}`; age at
 * most `toleranceSec`, and at most {@link WEBHOOK_FUTURE_SKEW_SEC} ahead.
 */
async function verifySlack(v: Of<"slack">, req: WebhookRequest, nowMs: number) {
  const value = signatureHeader(req.headers, "x-slack-signature");
  if (isRefusal(value)) return value;
  const tsText = readHeader(req.headers, "x-slack-request-timestamp");
  const ts = parseTimestamp(tsText, "X-Slack-Request-Timestamp");
  if (isRefusal(ts)) return ts;
  const signature = singleSignature(value, "X-Slack-Signature", "v0=", "hex");
  if (isRefusal(signature)) return signature;
  const content = concat(utf8(`v0:${tsText as string}:`), req.body);
  const bad = await checkSignature(utf8Keys("slack", v.secrets), "SHA-256", content, [signature]);
  if (bad) return bad;
  const stale = outsideWindow(
    ts,
    nowMs,
    v.toleranceSec ?? DEFAULT_WEBHOOK_TOLERANCE_SEC,
    WEBHOOK_FUTURE_SKEW_SEC,
  );
  return stale ?? accepted(bodyId(req.body, "event_id"), ts);
}

/** Shopify: `X-Shopify-Hmac-Sha256: <base64>` over the body. */
async function verifyShopify(v: Of<"shopify">, req: WebhookRequest) {
  const value = signatureHeader(req.headers, "x-shopify-hmac-sha256");
  if (isRefusal(value)) return value;
  const signature = singleSignature(value, "X-Shopify-Hmac-Sha256", "", "base64");
  if (isRefusal(signature)) return signature;
  const keys = utf8Keys("shopify", v.secrets);
  const bad = await checkSignature(keys, "SHA-256", req.body, [signature]);
  if (bad) return bad;
  const id =
    headerId(req.headers, "x-shopify-webhook-id") ?? headerId(req.headers, "x-shopify-event-id");
  return accepted(id);
}

/** A generic HMAC sender, as its {@link WebhookVerifier} `hmac` settings describe. */
async function verifyHmac(v: Of<"hmac">, req: WebhookRequest, nowMs: number) {
  const value = signatureHeader(req.headers, v.header);
  if (isRefusal(value)) return value;
  let ts: number | undefined;
  let content = req.body;
  if (v.timestampHeader !== undefined) {
    const tsText = readHeader(req.headers, v.timestampHeader);
    const parsed = parseTimestamp(tsText, v.timestampHeader);
    if (isRefusal(parsed)) return parsed;
    ts = parsed;
    content = concat(utf8(`${tsText as string}${v.separator ?? "."}`), req.body);
  }
  const encoding = v.encoding ?? "hex";
  const signature = singleSignature(value, v.header, v.prefix ?? "", encoding);
  if (isRefusal(signature)) return signature;
  const hash = v.algorithm ?? "SHA-256";
  if (!(hash in DIGEST_BYTES)) return refuse("malformed", "the verifier's algorithm is unknown");
  const cacheScope = `hmac\u0000${hash}`;
  const bad = await checkSignature(utf8Keys(cacheScope, v.secrets), hash, content, [signature]);
  if (bad) return bad;
  if (ts !== undefined) {
    const tolerance = v.toleranceSec ?? DEFAULT_WEBHOOK_TOLERANCE_SEC;
    const stale = outsideWindow(ts, nowMs, tolerance, tolerance);
    if (stale) return stale;
  }
  const id = v.idHeader !== undefined ? headerId(req.headers, v.idHeader) : undefined;
  return accepted(id, ts);
}

/**
 * Verifies `req` as `verifier` says its sender signs, at `nowMs` (epoch ms). Never throws: any
 * input — garbage headers, a huge or non-numeric timestamp, an unusable verifier — is answered
 * with `{ ok: false, reason, detail }`. On success, `eventId` is the sender's event id when the
 * scheme has one (read from the body only after the signature matched) and `timestampSec` the
 * signed timestamp.
 *
 * @example
 * const result = await verifyWebhook(
 *   { scheme: "github", secrets: [process.env.GITHUB_WEBHOOK_SECRET!] },
 *   { body: new Uint8Array(await request.arrayBuffer()), headers: request.headers },
 *   Date.now(),
 * );
 * if (!result.ok) return new Response(result.detail, { status: 401 });
 */
export async function verifyWebhook(
  verifier: WebhookVerifier,
  req: WebhookRequest,
  nowMs: number,
): Promise<VerifyResult> {
  try {
    if (typeof nowMs !== "number" || !Number.isFinite(nowMs)) {
      return refuse("malformed", "the clock reading is not a finite number");
    }
    if (!(req?.body instanceof Uint8Array) || typeof req.headers?.get !== "function") {
      return refuse("malformed", "the request has no byte body or no headers");
    }
    if (
      !Array.isArray(verifier?.secrets) ||
      !verifier.secrets.every((s) => typeof s === "string")
    ) {
      return refuse("malformed", "the verifier's secrets are not a list of strings");
    }
    // The window is these schemes' only defence against a replayed capture: a tolerance that is
    // no number of seconds (NaN, Infinity, 1e300 — Number() of an unset variable) would accept
    // a signature of any age, so the verifier is unusable rather than open.
    const tolerance = (verifier as { toleranceSec?: unknown }).toleranceSec;
    if (
      tolerance !== undefined &&
      !(
        typeof tolerance === "number" &&
        Number.isInteger(tolerance) &&
        tolerance >= 1 &&
        tolerance <= MAX_WEBHOOK_TOLERANCE_SEC
      )
    ) {
      return refuse(
        "malformed",
        `the verifier's toleranceSec must be a whole number of seconds from 1 to ${MAX_WEBHOOK_TOLERANCE_SEC}`,
      );
    }
    switch (verifier.scheme) {
      case "standard":
        return await verifyStandard(verifier, req, nowMs);
      case "stripe":
        return await verifyStripe(verifier, req, nowMs);
      case "github":
        return await verifyGithub(verifier, req);
      case "slack":
        return await verifySlack(verifier, req, nowMs);
      case "shopify":
        return await verifyShopify(verifier, req);
      case "hmac":
        return await verifyHmac(verifier, req, nowMs);
      default:
        return refuse("malformed", "the verifier's scheme is unknown");
    }
  } catch (error) {
    // Only a verifier that skipped webhookVerifierSchema gets here (say, a header name Headers
    // refuses); the request is refused rather than the error escaping.
    return refuse("malformed", `could not verify: ${(error as Error)?.message ?? String(error)}`);
  }
}
