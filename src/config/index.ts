/**
 * @module
 * `tickwork/config`: tenants, API keys (stored hashed), scopes and manifests; CORS; the
 * degradation controller — written in code with {@link defineConfig}, or as a JSON file named by
 * `TICKWORK_CONFIG` (schema: `schema/tickwork.config.schema.json`). Runs on Node and Workers.
 */
export { ConfigValidationError, defineConfig, hasKeys, parseConfig } from "./define.ts";
export { compileGlobs } from "./glob.ts";
export { generateKey, hashKey, KeyRing } from "./keys.ts";
export { type ManifestRules, manifestRules, quotaCheck, quotaWindows } from "./manifest.ts";
export {
  type ApiKeyConfig,
  type Config,
  type CorsConfig,
  configSchema,
  type DegradationConfig,
  type Manifest,
  type QuotaLimits,
  type TenantConfig,
} from "./schema.ts";
export { hasScope, SCOPES, type Scope } from "./scopes.ts";
