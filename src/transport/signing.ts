/**
 * @module
 * Delivery signatures made and checked exactly as QStash makes and checks them, so a worker route
 * verifies the local transport and QStash with the same code (and `@upstash/qstash`'s `Receiver`
 * accepts what the local transport signs).
 *
 * The `Upstash-Signature` header is a JWT, HS256, with claims `iss: "Upstash"`, `sub` (destination
 * URL), `iat`, `nbf`, `exp`, `jti` and `body` (base64url SHA-256 of the raw body). The HMAC key is
 * the UTF-8 bytes of the signing-key string. Web Crypto only: runs on Node ≥ 20, Workers, browsers.
 */

import type { DeliveryToken } from "../core/model.ts";

const ISSUER = "Upstash";
const JWT_HEADER = { alg: "HS256", typ: "JWT" } as const;
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** Lifetime QStash gives its signatures, in seconds. */
export const SIGNATURE_TTL_SEC = 300;

/**
 * The longest lifetime (`exp - iat`) a delivery signature may claim: what QStash issues. A token
 * that claims more (say, `exp` in the year 3000) is refused: a captured delivery could otherwise be
 * replayed for as long as it claims.
 */
export const MAX_SIGNATURE_LIFETIME_SEC = SIGNATURE_TTL_SEC;

export type { DeliveryToken };

/** Claims of a delivery signature. Times are epoch seconds. */
export interface SignatureClaims {
  iss: string;
  /** The destination URL. */
  sub: string;
  iat: number;
  nbf: number;
  exp: number;
  jti: string;
  /** base64url SHA-256 of the raw body (QStash pads it with `=`). */
  body: string;
}

/** Inputs of {@link signDelivery}. */
export interface SignDeliveryOptions {
  /** Signing key; its UTF-8 bytes are the HMAC key (it is not base64-decoded). */
  signingKey: string;
  /** Destination URL, exactly as the receiver will compare it (becomes `sub`). */
  url: string;
  /** Raw body, exactly as sent. */
  body: string;
  /**
   * Issue time in epoch ms. Receivers check it against their own clock, so pass a real time.
   * @default Date.now()
   */
  now?: number | undefined;
  /**
   * Lifetime in seconds.
   * @default 300
   */
  ttlSec?: number | undefined;
}

/**
 * Sign a delivery the way QStash does; the result goes in the `Upstash-Signature` header.
 *
 * @example
 * const signature = await signDelivery({ signingKey, url: "https://app.example/v1/worker", body });
 * await fetch(url, { method: "POST", body, headers: { "Upstash-Signature": signature } });
 */
export async function signDelivery(options: SignDeliveryOptions): Promise<string> {
  const iat = Math.floor((options.now ?? Date.now()) / 1000);
  const claims: SignatureClaims = {
    iss: ISSUER,
    sub: options.url,
    iat,
    nbf: iat,
    exp: iat + (options.ttlSec ?? SIGNATURE_TTL_SEC),
    jti: `jwt_${base64url(crypto.getRandomValues(new Uint8Array(16)))}`,
    body: await bodyHash(options.body),
  };
  const signingInput = `${base64url(encoder.encode(JSON.stringify(JWT_HEADER)))}.${base64url(encoder.encode(JSON.stringify(claims)))}`;
  const mac = await hmac(options.signingKey, signingInput);
  return `${signingInput}.${base64url(mac)}`;
}

/** Inputs of {@link verifySignature} and {@link checkSignature}. */
export interface VerifySignatureOptions {
  /** The `Upstash-Signature` header value. */
  signature: string;
  /** Raw body, exactly as received. */
  body: string;
  /** When given, the signature's `sub` must equal it. */
  url?: string | undefined;
  currentSigningKey: string;
  /** Tried when the current key does not verify (key rotation). */
  nextSigningKey?: string | undefined;
  /**
   * Seconds of clock skew allowed on `nbf` and `exp`.
   * @default 0
   */
  clockToleranceSec?: number | undefined;
  /**
   * The receiver's time in epoch ms.
   * @default Date.now()
   */
  now?: number | undefined;
}

/** Why a signature was refused. */
export type SignatureFailure =
  | "malformed"
  | "bad-signature"
  | "wrong-issuer"
  | "expired"
  | "too-long-lived"
  | "not-yet-valid"
  | "wrong-url"
  | "body-mismatch";

/** Outcome of {@link checkSignature}. */
export type SignatureCheck =
  | { valid: true; claims: SignatureClaims; key: "current" | "next" }
  | { valid: false; reason: SignatureFailure };

/**
 * Check a delivery signature as `Receiver.verify` does, and say why it fails: the HMAC under the
 * current key, else the next key (compared in constant time); `iss`; `nbf` and `exp` (with
 * tolerance); `sub` against `url` when given; the body hash, trailing `=` ignored on both sides.
 * Stricter than jose in two ways: the algorithm must be HS256, and `exp` must be present.
 *
 * @example
 * const check = await checkSignature({ signature, body, url, currentSigningKey, nextSigningKey });
 * if (!check.valid) console.warn(`signature refused: ${check.reason}`);
 */
