/**
 * @module
 * `Upstash-Encoding: base64`: `@upstash/redis` asks for it by default and base64-decodes the
 * strings of every answer. Its decoder keeps a top-level `"OK"` as is but decodes `"OK"` inside an
 * array (into garbage), so the only answer it reads right is every string encoded, at every depth,
 * `"OK"` included. Numbers and nil are not strings and pass through; error texts are never encoded.
 */
import type { Reply } from "./execute.ts";

/**
 * Whether the request asks for base64 answers (`Upstash-Encoding: base64`).
 *
 * @example
 * wantsBase64(request.headers.get("upstash-encoding")); // true for "base64"
 */
export function wantsBase64(header: string | null | undefined): boolean {
  return (header ?? "").split(",").some((value) => value.trim().toLowerCase() === "base64");
}

/**
 * `reply` with every string, at every depth, replaced by the base64 of its UTF-8 bytes.
 *
 * @example
 * encodeBase64(["OK", 1, null]); // ["T0s=", 1, null]
 */
export function encodeBase64(reply: Reply): Reply {
  if (typeof reply === "string") return Buffer.from(reply, "utf8").toString("base64");
  if (Array.isArray(reply)) return reply.map(encodeBase64);
  return reply;
}
