import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { COMPATIBILITY_DATE, formatReport, planInit, runInitCommand, writePlan } from "./init.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function project(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "tickwork-init-"));
  dirs.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

const paths = (plan: ReturnType<typeof planInit>) => plan.files.map((file) => file.path);

describe("planInit", () => {
  test("cloudflare: a compatibility_date the pinned wrangler's runtime runs, the one this repository's Worker is tested with", () => {
    const plan = planInit(project({ "tsconfig.json": "{}" }), "cloudflare", {});
    const wrangler = plan.files.find((f) => f.path === "wrangler.toml")?.content ?? "";
    const date = /compatibility_date = "(\d{4}-\d{2}-\d{2})"/.exec(wrangler)?.[1];
    // The newest date the workerd binary of this repository's wrangler supports: a newer one is
    // refused at `wrangler dev` ("requires compatibility date …"). Today's date was written.
    const { compatibilityDate } = createRequire(import.meta.url)("workerd") as {
      compatibilityDate: string;
    };
    expect(date).toBe(COMPATIBILITY_DATE);
    expect(COMPATIBILITY_DATE <= compatibilityDate).toBe(true);
    expect(readFileSync(new URL("../../wrangler.toml", import.meta.url), "utf8")).toContain(
      `compatibility_date = "${COMPATIBILITY_DATE}"`,
    );
  });

  test("node, no TypeScript: .mjs handlers where dev looks first, .env.example", () => {
    const plan = planInit(project(), "node", {});
    expect(plan.typescript).toBe(false);
    expect(paths(plan)).toEqual(["src/tickwork/handlers.mjs", ".env.example"]);
    expect(plan.install).toEqual({
      runtime: ["tickwork", "hono", "zod", "@hono/node-server", "ioredis"],
      dev: [],
    });
  });

  test("a tsconfig.json (or typescript in package.json) means TypeScript, and tsx (also where Node strips types)", () => {
    const withTsconfig = planInit(project({ "tsconfig.json": "{}" }), "node", {});
    expect(paths(withTsconfig)[0]).toBe("src/tickwork/handlers.ts");
    expect(withTsconfig.install.dev).toEqual(["tsx"]);
    const pkg = JSON.stringify({ devDependencies: { typescript: "^5", tsx: "^4" } });
    const withPackage = planInit(project({ "package.json": pkg }), "node", {});
    expect(withPackage.typescript).toBe(true);
    expect(withPackage.install.dev).toEqual([]);
  });

  test("cloudflare: the Worker imports the handlers, wrangler.toml has the cron and the entry", () => {
    const dir = project({
      "tsconfig.json": "{}",
      "package.json": JSON.stringify({ name: "@acme/Jobs_API", dependencies: { hono: "^4" } }),
    });
    const plan = planInit(dir, "cloudflare", { compatibilityDate: "2026-05-01" });
    expect(paths(plan)).toEqual([
      "src/tickwork/handlers.ts",
      "src/worker.ts",
      "wrangler.toml",
      ".dev.vars.example",
    ]);
    const file = (path: string) => plan.files.find((f) => f.path === path)?.content ?? "";
    expect(file("src/worker.ts")).toContain('import { createWorker } from "tickwork/cloudflare";');
    expect(file("src/worker.ts")).toContain('import { handlers } from "./tickwork/handlers.js";');
    expect(file("src/worker.ts")).toContain("export default createWorker({ handlers });");
    const wrangler = file("wrangler.toml");
    expect(wrangler).toContain('name = "jobs-api"');
    expect(wrangler).toContain('main = "src/worker.ts"');
    expect(wrangler).toContain('compatibility_date = "2026-05-01"');
    expect(wrangler).toContain('crons = ["* * * * *"]');
    for (const secret of [
      "UPSTASH_REDIS_REST_URL",
      "QSTASH_TOKEN",
      "TICKWORK_API_KEY",
      "CRON_SECRET",
    ]) {
      expect(wrangler).toMatch(new RegExp(`^#\\s+${secret}\\s`, "m"));
      expect(file(".dev.vars.example")).toContain(`${secret}=`);
    }
    expect(plan.install.runtime).toEqual(["tickwork", "zod", "@upstash/redis", "@upstash/qstash"]);
    expect(plan.install.dev).toEqual(["wrangler", "@hono/node-server", "tsx"]);
  });

  test("vercel: src/index exports createVercelApp(process.env, { handlers }); vercel.json's cron ticks", () => {
    const plan = planInit(project(), "vercel", {});
    expect(paths(plan)).toEqual([
      "src/tickwork/handlers.mjs",
      "src/index.mjs",
      "vercel.json",
      ".env.example",
    ]);
    const entry = plan.files[1]?.content ?? "";
    expect(entry).toContain('import { createVercelApp } from "tickwork/vercel";');
    expect(entry).toContain('import { handlers } from "./tickwork/handlers.mjs";');
    expect(entry).toContain("export default createVercelApp(process.env, { handlers });");
    expect(JSON.parse(plan.files[2]?.content ?? "")).toMatchObject({
      crons: [{ path: "/v1/tick", schedule: "* * * * *" }],
    });
    expect(plan.files[3]?.content).toContain("CRON_SECRET=");
  });

  test("an existing handlers module is kept and imported, in its language", () => {
    const dir = project({ "tickwork.handlers.ts": "export const handlers = {};\n" });
    const plan = planInit(dir, "vercel", {});
    expect(plan.handlersExisted).toBe(true);
    expect(plan.handlers).toBe("tickwork.handlers.ts");
    expect(paths(plan)).toEqual(["src/index.ts", "vercel.json", ".env.example"]);
    expect(plan.files[0]?.content).toContain('from "../tickwork.handlers.js"');
  });

  test("a wrangler.jsonc is the configuration: no wrangler.toml beside it", () => {
    const dir = project({ "wrangler.jsonc": "{}" });
    const plan = planInit(dir, "cloudflare", {});
    const result = writePlan(plan);
    expect(result.skipped.map(({ file, reason }) => [file.path, reason])).toEqual([
      [
        "wrangler.toml",
        'wrangler.jsonc exists instead; check it has main = "src/worker.mjs" and the cron trigger "* * * * *"',
      ],
    ]);
    expect(result.written.map((file) => file.path)).toEqual([
      "src/tickwork/handlers.mjs",
      "src/worker.mjs",
      ".dev.vars.example",
    ]);
  });
});

