/**
 * @module
 * `tickwork init`: add tickwork to an existing project — an example handlers module where
 * `tickwork dev` looks first, and the entry and configuration of one platform (Node, Cloudflare
 * Workers or Vercel). It never overwrites a file: what exists is skipped, and said so.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { parseArgs } from "node:util";
import { findHandlersModule, HANDLERS_LOCATIONS } from "./handlers-module.ts";
import { INIT_HELP } from "./help.ts";
import {
  CLOUDFLARE_DEV_VARS_EXAMPLE,
  cloudflareEntryTemplate,
  EXAMPLE_HANDLERS,
  handlersTemplate,
  NODE_ENV_EXAMPLE,
  PLATFORMS,
  type Platform,
  VERCEL_ENV_EXAMPLE,
  VERCEL_JSON,
  vercelEntryTemplate,
  wranglerTemplate,
} from "./templates.ts";

/** A file `init` means to write, relative to the project directory. */
export interface PlannedFile {
  /** Relative path, with `/` separators. */
  path: string;
  content: string;
  /** Shown next to the path once written, e.g. the handlers it defines. */
  about?: string;
  /**
   * Why this file may already be there, or another one in its place: shown when it is skipped.
   * @default "it exists"
   */
  skipHint?: string;
  /** Skip it even though `path` does not exist, for this reason (another file plays its part). */
  skipReason?: string;
}

/** What `init` decided for a project. */
export interface InitPlan {
  dir: string;
  platform: Platform;
  /** Whether the handlers (and so the entry) are TypeScript. */
  typescript: boolean;
  /** The handlers module the entry imports, relative; an existing one is kept. */
  handlers: string;
  /** True when {@link InitPlan.handlers} existed before. */
  handlersExisted: boolean;
  files: PlannedFile[];
  /** `npm install` and `npm install -D` arguments still missing from package.json. */
  install: { runtime: string[]; dev: string[] };
  /** What to do next, one command or sentence a line. */
  next: string[];
}

/** Inputs of {@link planInit} besides the directory and platform, injectable for tests. */
export interface PlanOptions {
  /**
   * The `compatibility_date` of `wrangler.toml` (`YYYY-MM-DD`).
   * @default {@link COMPATIBILITY_DATE}
   */
  compatibilityDate?: string;
}

const RUNTIME_PEERS: Record<Platform, string[]> = {
  node: ["tickwork", "hono", "zod", "@hono/node-server", "ioredis"],
  cloudflare: ["tickwork", "hono", "zod", "@upstash/redis", "@upstash/qstash"],
  vercel: ["tickwork", "hono", "zod", "@upstash/redis", "@upstash/qstash"],
};

/** `tickwork dev` runs on Node, so the platforms without a Node server need its adapter to try it. */
const DEV_PEERS: Record<Platform, string[]> = {
  node: [],
  cloudflare: ["wrangler", "@hono/node-server"],
  vercel: ["@hono/node-server"],
};

/** Wrangler's configuration files; the one init writes first. */
const WRANGLER_CONFIGS = ["wrangler.toml", "wrangler.jsonc", "wrangler.json"];

interface PackageJson {
  name?: unknown;
  dependencies?: Record<string, unknown>;
  devDependencies?: Record<string, unknown>;
  peerDependencies?: Record<string, unknown>;
}

/**
 * Decide what `init` writes into `dir` for `platform`, without touching the disk beyond reading:
 * the handlers module (unless one exists where `tickwork dev` looks), the platform's files, the
 * packages still to install and the next steps.
 *
 * @example
 * const plan = planInit("/app", "cloudflare", {});
 * plan.files.map((f) => f.path); // ["src/tickwork/handlers.ts", "src/worker.ts", "wrangler.toml", ".dev.vars.example"]
 */
