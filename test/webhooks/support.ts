/**
 * Shared by the webhook verifier tests: a request from a body and headers, a body with one byte
 * changed, an independent HMAC (`node:crypto`), and the refusal check.
 */
import { createHmac } from "node:crypto";
import { expect } from "vitest";
import type { VerifyResult } from "../../src/core/index.ts";

export const encode = (text: string) => new TextEncoder().encode(text);
export const NOW_MS = Date.now();
export const NOW = Math.floor(NOW_MS / 1000);

/** A request with `body` and `headers`. */
export function request(body: string | Uint8Array, headers: Record<string, string>) {
  return { body: typeof body === "string" ? encode(body) : body, headers: new Headers(headers) };
}

/** `body` with one byte changed (the last one, flipped in its lowest bit). */
export function tampered(body: string): Uint8Array {
  const bytes = encode(body);
  bytes[bytes.length - 1]! ^= 1;
  return bytes;
}

/** Expects a refusal for `reason`, with a detail. */
export function refused(result: VerifyResult, reason: string) {
  expect(result).toMatchObject({ ok: false, reason });
  expect((result as { detail: string }).detail).toEqual(expect.any(String));
}

/** Hex HMAC of `data` under `secret`, by `node:crypto`. */
export const hmacHex = (secret: string, data: string, alg = "sha256") =>
  createHmac(alg, secret).update(data).digest("hex");
