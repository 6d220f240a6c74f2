/**
 * @module
 * Byte helpers of the webhook verifiers: strict hex and base64 decoding (never a throw: a value
 * that does not decode is `undefined`), a constant-time comparison, and HMAC through Web Crypto
 * with a small cache of imported keys. Web Crypto, `TextEncoder` and `atob` only, so it runs on
 * Node ≥ 20, Cloudflare Workers and Vercel's edge runtime alike.
 */

const encoder = new TextEncoder();

/** HMAC digests the verifiers use (Web Crypto names). */
export type HmacHash = "SHA-1" | "SHA-256" | "SHA-512";

/** Digest size in bytes of each {@link HmacHash}. */
export const DIGEST_BYTES: Record<HmacHash, number> = {
  "SHA-1": 20,
  "SHA-256": 32,
  "SHA-512": 64,
};

const HEX = /^(?:[0-9a-fA-F]{2})*$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]*={0,2}$/;

/** UTF-8 bytes of `text`. */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** `a` followed by `b`, as one new array. */
export function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** Bytes of an even-length hex string (either case), or `undefined`. */
export function decodeHex(text: string): Uint8Array | undefined {
  if (!HEX.test(text)) return undefined;
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/**
 * Bytes of a base64 string — standard or URL-safe alphabet, padded or not — or `undefined`
 * when it is not base64 (mixed alphabets, stray characters, a length no encoding produces).
 */
export function decodeBase64(text: string): Uint8Array | undefined {
  const standard = BASE64.test(text);
  if (!standard && !BASE64URL.test(text)) return undefined;
  const bare = text.replace(/=+$/, "");
  if (bare.length % 4 === 1) return undefined;
  // Padding, when present, must be exactly what the length needs.
  if (bare.length !== text.length && text.length % 4 !== 0) return undefined;
  const normal = standard ? bare : bare.replaceAll("-", "+").replaceAll("_", "/");
  try {
    const binary = atob(normal.padEnd(Math.ceil(normal.length / 4) * 4, "="));
    const out = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
    return out;
  } catch {
    return undefined;
  }
}

/**
 * True when `a` and `b` hold the same bytes. The time taken depends on the length only (which is
 * public: every signature of a scheme has the digest's length), not on where they differ.
 */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/** Most imported keys kept; the oldest goes first. A deployment has a handful of senders. */
const KEY_CACHE_SIZE = 64;
const keyCache = new Map<string, Promise<CryptoKey>>();

/**
 * The HMAC key for `keyBytes`, imported once and cached under `cacheKey` (which must name the
 * scheme, the hash and the secret: the same string always means the same key bytes).
 */
function hmacKey(cacheKey: string, keyBytes: Uint8Array, hash: HmacHash): Promise<CryptoKey> {
  const cached = keyCache.get(cacheKey);
  if (cached) return cached;
  const imported = crypto.subtle.importKey(
    "raw",
    keyBytes as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash },
    false,
    ["sign"],
  );
  // A failed import is not kept: the next call tries again (and fails the same way).
  imported.catch(() => keyCache.delete(cacheKey));
  keyCache.set(cacheKey, imported);
  if (keyCache.size > KEY_CACHE_SIZE) keyCache.delete(keyCache.keys().next().value!);
  return imported;
}

/** HMAC of `data` under `keyBytes` with `hash`; see {@link hmacKey} for `cacheKey`. */
export async function hmac(
  cacheKey: string,
  keyBytes: Uint8Array,
  hash: HmacHash,
  data: Uint8Array,
): Promise<Uint8Array> {
  const key = await hmacKey(`${hash}\u0000${cacheKey}`, keyBytes, hash);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, data as Uint8Array<ArrayBuffer>));
}
