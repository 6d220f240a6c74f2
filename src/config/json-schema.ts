/**
 * @module
 * The published JSON schema of the configuration file, generated from the zod schema so the two
 * cannot drift (a test compares it with `schema/tickwork.config.schema.json`).
 */
import * as z from "zod";
import { configSchema } from "./schema.ts";

/** Where the schema is published, relative to the package root. */
export const CONFIG_SCHEMA_FILE = "schema/tickwork.config.schema.json";

/**
 * The configuration's JSON schema (draft 2020-12), as the file holds it.
 *
 * @example
 * writeFileSync("schema/tickwork.config.schema.json", configJsonSchemaText());
 */
export function configJsonSchemaText(): string {
  const schema = z.toJSONSchema(configSchema, { target: "draft-2020-12", io: "input" });
  const published = {
    $schema: schema.$schema,
    title: "tickwork configuration",
    description:
      "Tenants with hashed API keys, scopes and manifests; CORS; the degradation controller; " +
      "what the store retains. " +
      "Pass it to defineConfig() or name the file with TICKWORK_CONFIG.",
    ...Object.fromEntries(Object.entries(schema).filter(([key]) => key !== "$schema")),
  };
  return `${JSON.stringify(published, null, 2)}\n`;
}
