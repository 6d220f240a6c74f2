import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, test } from "vitest";
import { StartError } from "../adapter/node/errors.ts";
import {
  conventionalHandlersPaths,
  describeHandlersLocations,
  findHandlersModule,
  findTsxApis,
  HANDLERS_LOCATIONS,
  HandlersModuleError,
  loadHandlersModule,
  resolveHandlersModule,
  TypeScriptLoaderError,
} from "./handlers-module.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A fresh project directory with `files` (relative path → text). */
function project(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "tickwork-handlers-"));
  dirs.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

const MJS = "export const handlers = { echo: { run: (input) => input } };\n";

describe("the conventional locations", () => {
  test("are tried in order, TypeScript before JavaScript; init writes the first", () => {
    const paths = conventionalHandlersPaths();
    expect(paths.slice(0, 4)).toEqual([
      "src/tickwork/handlers.ts",
      "src/tickwork/handlers.mts",
      "src/tickwork/handlers.js",
      "src/tickwork/handlers.mjs",
    ]);
    expect(paths).toContain("tickwork.handlers.ts");
    expect(paths).toContain("functions/handlers.ts");
    expect(paths).toHaveLength(HANDLERS_LOCATIONS.length * 4);
    expect(describeHandlersLocations()).toContain("src/tickwork/handlers.{ts,mts,js,mjs}");
  });

  test("the first that exists wins", () => {
    const dir = project({ "tickwork.handlers.mjs": MJS, "functions/handlers.ts": MJS });
    expect(findHandlersModule(dir)).toBe(join(dir, "tickwork.handlers.mjs"));
    expect(resolveHandlersModule(undefined, dir)).toBe(join(dir, "tickwork.handlers.mjs"));
    expect(findHandlersModule(project())).toBeUndefined();
  });

  test("none: the error names what was tried and how to make one", () => {
    const dir = project();
    const error = (() => {
      try {
        resolveHandlersModule(undefined, dir);
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error).toBeInstanceOf(HandlersModuleError);
    expect(error?.message).toContain(`no handlers module in ${dir}`);
    expect(error?.message).toContain(describeHandlersLocations());
    expect(error?.message).toContain("npx tickwork init");
  });

  test("--handlers names one file, resolved against the directory", () => {
    const dir = project({ "jobs/all.mjs": MJS });
    expect(resolveHandlersModule("jobs/all.mjs", dir)).toBe(join(dir, "jobs/all.mjs"));
    expect(() => resolveHandlersModule("jobs/none.ts", dir)).toThrow(
      `no handlers module at ${join(dir, "jobs/none.ts")}: pass --handlers <file>`,
    );
  });
});

describe("finding tsx", () => {
  test("from this repository: the ESM builds of its two registration APIs", () => {
    const apis = findTsxApis([join(ROOT, "package.json")]);
    expect(apis?.esm).toMatch(/^file:\/\/.*\/node_modules\/tsx\/dist\/esm\/api\/index\.mjs$/);
    expect(apis?.cjs).toMatch(/^file:\/\/.*\/node_modules\/tsx\/dist\/cjs\/api\/index\.mjs$/);
  });

  test("from a directory without tsx, then the next base", () => {
    const empty = project();
    expect(findTsxApis([join(empty, "package.json")])).toBeUndefined();
    expect(findTsxApis([join(empty, "package.json"), join(ROOT, "package.json")])?.esm).toMatch(
      /tsx\/dist\/esm\/api\/index\.mjs$/,
    );
  });

  test("through an injected resolver: the bases are asked in order", () => {
    const asked: string[] = [];
    const found = findTsxApis(["/a/package.json", "/b/package.json"], (specifier, base) => {
      asked.push(`${specifier} from ${base}`);
      throw new Error("not found");
    });
    expect(found).toBeUndefined();
    expect(asked).toEqual([
      "tsx/package.json from /a/package.json",
      "tsx/package.json from /b/package.json",
    ]);
  });
});

describe("loading", () => {
  test("a .mjs module loads as it is, without tsx", async () => {
    const dir = project({ "tickwork.handlers.mjs": MJS });
    const handlers = await loadHandlersModule(join(dir, "tickwork.handlers.mjs"), {
      cwd: dir,
      typescript: false,
      findTsx: () => {
        throw new Error("tsx looked for");
      },
    });
    expect(Object.keys(handlers)).toEqual(["echo"]);
  });

  test("TypeScript without type stripping and without tsx: one line naming the fix", async () => {
    const dir = project({ "src/tickwork/handlers.ts": MJS });
    const bases: string[][] = [];
    const loading = loadHandlersModule(join(dir, "src/tickwork/handlers.ts"), {
      cwd: dir,
      typescript: false,
      findTsx: (tried) => {
        bases.push([...tried]);
        return undefined;
      },
      importModule: () => Promise.reject(new Error("imported")),
    });
    await expect(loading).rejects.toThrow(TypeScriptLoaderError);
    await expect(loading).rejects.toThrow(
      /^cannot load src\/tickwork\/handlers\.ts: Node .* does not strip TypeScript types and tsx is not installed; run `npm install -D tsx` \(or use Node 22\.18 or newer/,
    );
    // The project first, then tickwork's own location.
    expect(bases[0]?.[0]).toBe(join(dir, "package.json"));
    expect(bases[0]).toHaveLength(2);
    // Reported by the CLI as a start failure (exit 1), not a usage mistake.
    expect(new TypeScriptLoaderError("x").name).toBe("StartError");
    expect(new TypeScriptLoaderError("x")).toBeInstanceOf(StartError);
  });

  test("TypeScript without type stripping: tsx is registered (import and require hooks) first", async () => {
    const dir = project({ "src/tickwork/handlers.ts": MJS });
    const calls: string[] = [];
    const apis = { esm: "file:///fake/tsx/esm/api.mjs", cjs: "file:///fake/tsx/cjs/api.mjs" };
    const handlers = await loadHandlersModule(join(dir, "src/tickwork/handlers.ts"), {
      cwd: dir,
      typescript: false,
      findTsx: () => apis,
      importModule: async (url) => {
        calls.push(url);
        if (url.startsWith("file:///fake/")) return { register: () => calls.push("register") };
        // A CommonJS module (a package without "type": "module") arrives as `default`.
        return { default: { handlers: { echo: { run: () => null } } } };
      },
    });
    expect(Object.keys(handlers)).toEqual(["echo"]);
    expect(calls).toEqual([
      apis.esm,
      "register",
      apis.cjs,
      "register",
      pathToFileURL(join(dir, "src/tickwork/handlers.ts")).href,
    ]);
  });

  test("where TypeScript loads natively, no tsx is looked for", async () => {
    const dir = project({ "tickwork.handlers.ts": MJS });
    const handlers = await loadHandlersModule(join(dir, "tickwork.handlers.ts"), {
      cwd: dir,
      typescript: true,
      findTsx: () => {
        throw new Error("tsx looked for");
      },
    });
    expect(Object.keys(handlers)).toEqual(["echo"]);
  });

  test("where Node strips types, the project's tsx goes first; without one, Node's own", async () => {
    const dir = project({ "src/tickwork/handlers.ts": MJS });
    const calls: string[] = [];
    const bases: string[][] = [];
    const apis = { esm: "file:///native/tsx/esm/api.mjs", cjs: "file:///native/tsx/cjs/api.mjs" };
    const importModule = async (url: string) => {
      calls.push(url);
      if (url.startsWith("file:///native/")) return { register: () => calls.push("register") };
      return { handlers: { echo: { run: () => null } } };
    };
    const file = join(dir, "src/tickwork/handlers.ts");
    await loadHandlersModule(file, {
      cwd: dir,
      typescript: "native",
      findTsx: (tried) => {
        bases.push([...tried]);
        return apis;
      },
      importModule,
    });
    expect(calls).toEqual([apis.esm, "register", apis.cjs, "register", pathToFileURL(file).href]);
    // The project alone: tickwork's own tsx would not be the project's choice.
    expect(bases).toEqual([[join(dir, "package.json")]]);
    calls.length = 0;
    const handlers = await loadHandlersModule(file, {
      cwd: dir,
      typescript: "native",
      findTsx: () => undefined,
      importModule,
    });
    expect(Object.keys(handlers)).toEqual(["echo"]);
    expect(calls).toEqual([pathToFileURL(file).href]);
  });

  test("a module without handlers is named", async () => {
    const dir = project({ "tickwork.handlers.mjs": "export const nothing = 1;\n" });
    await expect(
      loadHandlersModule(join(dir, "tickwork.handlers.mjs"), { cwd: dir }),
    ).rejects.toThrow("tickwork.handlers.mjs must export `handlers` (a map of name → { run })");
  });
});
