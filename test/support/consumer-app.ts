/**
 * A fresh app that installs tickwork the way a user does: `npm pack` of this repository (dist/
 * must be built: `npm run build`), `npm install <tarball>` with the peers the app needs from the
 * registry (the versions this repository locks, so npm's cache answers), and the README's own
 * code as the app's files. Used by `test/package/consumer.test.ts` and `scripts/size.ts`.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { ROOT } from "../dev/server.ts";

const exec = promisify(execFile);

/** The result of `npm pack --json`. */
export interface Packed {
  /** Absolute path of the tarball. */
  tarball: string;
  /** Bytes, unpacked. */
  unpackedSize: number;
  /** Bytes, as shipped (gzip). */
  size: number;
  files: string[];
}

/**
 * Pack this repository into `dir` without running `prepack` (the caller builds first, so tests
 * that run the CLI from dist/ meanwhile never see it rebuilt under them).
 */
export async function packTickwork(dir: string): Promise<Packed> {
  if (!existsSync(join(ROOT, "dist", "index.js"))) {
    throw new Error("dist/ is not built: run `npm run build` (npm test does) before this");
  }
  const { stdout } = await exec(
    "npm",
    ["pack", "--ignore-scripts", "--json", "--pack-destination", dir],
    { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 },
  );
  const [info] = JSON.parse(stdout) as {
    filename: string;
    unpackedSize: number;
    size: number;
    files: { path: string }[];
  }[];
  if (!info) throw new Error(`npm pack printed nothing usable: ${stdout.slice(0, 200)}`);
  return {
    tarball: join(dir, info.filename),
    unpackedSize: info.unpackedSize,
    size: info.size,
    files: info.files.map((file) => file.path),
  };
}

/** `name@version` with the version installed in this repository. */
export function locked(name: string): string {
  const manifest = join(ROOT, "node_modules", name, "package.json");
  return `${name}@${JSON.parse(readFileSync(manifest, "utf8")).version}`;
}

/** A new folder under the system's temp folder. */
export function tempDir(label: string): string {
  return mkdtempSync(join(tmpdir(), `tickwork-${label}-`));
}

/** Create `dir` as an ES-module app and install `packages` into it (offline where npm can). */
export async function createApp(dir: string, packages: string[]): Promise<void> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "package.json"),
    `${JSON.stringify({ name: "consumer-app", private: true, type: "module" }, null, 2)}\n`,
  );
  await exec(
    "npm",
    ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", ...packages],
    { cwd: dir, maxBuffer: 16 * 1024 * 1024, timeout: 180_000 },
  );
}

/** Write `files` (path relative to `dir` → content) into `dir`. */
export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
}

/**
 * The files the README shows: each fenced code block preceded by `<!-- file: path -->`.
 * @throws when the README has none (the markers were lost).
 */
export function readmeFiles(): Record<string, string> {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const files: Record<string, string> = {};
  for (const match of readme.matchAll(/<!-- file: (\S+) -->\n```\w*\n([\s\S]*?)\n```/g)) {
    files[match[1]!] = `${match[2]!}\n`;
  }
  if (Object.keys(files).length === 0) throw new Error("README.md has no <!-- file: --> blocks");
  return files;
}

/** Run a binary of this repository's node_modules (tsc, wrangler, publint, attw) in `cwd`. */
export async function runRepoBin(
  bin: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(join(ROOT, "node_modules", ".bin", bin), args, {
      cwd,
      env: { ...process.env, ...env },
      maxBuffer: 64 * 1024 * 1024,
      timeout: 240_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** What `wrangler deploy --dry-run` reports for a Worker bundle. */
export interface WorkerSize {
  /** KiB, minified. */
  kib: number;
  /** KiB, gzip. */
  gzipKib: number;
}

/**
 * Bundle the Worker of the app in `dir` (its `wrangler.toml`) with `wrangler deploy --dry-run`.
 * @throws when wrangler fails (the bundle does not build), with its output.
 */
export async function bundleWorker(dir: string): Promise<WorkerSize> {
  const out = join(dir, ".wrangler-out");
  const result = await runRepoBin(
    "wrangler",
    ["deploy", "--dry-run", "--minify", "--outdir", out],
    dir,
    { WRANGLER_SEND_METRICS: "false", CI: "1" },
  );
  const text = `${result.stdout}\n${result.stderr}`;
  const match = /Total Upload:\s*([\d.]+)\s*KiB\s*\/\s*gzip:\s*([\d.]+)\s*KiB/.exec(text);
  if (result.code !== 0 || !match) throw new Error(`wrangler failed (${result.code}):\n${text}`);
  return { kib: Number(match[1]), gzipKib: Number(match[2]) };
}