export function planInit(dir: string, platform: Platform, options: PlanOptions): InitPlan {
  const pkg = readPackageJson(dir);
  const existing = findHandlersModule(dir);
  const typescript = existing ? /\.m?ts$/.test(existing) : usesTypeScript(dir, pkg);
  const handlersAbs =
    existing ?? join(dir, `${HANDLERS_LOCATIONS[0]}${typescript ? ".ts" : ".mjs"}`);
  const handlers = toPosix(relative(dir, handlersAbs));
  const files: PlannedFile[] = [];
  if (!existing) {
    files.push({
      path: handlers,
      content: handlersTemplate(),
      about: `handlers: ${EXAMPLE_HANDLERS.join(", ")}`,
    });
  }
  const ext = typescript ? ".ts" : ".mjs";
  const next = ["npx tickwork dev   # then paste the curl lines it prints"];

  if (platform === "node") {
    files.push({ path: ".env.example", content: NODE_ENV_EXAMPLE });
    next.push(
      "production: REDIS_URL=redis://… TICKWORK_API_KEY=… npx tickwork start   (.env.example lists the settings)",
    );
  } else if (platform === "cloudflare") {
    const entry = `src/worker${ext}`;
    const specifier = importSpecifier(entry, handlers, typescript);
    files.push({
      path: entry,
      content: cloudflareEntryTemplate(specifier),
      about: "the Worker: fetch (the API) and scheduled (the tick)",
      skipHint:
        "it exists; the Worker's default export should be createWorker({ handlers }) from tickwork/cloudflare",
    });
    // A wrangler.jsonc (or .json) is the configuration already: a wrangler.toml beside it would
    // be a second one.
    const otherConfig = WRANGLER_CONFIGS.slice(1).find((name) => existsSync(join(dir, name)));
    const check = `check it has main = "${entry}" and the cron trigger "* * * * *"`;
    files.push({
      path: "wrangler.toml",
      content: wranglerTemplate(
        workerName(dir, pkg),
        entry,
        options.compatibilityDate ?? COMPATIBILITY_DATE,
      ),
      about: 'the Worker, its "* * * * *" cron trigger, vars and secrets',
      skipHint: `it exists; ${check}`,
      ...(otherConfig ? { skipReason: `${otherConfig} exists instead; ${check}` } : {}),
    });
    files.push({ path: ".dev.vars.example", content: CLOUDFLARE_DEV_VARS_EXAMPLE });
    next.push(
      "cp .dev.vars.example .dev.vars   # fill in Upstash and QStash, then: npx wrangler dev",
      "npx wrangler secret put UPSTASH_REDIS_REST_URL   # and the other secrets wrangler.toml lists",
      "npx wrangler deploy",
    );
  } else {
    const entry = `src/index${ext}`;
    files.push({
      path: entry,
      content: vercelEntryTemplate(importSpecifier(entry, handlers, typescript)),
      about: "the app Vercel runs (its default export)",
      skipHint:
        "it exists; Vercel runs its default export: make it createVercelApp(process.env, { handlers }) from tickwork/vercel",
    });
    files.push({
      path: "vercel.json",
      content: VERCEL_JSON,
      about: "Vercel Cron calls /v1/tick every minute",
      skipHint: 'it exists; add "crons": [{ "path": "/v1/tick", "schedule": "* * * * *" }]',
    });
    files.push({ path: ".env.example", content: VERCEL_ENV_EXAMPLE });
    next.push(
      "set the variables .env.example lists in the Vercel project's Environment Variables",
      "npx vercel deploy",
    );
  }

  const has = (name: string) =>
    [pkg?.dependencies, pkg?.devDependencies, pkg?.peerDependencies].some(
      (deps) => deps !== undefined && typeof deps === "object" && name in deps,
    );
  const dev = [...DEV_PEERS[platform]];
  // TypeScript handlers load through tsx, also where Node strips types itself: its stripping
  // follows the package's module type, maps no `./x.js` import to `./x.ts` and refuses enums
  // (`tickwork dev` prefers the project's tsx; src/cli/handlers-module.ts).
  if (typescript) dev.push("tsx");
  return {
    dir,
    platform,
    typescript,
    handlers,
    handlersExisted: existing !== undefined,
    files,
    install: {
      runtime: RUNTIME_PEERS[platform].filter((name) => !has(name)),
      dev: dev.filter((name) => !has(name)),
    },
    next,
  };
}

/** What {@link writePlan} did with each planned file. */
export interface WriteResult {
  written: PlannedFile[];
  skipped: Array<{ file: PlannedFile; reason: string }>;
}

/**
 * Write the plan's files, each only if it does not exist (checked by the write itself, so a file
 * that appears meanwhile is not overwritten either).
 */
export function writePlan(plan: InitPlan): WriteResult {
  const result: WriteResult = { written: [], skipped: [] };
  for (const file of plan.files) {
    const path = join(plan.dir, file.path);
    if (file.skipReason !== undefined) {
      result.skipped.push({ file, reason: file.skipReason });
      continue;
    }
    try {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, file.content, { flag: "wx" });
      result.written.push(file);
    } catch (error) {
      if ((error as { code?: unknown }).code !== "EEXIST") throw error;
      result.skipped.push({ file, reason: file.skipHint ?? "it exists" });
    }
  }
  return result;
}

/**
 * The report: what was written and skipped, then what to install and run.
 *
 * @example
 * console.log(formatReport(plan, writePlan(plan)));
 */
