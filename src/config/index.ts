/**
 * @module
 * `tickwork/config`: tenants, API keys (stored hashed), scopes and manifests; CORS; the
 * degradation controller — written in code with {@link defineConfig}, or as a JSON file named by
 * `TICKWORK_CONFIG` (schema: `schema/tickwork.config.schema.json`). Runs on Node and Workers.
 */

// Manifests and scopes are the domain's (src/core), where the engine uses them too.
export { compileGlobs } from "../core/glob.ts";
export {
  type ManifestRules,
  manifestRules,
  quotaCheck,
  quotaWindows,
} from "../core/manifest.ts";
export { hasScope, SCOPES, type Scope } from "../core/scopes.ts";
export { ConfigValidationError, defineConfig, hasKeys, parseConfig } from "./define.ts";
export { generateKey, hashKey, KeyRing } from "./keys.ts";
export {
  type ApiKeyConfig,
  type Config,
  type CorsConfig,
  configSchema,
  type DegradationConfig,
  type Manifest,
  type QuotaLimits,
  type RetentionConfig,
  type TenantConfig,
} from "./schema.ts";
export {
  isWebhookName,
  MAX_WEBHOOK_ENDPOINTS,
  resolveWebhooks,
  type WebhookEndpoint,
  type WebhookEndpointConfig,
  type WebhooksConfig,
  webhookEndpointSchema,
  webhooksSchema,
} from "./webhooks.ts";
