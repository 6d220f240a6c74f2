/**
 * `tickwork init` and `tickwork dev` in a user's project, as real processes: the compiled CLI
 * (`bin/tickwork.js` → dist/; run `npm run build` first, as `npm test` does) in a fresh directory
 * whose node_modules links `tickwork` to this package, the way an install would.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { cleanEnv, ROOT } from "./server.ts";

const run = promisify(execFile);
const BIN = join(ROOT, "bin/tickwork.js");

const dirs: string[] = [];
const children: ChildProcess[] = [];

beforeAll(() => {
  if (!existsSync(join(ROOT, "dist/cli.js"))) {
    throw new Error("dist/cli.js is missing: run `npm run build` before this test");
  }
});

afterAll(() => {
  for (const child of children) stop(child);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * A fresh project outside this repository: `node_modules/tickwork` links to this package (its
 * exports point at dist/), and zod, hono (what the handlers import) and, for type checks, the
 * type packages link to this repository's copies. No tsx: it is found from tickwork's location.
 */
function project(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "tickwork-project-"));
  dirs.push(dir);
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(ROOT, join(dir, "node_modules/tickwork"), "dir");
  for (const name of ["zod", "hono", "@types", "@upstash"]) {
    symlinkSync(join(ROOT, "node_modules", name), join(dir, "node_modules", name), "dir");
  }
  for (const [path, text] of Object.entries(files)) writeFileSync(join(dir, path), text);
  return dir;
}

/** Run the CLI in `cwd`; never throws. */
async function tickwork(args: string[], cwd: string) {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], {
      cwd,
      env: cleanEnv(),
      timeout: 20_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Every file under `dir` but node_modules, relative, with its bytes. */
function snapshot(dir: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const rel = relative(dir, path);
    if (rel.split("/")[0] === "node_modules" || !entry.isFile()) continue;
    files.set(rel, readFileSync(path));
  }
  return files;
}

interface Dev {
  url: string;
  banner: string;
  curls: string[];
  output: () => string;
}