export function formatReport(plan: InitPlan, result: WriteResult): string {
  const width = Math.max(...plan.files.map((file) => file.path.length), plan.handlers.length);
  const lines = [
    `tickwork init: ${plan.platform}, ${plan.typescript ? "TypeScript" : "JavaScript"}, in ${plan.dir}`,
    "",
  ];
  if (plan.handlersExisted) {
    lines.push(
      `  kept     ${plan.handlers.padEnd(width)}  the handlers module tickwork dev finds first`,
    );
  }
  for (const file of result.written) {
    lines.push(`  wrote    ${file.path.padEnd(width)}  ${file.about ?? ""}`.trimEnd());
  }
  for (const { file, reason } of result.skipped) {
    lines.push(`  skipped  ${file.path.padEnd(width)}  ${reason}`);
  }
  lines.push("");
  if (result.written.length === 0) {
    lines.push("Nothing written: every file exists (init never overwrites).", "");
  }
  lines.push("Next steps:");
  if (plan.install.runtime.length > 0)
    lines.push(`  npm install ${plan.install.runtime.join(" ")}`);
  if (plan.install.dev.length > 0) lines.push(`  npm install -D ${plan.install.dev.join(" ")}`);
  for (const step of plan.next) lines.push(`  ${step}`);
  lines.push("");
  return lines.join("\n");
}

/** Where the command reads and writes; injectable for tests. */
export interface InitIo {
  /** @default process.cwd() */
  cwd?: string;
  /** @default console.log */
  out?: (text: string) => void;
  /** @default console.error */
  err?: (text: string) => void;
}

/**
 * Run `tickwork init [--platform node|cloudflare|vercel] [--dir <path>]`. Resolves with the exit
 * code: 0 when a file was written, 1 when every file already existed, 2 for a usage mistake.
 *
 * @example
 * process.exitCode = await runInitCommand(["--platform", "vercel"]);
 */
export async function runInitCommand(argv: string[], io: InitIo = {}): Promise<number> {
  const out = io.out ?? ((text: string) => console.log(text));
  const err = io.err ?? ((text: string) => console.error(text));
  let values: { platform?: string; dir?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        platform: { type: "string" },
        dir: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    err(`tickwork init: ${(error as Error).message}`);
    err("Run `tickwork init --help` for usage.");
    return 2;
  }
  if (values.help) {
    out(INIT_HELP);
    return 0;
  }
  const platform = values.platform ?? "node";
  if (!(PLATFORMS as readonly string[]).includes(platform)) {
    err(`tickwork init: unknown platform "${platform}" (platforms: ${PLATFORMS.join(", ")})`);
    err("Run `tickwork init --help` for usage.");
    return 2;
  }
  const dir = resolve(io.cwd ?? process.cwd(), values.dir ?? ".");
  const plan = planInit(dir, platform as Platform, {});
  const result = writePlan(plan);
  out(formatReport(plan, result));
  return result.written.length > 0 ? 0 : 1;
}

function readPackageJson(dir: string): PackageJson | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as PackageJson;
  } catch {
    return undefined;
  }
}

/** A tsconfig.json, or TypeScript among the project's packages. */
function usesTypeScript(dir: string, pkg: PackageJson | undefined): boolean {
  if (existsSync(join(dir, "tsconfig.json"))) return true;
  if (existsSync(join(dir, "node_modules", "typescript", "package.json"))) return true;
  return [pkg?.dependencies, pkg?.devDependencies].some(
    (deps) => deps !== undefined && typeof deps === "object" && "typescript" in deps,
  );
}

/**
 * The specifier `from` (a file) imports `to` (a file) by, both relative to the project. From
 * TypeScript a `.ts` module is named `.js`: the specifier every TypeScript resolution mode, esbuild
 * (wrangler) and Vercel's build all map to the source.
 */
function importSpecifier(from: string, to: string, typescript: boolean): string {
  let specifier = toPosix(relative(dirname(from), to));
  if (!specifier.startsWith(".")) specifier = `./${specifier}`;
  return typescript ? specifier.replace(/\.ts$/, ".js").replace(/\.mts$/, ".mjs") : specifier;
}

/** A Worker name from the package name (without scope) or the directory: [a-z0-9-], ≤ 63. */
function workerName(dir: string, pkg: PackageJson | undefined): string {
  const raw = typeof pkg?.name === "string" ? pkg.name.replace(/^@[^/]+\//, "") : basename(dir);
  const name = raw
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 63)
    .replace(/-+$/, "");
  return name || "tickwork";
}

/**
 * The `compatibility_date` `init` writes: the one this release's Worker entry is tested with (the
 * repository's `wrangler.toml`, the README's samples). Today's date, written before, is newer
 * than the runtime of a wrangler that is not the newest: `wrangler dev` refused to start it
 * ("requires compatibility date …, but the newest date supported by this server binary is …").
 */
export const COMPATIBILITY_DATE = "2026-04-01";

function toPosix(path: string): string {
  return path.split(sep).join("/");
}
