/**
 * @module
 * {@link webhookVerifierSchema}: the zod schema of a {@link WebhookVerifier} in configuration.
 * Strict objects, bounded everywhere: 1–8 secrets of 1–512 characters, RFC 9110 header names,
 * tolerances of 1 s – 1 day. A Standard Webhooks secret must base64-decode (after its optional
 * `whsec_` prefix) to a usable key, so a mistyped secret fails at startup, not per delivery.
 */
import * as z from "zod";
import { decodeBase64 } from "./bytes.ts";
import type { WebhookVerifier } from "./types.ts";

/** Most secrets one verifier holds (a rotation needs two or three). */
export const MAX_WEBHOOK_SECRETS = 8;
/** Longest secret, in characters. */
export const MAX_WEBHOOK_SECRET_LENGTH = 512;
/** Largest `toleranceSec`: one day. */
export const MAX_WEBHOOK_TOLERANCE_SEC = 86_400;

/** A header name: an RFC 9110 token, at most 128 characters. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;

const headerName = z
  .string()
  .regex(TOKEN, "must be a header name (an RFC 9110 token, 1–128 chars)");

/** Printable ASCII, no control characters: what fits in a header or signed content alike. */
const PRINTABLE = /^[\x20-\x7e]*$/;

const secret = z
  .string()
  .min(1, "a secret must not be empty")
  .max(MAX_WEBHOOK_SECRET_LENGTH, `a secret is at most ${MAX_WEBHOOK_SECRET_LENGTH} chars`);

const secrets = z
  .array(secret)
  .min(1, "at least one secret")
  .max(MAX_WEBHOOK_SECRETS, `at most ${MAX_WEBHOOK_SECRETS} secrets`);

const tolerance = z.exactOptional(z.number().int().min(1).max(MAX_WEBHOOK_TOLERANCE_SEC));

/**
 * The key bytes of a Standard Webhooks secret: base64 after an optional `whsec_` prefix, as the
 * reference library reads it; `undefined` when that does not decode to at least one byte.
 */
export function standardWebhookKey(secret: string): Uint8Array | undefined {
  const key = decodeBase64(secret.startsWith("whsec_") ? secret.slice(6) : secret);
  return key && key.length > 0 ? key : undefined;
}

const standardSecrets = z
  .array(
    secret.refine(
      (s) => standardWebhookKey(s) !== undefined,
      "must be whsec_ followed by base64 (the secret the sender shows)",
    ),
  )
  .min(1, "at least one secret")
  .max(MAX_WEBHOOK_SECRETS, `at most ${MAX_WEBHOOK_SECRETS} secrets`);

const schemas = [
  z.strictObject({
    scheme: z.literal("standard"),
    secrets: standardSecrets,
    toleranceSec: tolerance,
  }),
  z.strictObject({ scheme: z.literal("stripe"), secrets, toleranceSec: tolerance }),
  z.strictObject({ scheme: z.literal("github"), secrets }),
  z.strictObject({ scheme: z.literal("slack"), secrets, toleranceSec: tolerance }),
  z.strictObject({ scheme: z.literal("shopify"), secrets }),
  z.strictObject({
    scheme: z.literal("hmac"),
    secrets,
    algorithm: z.exactOptional(z.enum(["SHA-256", "SHA-1", "SHA-512"])),
    header: headerName,
    encoding: z.exactOptional(z.enum(["hex", "base64"])),
    prefix: z.exactOptional(z.string().max(64).regex(PRINTABLE, "must be printable ASCII")),
    timestampHeader: z.exactOptional(headerName),
    toleranceSec: tolerance,
    separator: z.exactOptional(z.string().max(16).regex(PRINTABLE, "must be printable ASCII")),
    idHeader: z.exactOptional(headerName),
  }),
] as const;

/**
 * zod schema of a {@link WebhookVerifier}: a union on `scheme` of strict objects (an unknown
 * key, `__proto__` included, is an issue). Bounds: 1–{@link MAX_WEBHOOK_SECRETS} secrets of
 * 1–{@link MAX_WEBHOOK_SECRET_LENGTH} chars; header names are RFC 9110 tokens; `toleranceSec`
 * an integer 1–{@link MAX_WEBHOOK_TOLERANCE_SEC}; `prefix` (≤ 64) and `separator` (≤ 16)
 * printable ASCII.
 *
 * @example
 * webhookVerifierSchema.parse({ scheme: "github", secrets: ["It's a Secret to Everybody"] });
 */
export const webhookVerifierSchema: z.ZodType<WebhookVerifier> = z.discriminatedUnion(
  "scheme",
  schemas,
);