/** `tickwork dev --port 0` in `cwd`; resolves once its banner is complete. */
async function startDev(cwd: string): Promise<Dev> {
  const child = spawn(process.execPath, [BIN, "dev", "--port", "0"], {
    cwd,
    env: cleanEnv(),
    detached: true,
  });
  children.push(child);
  let out = "";
  const append = (chunk: Buffer) => {
    out += chunk.toString();
  };
  child.stdout.on("data", append);
  child.stderr.on("data", append);
  const banner = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no banner within 20 s:\n${out}`)), 20_000);
    const check = () => {
      const start = out.search(/tickwork dev server listening on /);
      const end = out.indexOf("answers 200 with the same job.", start);
      if (start >= 0 && end >= 0) {
        clearTimeout(timer);
        resolve(out.slice(start, out.indexOf("\n", end) + 1));
      }
    };
    child.stdout.on("data", check);
    // `close`: exited, and its output read to the end (for the message).
    child.once("close", (code) => {
      clearTimeout(timer);
      reject(new Error(`dev exited (${code}) before its banner:\n${out}`));
    });
  });
  const url = /listening on (http:\/\/\S+)/.exec(banner)?.[1] as string;
  const curls = banner
    .split("\n")
    .filter((line) => /^\s+curl /.test(line))
    .map((line) => line.trim());
  return { url, banner, curls, output: () => out };
}

function stop(child: ChildProcess): void {
  try {
    if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** The banner's submit line as a fetch: its URL and its `-d '…'` body. */
function submitFromCurl(line: string): { url: string; body: string } {
  const url = /-X POST (\S+)/.exec(line)?.[1];
  const body = /-d '(.*)'$/.exec(line)?.[1];
  if (!url || body === undefined) throw new Error(`not a submit line: ${line}`);
  return { url, body };
}

interface Job {
  id: string;
  handler: string;
  status: string;
  input?: unknown;
  result?: unknown;
}

/** The job once it is final: the API's long poll (`?wait=`), no sleeping here. */
async function finalJob(base: string, id: string): Promise<Job> {
  const response = await fetch(`${base}/v1/jobs/${id}?wait=10s`);
  return (await response.json()) as Job;
}

const PLATFORM_FILES = {
  node: ["src/tickwork/handlers.mjs", ".env.example"],
  cloudflare: ["src/tickwork/handlers.mjs", "src/worker.mjs", "wrangler.toml", ".dev.vars.example"],
  vercel: ["src/tickwork/handlers.mjs", "src/index.mjs", "vercel.json", ".env.example"],
} as const;

describe.concurrent("tickwork init", () => {
  for (const [platform, files] of Object.entries(PLATFORM_FILES)) {
    test(`--platform ${platform} writes its files; a second init skips them all and changes no byte`, async () => {
      const dir = project({ "package.json": '{ "name": "my-app" }\n' });
      const first = await tickwork(["init", "--platform", platform], dir);
      expect(first.code, first.stderr).toBe(0);
      for (const file of files) expect(first.stdout).toMatch(new RegExp(`  wrote {4}${file}`));
      expect(first.stdout).toContain("Next steps:");
      expect(first.stdout).toContain("npx tickwork dev");
      expect(first.stdout).toMatch(/npm install tickwork hono zod/);
      const before = snapshot(dir);
      expect([...before.keys()].sort()).toEqual(["package.json", ...files].sort());

      const second = await tickwork(["init", "--platform", platform], dir);
      expect(second.code).toBe(1);
      expect(second.stdout).not.toContain("  wrote ");
      expect(second.stdout).toContain("Nothing written: every file exists");
      expect(second.stdout).toContain("  kept     src/tickwork/handlers.mjs");
      for (const file of files.slice(1)) {
        expect(second.stdout).toMatch(new RegExp(`  skipped  ${file.replace(".", "\\.")} `));
      }
      expect(snapshot(dir)).toEqual(before);
    });
  }

  test("the TypeScript it writes type-checks (strict, exactOptionalPropertyTypes)", async () => {
    const tsconfig = {
      compilerOptions: {
        strict: true,
        exactOptionalPropertyTypes: true,
        target: "ES2022",
        module: "ESNext",
        moduleResolution: "Bundler",
        lib: ["ES2023", "DOM"],
        types: ["node"],
        noEmit: true,
        skipLibCheck: true,
      },
      include: ["src"],
    };
    const dir = project({ "tsconfig.json": JSON.stringify(tsconfig) });
    expect((await tickwork(["init", "--platform", "cloudflare"], dir)).code).toBe(0);
    // The handlers module is kept; the Vercel entry imports the same one.
    expect((await tickwork(["init", "--platform", "vercel"], dir)).code).toBe(0);
    expect([...snapshot(dir).keys()].filter((f) => f.endsWith(".ts")).sort()).toEqual([
      "src/index.ts",
      "src/tickwork/handlers.ts",
      "src/worker.ts",
    ]);
    const tsc = join(ROOT, "node_modules/typescript/bin/tsc");
    const checked = await run(process.execPath, [tsc, "-p", dir], { cwd: dir }).then(
      () => ({ code: 0, stdout: "" }),
      (error: { code: number; stdout: string }) => error,
    );
    expect(checked.stdout).toBe("");
    expect(checked.code).toBe(0);
    // A whole type-check of a fresh project (two inits, then tsc): beside the other test files on
    // a busy 2-core machine it took over 30 s; the answer, not the time, is under test.
  }, 180_000);
});

describe.concurrent("tickwork dev in a user's project", () => {
  test("finds the .mjs handlers init wrote; the banner's first curl line answers 202 and the job succeeds", async () => {
    const dir = project();
    expect((await tickwork(["init"], dir)).code).toBe(0);
    const dev = await startDev(dir);
    expect(dev.banner).toContain("handlers   echo, email.welcome");
    expect(dev.banner).toContain(`  dashboard  ${dev.url}/dashboard\n`);
    expect(dev.banner).toContain(`  metrics    ${dev.url}/metrics (Prometheus text)\n`);
    expect(dev.curls).toHaveLength(2);

    const { url, body } = submitFromCurl(dev.curls[0] as string);
    const submitted = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(submitted.status).toBe(202);
    const job = (await submitted.json()) as Job;
    expect(await finalJob(dev.url, job.id)).toMatchObject({
      handler: "echo",
      status: "succeeded",
      result: { hello: "world" },
    });
    // The second line reads that job back.
    const listUrl = /curl -sS '([^']+)'/.exec(dev.curls[1] as string)?.[1] as string;
    const page = (await (await fetch(listUrl)).json()) as { items: Job[] };
    expect(page.items[0]).toMatchObject({ id: job.id, status: "succeeded" });

    expect((await fetch(`${dev.url}/dashboard`)).status).toBe(200);
    expect((await fetch(`${dev.url}/metrics`)).status).toBe(200);
  });

  // tsx compiles `.ts` to CommonJS in a package without "type": "module": both scopes must load.
  for (const [scope, pkg] of [
    ["CommonJS", '{ "name": "my-app" }\n'],
    ["ES module", '{ "name": "my-app", "type": "module" }\n'],
  ]) {
    test(`a TypeScript handlers module (${scope} package) loads through tsx; its zod schema is enforced`, async () => {
      const dir = project({ "tsconfig.json": "{}\n", "package.json": pkg as string });
      expect((await tickwork(["init", "--platform", "vercel"], dir)).code).toBe(0);
      expect(existsSync(join(dir, "src/tickwork/handlers.ts"))).toBe(true);
      const dev = await startDev(dir);
      expect(dev.banner).toContain("handlers   echo, email.welcome");
      const submit = (input: unknown) =>
        fetch(`${dev.url}/v1/jobs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ handler: "email.welcome", input }),
        });
      expect((await submit({ to: "not an email" })).status).toBe(422);
      const accepted = await submit({ to: "ada@example.com", name: "Ada" });
      expect(accepted.status).toBe(202);
      const job = (await accepted.json()) as Job;
      expect(await finalJob(dev.url, job.id)).toMatchObject({
        status: "succeeded",
        result: { sent: "ada@example.com", greeting: "Welcome, Ada!" },
      });
    });
  }

  test("the banner's curl lines use a registered handler when there is no echo", async () => {
    const dir = project();
    mkdirSync(join(dir, "tickwork"));
    writeFileSync(
      join(dir, "tickwork/handlers.mjs"),
      `import * as z from "zod";
export const handlers = {
  "email.send": { input: z.object({ to: z.email() }), run: () => "sent" },
  "report.daily": { input: z.object({ day: z.string().optional() }), run: () => ({ ok: true }) },
};
`,
    );
    const dev = await startDev(dir);
    expect(dev.banner).not.toContain("echo");
    expect(dev.banner).toContain("Submit a job, then read the newest report.daily job back");
    const { url, body } = submitFromCurl(dev.curls[0] as string);
    expect(JSON.parse(body)).toMatchObject({ handler: "report.daily", input: {} });
    const submitted = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(submitted.status).toBe(202);
    const job = (await submitted.json()) as Job;
    expect(await finalJob(dev.url, job.id)).toMatchObject({ status: "succeeded" });
  });

  test("no handlers module: exit 2, naming where it looked and how to make one", async () => {
    const dir = project();
    const { code, stderr } = await tickwork(["dev", "--port", "0"], dir);
    expect(code).toBe(2);
    expect(stderr).toContain(
      `no handlers module in ${dir}: tried src/tickwork/handlers.{ts,mts,js,mjs}`,
    );
    expect(stderr).toContain("Create one with `npx tickwork init`");
  });
});
