/**
 * @module
 * `defineConfig` (in code) and `parseConfig` (a JSON file's text, or any value): both validate
 * against {@link configSchema} and name every problem with its path.
 */
import { TickworkConfigError } from "../core/errors.ts";
import { type Config, configSchema } from "./schema.ts";
import { protoKeyIssues } from "./webhooks.ts";

/**
 * The configuration is invalid; `issues` lists each problem with its path, `field` is the first
 * one's (a {@link TickworkConfigError}).
 */
export class ConfigValidationError extends TickworkConfigError {
  override name = "ConfigValidationError";
  readonly issues: readonly { path: string; message: string }[];

  constructor(
    source: string,
    issues: readonly { path: string; message: string }[],
    options?: { variable?: string | undefined; cause?: unknown },
  ) {
    const lines = issues.map((i) => `  ${i.path || "(root)"}: ${i.message}`);
    super(`${source} is not a valid tickwork configuration:\n${lines.join("\n")}`, {
      ...options,
      field: issues[0]?.path || undefined,
    });
    this.issues = issues;
  }
}

/**
 * Check a configuration written in code and return it as given (typed).
 * @throws ConfigValidationError naming every problem.
 *
 * @example
 * export const config = defineConfig({
 *   tenants: [{
 *     id: "acme",
 *     keys: [{ id: "ci", hash: "sha256:…", scopes: ["jobs:write", "read"] }],
 *     manifest: { submit: ["email.*"], quotas: { submit: { perMinute: 100 } } },
 *   }],
 *   cors: { origins: ["https://app.acme.com"] },
 * });
 */
export function defineConfig(config: Config): Config {
  parseConfig(config, "defineConfig()");
  return config;
}

/**
 * Validate `value` (parsed JSON, or JSON text) as a configuration; `source` names it in errors
 * (a file path, an environment variable).
 * @throws ConfigValidationError naming every problem.
 *
 * @example
 * const config = parseConfig(readFileSync(path, "utf8"), path);
 */
export function parseConfig(value: unknown, source = "the configuration"): Config {
  let data = value;
  if (typeof value === "string") {
    try {
      data = JSON.parse(value);
    } catch (error) {
      // Where it broke, never the text around it: a configuration holds secrets, and Node's
      // message quotes a snippet of the input.
      const at = /position (\d+)/.exec((error as Error).message)?.[1];
      throw new ConfigValidationError(source, [
        {
          path: "",
          message: at === undefined ? "not JSON" : `not JSON (at character ${at})`,
        },
      ]);
    }
  }
  const result = configSchema.safeParse(data);
  const issues = [...protoKeyIssues(data), ...(result.success ? [] : result.error.issues)].map(
    (i) => ({ path: i.path.map(String).join("."), message: i.message }),
  );
  if (result.success && issues.length === 0) return result.data;
  throw new ConfigValidationError(source, issues);
}

/** True when the configuration has at least one API key. */
export function hasKeys(config: Config | undefined): boolean {
  return (config?.tenants ?? []).some((tenant) => tenant.keys.length > 0);
}
