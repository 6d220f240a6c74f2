/**
 * The `Upstash-Signature` JWT, made as QStash makes it (upstash/docs `qstash/features/security.mdx`):
 * HS256 keyed with the signing key's UTF-8 bytes; claims `iss: "Upstash"`, `sub` (the destination
 * URL), `exp` (5 minutes), `nbf`, `iat`, `jti` and `body` (base64url SHA-256 of the raw body,
 * padded with `=` as in the docs' example). Written from the docs with node:crypto, on purpose not
 * with tickwork's own signing code, so the two check each other.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";

/** What to sign. */
export interface SignInput {
  signingKey: string;
  /** The URL being called; becomes `sub`. */
  url: string;
  /** The raw body, exactly as sent. */
  body: Uint8Array;
  /** Epoch ms. @default Date.now() */
  now?: number;
}

/** The compact JWT for the `Upstash-Signature` header. */
export function signQStashJwt({ signingKey, url, body, now = Date.now() }: SignInput): string {
  const iat = Math.floor(now / 1000);
  const header = { alg: "HS256", typ: "JWT" };
  const claims = {
    iss: "Upstash",
    sub: url,
    exp: iat + 300,
    nbf: iat,
    iat,
    jti: `jwt_${randomBytes(12).toString("hex")}`,
    body: createHash("sha256")
      .update(body)
      .digest("base64")
      .replaceAll("+", "-")
      .replaceAll("/", "_"),
  };
  const input = `${encodeJson(header)}.${encodeJson(claims)}`;
  const mac = createHmac("sha256", Buffer.from(signingKey, "utf8"))
    .update(input)
    .digest("base64url");
  return `${input}.${mac}`;
}

function encodeJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value), "utf8").toString("base64url");
}
