/**
 * @module
 * Replies as JSON. Redis's strings are bytes: as JSON text they are read as UTF-8 (a byte that is
 * not UTF-8 becomes U+FFFD, as in Upstash's JSON answers). `Upstash-Encoding: base64` asks for the
 * base64 of the bytes instead: `@upstash/redis` asks for it by default and base64-decodes the
 * strings of every answer. Its decoder keeps a top-level `"OK"` as is but decodes `"OK"` inside an
 * array (into garbage), so the only answer it reads right is every string encoded, at every depth,
 * `"OK"` included. Numbers and nil are not strings and pass through; error texts are never encoded.
 */
import type { Reply } from "./execute.ts";

/** A reply as JSON holds it: strings, integers, nil, and arrays of those. */
export type JsonReply = string | number | null | JsonReply[];

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
 * `reply` as JSON: every string, at every depth, as UTF-8 text, or with `base64` as the base64 of
 * its bytes (a text the bridge answers itself, of its UTF-8 bytes).
 *
 * @example
 * encodeReply(["OK", 1, null], true); // ["T0s=", 1, null]
 * encodeReply(Buffer.from([0xff]), true); // "/w=="
 */
export function encodeReply(reply: Reply, base64: boolean): JsonReply {
  if (typeof reply === "string") {
    return base64 ? Buffer.from(reply, "utf8").toString("base64") : reply;
  }
  if (reply instanceof Uint8Array) {
    const bytes = Buffer.from(reply.buffer, reply.byteOffset, reply.byteLength);
    return bytes.toString(base64 ? "base64" : "utf8");
  }
  if (Array.isArray(reply)) return reply.map((item) => encodeReply(item, base64));
  return reply;
}
