/**
 * @module
 * Inbound-webhook signature verification: {@link verifyWebhook}, its settings
 * ({@link WebhookVerifier}, validated by {@link webhookVerifierSchema}) and each sender's retry
 * window ({@link SENDER_RETRY_WINDOW_MS}). Pure, Web Crypto only. See docs/webhooks.md.
 */
export {
  MAX_WEBHOOK_SECRET_LENGTH,
  MAX_WEBHOOK_SECRETS,
  MAX_WEBHOOK_TOLERANCE_SEC,
  webhookVerifierSchema,
} from "./schema.ts";
export * from "./types.ts";
export {
  MAX_WEBHOOK_EVENT_ID_CHARS,
  MAX_WEBHOOK_HEADER_CHARS,
  MAX_WEBHOOK_SIGNATURES,
  verifyWebhook,
} from "./verify.ts";
