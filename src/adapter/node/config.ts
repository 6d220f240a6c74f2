/**
 * @module
 * `TICKWORK_CONFIG`: the configuration (tenants, CORS, degradation) as a JSON file — or, where a
 * platform has no files to ship (a Vercel or Workers variable), the JSON itself. Validated against
 * the published schema (`schema/tickwork.config.schema.json`); every problem is named.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type Config, ConfigValidationError, parseConfig } from "../../config/index.ts";
import { ConfigError } from "./errors.ts";

/**
 * The configuration `TICKWORK_CONFIG` names: a path to a JSON file, or JSON text (starting
 * with `{`).
 * @throws ConfigError when the file cannot be read or the configuration is invalid.
 *
 * @example
 * const config = loadConfig(process.env.TICKWORK_CONFIG!); // e.g. "./tickwork.config.json"
 */
export function loadConfig(value: string): Config {
  const text = value.trim();
  if (text.startsWith("{")) return parse(text, "TICKWORK_CONFIG");
  const path = resolve(text);
  let content: string;
  try {
    content = readFileSync(path, "utf8");
  } catch (error) {
    throw new ConfigError(
      `TICKWORK_CONFIG names ${path}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}). ` +
        "Set it to the path of a JSON file (schema: schema/tickwork.config.schema.json) or to the JSON itself.",
      { variable: "TICKWORK_CONFIG", cause: error },
    );
  }
  return parse(content, path);
}

function parse(text: string, source: string): Config {
  try {
    return parseConfig(text, source);
  } catch (error) {
    if (error instanceof ConfigValidationError) {
      throw new ConfigError(error.message, {
        variable: "TICKWORK_CONFIG",
        field: error.field,
        cause: error,
      });
    }
    throw error;
  }
}