export async function checkSignature(options: VerifySignatureOptions): Promise<SignatureCheck> {
  const token = parseToken(options.signature);
  if (!token) return { valid: false, reason: "malformed" };

  let key: "current" | "next" | undefined;
  if (await macMatches(options.currentSigningKey, token)) key = "current";
  else if (options.nextSigningKey && (await macMatches(options.nextSigningKey, token)))
    key = "next";
  if (!key) return { valid: false, reason: "bad-signature" };

  const claims = token.claims;
  if (claims.iss !== ISSUER) return { valid: false, reason: "wrong-issuer" };
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  const tolerance = options.clockToleranceSec ?? 0;
  if (claims.nbf !== undefined && claims.nbf > now + tolerance) {
    return { valid: false, reason: "not-yet-valid" };
  }
  if (claims.exp <= now - tolerance) return { valid: false, reason: "expired" };
  if (!lifetimeWithinBounds(claims, now, tolerance))
    return { valid: false, reason: "too-long-lived" };
  if (options.url !== undefined && claims.sub !== options.url) {
    return { valid: false, reason: "wrong-url" };
  }
  const expected = await bodyHash(options.body);
  if (stripPadding(claims.body) !== stripPadding(expected)) {
    return { valid: false, reason: "body-mismatch" };
  }
  return { valid: true, claims: claims as SignatureClaims, key };
}

/**
 * True if `signature` is a valid QStash-style signature of `body` (for `url`, when given) under the
 * current or the next signing key. Never throws for a bad signature.
 *
 * @example
 * const ok = await verifySignature({
 *   signature: request.headers.get("upstash-signature") ?? "",
 *   body: await request.text(),
 *   url: request.url,
 *   currentSigningKey: env.QSTASH_CURRENT_SIGNING_KEY,
 *   nextSigningKey: env.QSTASH_NEXT_SIGNING_KEY,
 * });
 */
export async function verifySignature(options: VerifySignatureOptions): Promise<boolean> {
  return (await checkSignature(options)).valid;
}

/**
 * The {@link DeliveryToken} of a delivery signature that has been verified (this reads its claims
 * without checking the MAC): `undefined` when it has no `jti`, no `iat`, or claims a lifetime
 * longer than {@link MAX_SIGNATURE_LIFETIME_SEC}.
 *
 * @example
 * if (await transport.verify(delivery)) token = deliveryToken(delivery.headers.get("upstash-signature")!);
 */
export function deliveryToken(
  signature: string,
  options: { now?: number | undefined; clockToleranceSec?: number | undefined } = {},
): DeliveryToken | undefined {
  const token = parseToken(signature);
  if (!token) return undefined;
  const { jti, exp } = token.claims;
  if (typeof jti !== "string" || jti.length === 0 || jti.length > 256) return undefined;
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  const tolerance = options.clockToleranceSec ?? 0;
  if (!lifetimeWithinBounds(token.claims, now, tolerance)) return undefined;
  // Verification accepts the signature until `exp` plus the tolerance: its replay guard must
  // last that long.
  return { id: jti, expiresAt: (exp + tolerance) * 1000 };
}

/**
 * True when a token claims no more than the queue issues: `iat` present, `exp - iat` at most
 * {@link MAX_SIGNATURE_LIFETIME_SEC}, and `exp` no further ahead of `now` than that (plus skew).
 */
function lifetimeWithinBounds(
  claims: { iat?: number | undefined; exp: number },
  now: number,
  tolerance: number,
): boolean {
  if (typeof claims.iat !== "number") return false;
  return (
    claims.exp - claims.iat <= MAX_SIGNATURE_LIFETIME_SEC &&
    claims.exp <= now + MAX_SIGNATURE_LIFETIME_SEC + tolerance
  );
}

/** base64url SHA-256 of `body`, padded as QStash pads it. */
async function bodyHash(body: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(body));
  return base64url(new Uint8Array(digest), true);
}

async function hmac(signingKey: string, data: string): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(signingKey),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(data)));
}

interface ParsedToken {
  signingInput: string;
  mac: Uint8Array;
  claims: Partial<SignatureClaims> & { exp: number; body: string };
}

/** Split and decode a compact JWT; undefined unless it is well-formed HS256 with usable claims. */
function parseToken(signature: string): ParsedToken | undefined {
  const parts = signature.trim().split(".");
  if (parts.length !== 3) return undefined;
  const [headerPart, payloadPart, macPart] = parts as [string, string, string];
  const header = decodeJson(headerPart);
  const claims = decodeJson(payloadPart);
  const mac = base64urlDecode(macPart);
  if (!header || !claims || !mac) return undefined;
  // jose refuses extensions it does not understand; we understand none.
  if (header.alg !== "HS256" || header.crit !== undefined) return undefined;
  const { iat, nbf, exp, body, sub } = claims;
  if (iat !== undefined && typeof iat !== "number") return undefined;
  if (nbf !== undefined && typeof nbf !== "number") return undefined;
  if (typeof exp !== "number" || typeof body !== "string") return undefined;
  if (sub !== undefined && typeof sub !== "string") return undefined;
  return {
    signingInput: `${headerPart}.${payloadPart}`,
    mac,
    claims: claims as ParsedToken["claims"],
  };
}

async function macMatches(signingKey: string, token: ParsedToken): Promise<boolean> {
  if (!signingKey) return false;
  return timingSafeEqual(await hmac(signingKey, token.signingInput), token.mac);
}

function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

function decodeJson(part: string): Record<string, unknown> | undefined {
  const bytes = base64urlDecode(part);
  if (!bytes) return undefined;
  try {
    const value: unknown = JSON.parse(decoder.decode(bytes));
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function stripPadding(value: string): string {
  return value.replace(/=+$/, "");
}

function base64url(bytes: Uint8Array, padded = false): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  const encoded = btoa(binary).replaceAll("+", "-").replaceAll("/", "_");
  return padded ? encoded : stripPadding(encoded);
}

function base64urlDecode(value: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(value)) return undefined;
  try {
    const binary = atob(value.replaceAll("-", "+").replaceAll("_", "/"));
    return Uint8Array.from(binary, (char) => char.charCodeAt(0));
  } catch {
    return undefined;
  }
}
