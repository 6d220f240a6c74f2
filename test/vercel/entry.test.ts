/**
 * Vercel's zero-config Hono support deploys a Hono app only from an entry it recognises (Vercel's
 * Hono docs: a file named `app`, `index` or `server`, at the project's root or under `src/`, that
 * imports the `hono` package); a project without one fails its build ("No entrypoint found which
 * imports hono"). The README's Vercel entry, the one `tickwork init --platform vercel` writes and
 * the repository's example (`functions/vercel/index.ts`) must each be such a file.
 */
import { readFileSync } from "node:fs";
import { expect, test } from "vitest";
import { vercelEntryTemplate } from "../../src/cli/templates.ts";
import { readmeFiles } from "../support/consumer-app.ts";

/** Whether Vercel's Hono builder takes `path` with `source` as the app's entry. */
function isVercelHonoEntry(path: string, source: string): boolean {
  const named = /^(?:src\/)?(?:app|index|server)\.(?:js|cjs|mjs|ts|cts|mts)$/.test(path);
  const importsHono = /(?:from|require|import)\s*(?:\(\s*)?["']hono["']/.test(source);
  return named && importsHono;
}

test("the rule refuses what the builder refuses", () => {
  const entry =
    'import { createVercelApp } from "tickwork/vercel";\nexport default createVercelApp(process.env, { handlers });\n';
  expect(isVercelHonoEntry("src/index.ts", entry)).toBe(false);
  expect(isVercelHonoEntry("api/index.ts", `import "hono";\n${entry}`)).toBe(false);
  expect(isVercelHonoEntry("src/index.ts", `import "hono/vercel";\n${entry}`)).toBe(false);
  expect(isVercelHonoEntry("src/index.ts", `import "hono";\n${entry}`)).toBe(true);
});

test("the README's Vercel entry is one Vercel deploys", () => {
  const vercel = Object.entries(readmeFiles()).filter(([, source]) =>
    source.includes('from "tickwork/vercel"'),
  );
  expect(vercel.map(([path]) => path)).toEqual(["src/index.ts"]);
  for (const [path, source] of vercel) expect(isVercelHonoEntry(path, source)).toBe(true);
});

test("the entry `tickwork init --platform vercel` writes is one Vercel deploys", () => {
  for (const path of ["src/index.ts", "src/index.js"]) {
    expect(isVercelHonoEntry(path, vercelEntryTemplate("./tickwork/handlers.js"))).toBe(true);
  }
});

test("the repository's example entry, as src/index.ts of a Vercel project, is one Vercel deploys", () => {
  const source = readFileSync(new URL("../../functions/vercel/index.ts", import.meta.url), "utf8");
  expect(source).toContain("`src/index.ts` of a Vercel project");
  expect(isVercelHonoEntry("src/index.ts", source)).toBe(true);
});
