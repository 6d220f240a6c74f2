/**
 * Most test files share their worker's modules with the files that ran in it before
 * (vitest.config.ts, project `shared`). A file that changes what the whole process holds must run
 * in a process of its own (`ISOLATED`, test/isolated.ts): otherwise what it changed reaches the
 * files after it, or what they left reaches it, and a test passes or fails by the order files
 * happen to run in. This checks every test file for the ways this suite changes a process,
 * directly or through a test helper.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ISOLATED } from "../isolated.ts";

const ROOT = resolve(import.meta.dirname, "../..");

/** What a file does that outlives it in a shared process, and how it shows in its text. */
const PROCESS_WIDE: [string, RegExp][] = [
  ["fake timers", /\bvi\.useFakeTimers\(|\buseFakeClock\(/],
  ["module mocks", /\bvi\.(do)?[mM]ock\(/],
  ["stubbed globals or environment", /\bvi\.stub(Global|Env)\(/],
  ["an assigned global", /\bglobalThis\.\w+\s*=[^=]/],
  ["a process listener", /\bprocess\.(on|once|prependListener)\(/],
  ["the OpenTelemetry globals", /support\/otel\.ts"|setGlobal(TracerProvider|ContextManager)/],
  // Helpers whose hooks and connection are made once per module, i.e. once per process here.
  ["a helper's module-level hooks", /support\/local-transport\.ts"/],
  ["a helper's module-level connection", /support\/redis-store-shared\.ts"/],
];

function testFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory() && entry.name !== "node_modules") found.push(...testFiles(path));
    else if (entry.name.endsWith(".test.ts")) found.push(path);
  }
  return found;
}

/** Whether `file` is one of `ISOLATED`: a path, or a directory's `dir/**\/*.test.ts`. */
function isolated(file: string): boolean {
  return ISOLATED.some((entry) => {
    if (!entry.includes("*")) return entry === file;
    const dir = entry.replace(/\/\*\*\/\*\.test\.ts$/, "/");
    if (dir === entry) throw new Error(`ISOLATED entry ${entry}: a path or dir/**/*.test.ts`);
    return file.startsWith(dir);
  });
}

describe("test isolation", () => {
  const files = [...testFiles("src"), ...testFiles("test")];
  // This file names the patterns it looks for.
  const self = relative(ROOT, import.meta.filename);

  it("runs every file that changes its process in a process of its own", () => {
    const shared: string[] = [];
    for (const file of files) {
      if (file === self) continue;
      const text = readFileSync(join(ROOT, file), "utf8");
      const does = PROCESS_WIDE.filter(([, pattern]) => pattern.test(text)).map(([what]) => what);
      if (does.length > 0 && !isolated(file)) shared.push(`${file}: ${does.join(", ")}`);
    }
    expect(shared).toEqual([]);
  });

  it("names only files that exist", () => {
    const missing = ISOLATED.filter(
      (entry) => !entry.includes("*") && !files.includes(relative(ROOT, join(ROOT, entry))),
    );
    expect(missing).toEqual([]);
    expect(files.filter(isolated).length).toBeGreaterThan(ISOLATED.length);
  });

  it("finds what it looks for (each pattern matches the line it is meant for)", () => {
    const lines = [
      "vi.useFakeTimers({ toFake: ['Date'] });",
      "useFakeClock();",
      'vi.mock("@opentelemetry/api", async () => ({}));',
      'vi.stubEnv("X", "1");',
      "globalThis.fetch = fake;",
      'process.on("unhandledRejection", onUnhandled);',
      'import { registerSdk } from "../support/otel.ts";',
      'import { transport } from "../../../test/support/local-transport.ts";',
      'import { withStore } from "../../../test/support/redis-store-shared.ts";',
    ];
    for (const line of lines) {
      expect(
        PROCESS_WIDE.some(([, pattern]) => pattern.test(line)),
        line,
      ).toBe(true);
    }
    expect(PROCESS_WIDE.some(([, pattern]) => pattern.test("if (globalThis.fetch === f) {}"))).toBe(
      false,
    );
  });
});
