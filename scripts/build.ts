/**
 * `npm run build`: compile src/ into dist/ (ESM JavaScript, declarations, source maps) with tsc.
 *
 * tsc rewrites the `.ts` extensions of relative imports in the JavaScript it emits
 * (`rewriteRelativeImportExtensions`) but leaves them in declaration files, where a consumer's
 * TypeScript reads them as imports of sources; so this step rewrites them there as well.
 *
 * `--no-check`: emit without type-checking (`tsc --noCheck`), for `npm test`, which type-checks
 * the same sources in a step of its own (scripts/test.ts). The output differs from a checked
 * build only in the order some inferred object types list their members.
 *
 * Usage: `npx tsx scripts/build.ts [--no-check]`
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");

rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const noCheck = process.argv.includes("--no-check") ? ["--noCheck"] : [];
execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), ...noCheck], {
  cwd: root,
  stdio: "inherit",
});

/** `from "./x.ts"` / `import("../y.ts")` in a declaration file → `.js`. */
const RELATIVE_TS = /((?:from|import)\s*\(?\s*["'])(\.{1,2}\/[^"']*?)\.ts(["'])/g;
let files = 0;
for (const entry of readdirSync(dist, { recursive: true, encoding: "utf8" })) {
  if (!entry.endsWith(".d.ts")) continue;
  const path = join(dist, entry);
  const text = readFileSync(path, "utf8");
  const rewritten = text.replace(RELATIVE_TS, "$1$2.js$3");
  if (rewritten !== text) writeFileSync(path, rewritten);
  files++;
}
console.log(`build: dist/ written (${files} declaration files)`);