describe("runInitCommand", () => {
  test("never overwrites: an existing file is skipped, said so, and left as it was", async () => {
    const dir = project({ ".env.example": "MINE=1\n" });
    const out: string[] = [];
    const code = await runInitCommand([], {
      cwd: dir,
      out: (t) => out.push(t),
    });
    expect(code).toBe(0);
    expect(readFileSync(join(dir, ".env.example"), "utf8")).toBe("MINE=1\n");
    expect(out.join("\n")).toMatch(/ {2}skipped {2}\.env\.example +it exists/);
    expect(out.join("\n")).toMatch(
      / {2}wrote {4}src\/tickwork\/handlers\.mjs +handlers: echo, email\.welcome/,
    );
  });

  test("nothing left to write: exit 1, and the report says why", async () => {
    const dir = project();
    const quiet = { cwd: dir, out: () => {} };
    expect(await runInitCommand([], quiet)).toBe(0);
    const out: string[] = [];
    expect(await runInitCommand([], { ...quiet, out: (t) => out.push(t) })).toBe(1);
    expect(out.join("\n")).toContain("Nothing written: every file exists (init never overwrites).");
  });

  test("usage mistakes exit 2 and point at the command's help; --dir is created", async () => {
    const err: string[] = [];
    const io = { cwd: project(), out: () => {}, err: (t: string) => err.push(t) };
    expect(await runInitCommand(["--platform", "lambda"], io)).toBe(2);
    expect(err).toEqual([
      'tickwork init: unknown platform "lambda" (platforms: node, cloudflare, vercel)',
      "Run `tickwork init --help` for usage.",
    ]);
    expect(await runInitCommand(["--force"], io)).toBe(2);
    expect(await runInitCommand(["--dir", "apps/jobs"], io)).toBe(0);
    expect(readFileSync(join(io.cwd, "apps/jobs/.env.example"), "utf8")).toContain("REDIS_URL=");
  });

  test("the report lists the installs still missing and the next steps", () => {
    const dir = project({
      "package.json": JSON.stringify({ dependencies: { tickwork: "^0.1", zod: "^4" } }),
    });
    const plan = planInit(dir, "node", {});
    const report = formatReport(plan, { written: plan.files, skipped: [] });
    expect(report).toContain("\n  npm install hono @hono/node-server ioredis\n");
    expect(report).toContain("\n  npx tickwork dev");
    expect(report).not.toContain("npm install -D");
  });
});
