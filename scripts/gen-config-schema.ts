/**
 * @module
 * Writes `schema/tickwork.config.schema.json`, the published JSON schema of the configuration,
 * from the zod schema in `src/config/schema.ts` (then formats it with Biome, like every file here).
 * `--check` fails when the file does not hold that schema (a test does the same check).
 *
 * Usage: `npx tsx scripts/gen-config-schema.ts [--check]`
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { CONFIG_SCHEMA_FILE, configJsonSchemaText } from "../src/config/json-schema.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const file = join(root, CONFIG_SCHEMA_FILE);
const text = configJsonSchemaText();
if (process.argv.includes("--check")) {
  let current: unknown;
  try {
    current = JSON.parse(readFileSync(file, "utf8"));
  } catch {}
  if (!isDeepStrictEqual(current, JSON.parse(text))) {
    console.error(`${CONFIG_SCHEMA_FILE} is out of date: run npx tsx scripts/gen-config-schema.ts`);
    process.exit(1);
  }
} else {
  writeFileSync(file, text);
  execFileSync(join(root, "node_modules/.bin/biome"), ["format", "--write", file], { cwd: root });
  console.log(`wrote ${CONFIG_SCHEMA_FILE}`);
}
