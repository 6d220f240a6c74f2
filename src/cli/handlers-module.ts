/**
 * @module
 * Finding and importing the user's handlers module: the conventional locations (what `tickwork
 * dev` and `start` look for without `--handlers`, and where `tickwork init` writes), and loading
 * TypeScript from the compiled CLI — through the project's tsx, else natively where Node strips
 * types, else through a tsx found from tickwork's own location.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, extname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { StartError } from "../adapter/node/errors.ts";
import type { Handlers } from "../engine/handlers.ts";

/** File extensions of a handlers module, in the order they are looked for. */
export const HANDLERS_EXTENSIONS = [".ts", ".mts", ".js", ".mjs"] as const;

/**
 * Where a handlers module is looked for, relative to the project directory, without the
 * extension; each is tried with every extension of {@link HANDLERS_EXTENSIONS}, in order. The
 * first is where `tickwork init` writes; `functions/handlers` was the default before there was a
 * list (and is where this repository's examples live).
 */
export const HANDLERS_LOCATIONS = [
  "src/tickwork/handlers",
  "tickwork/handlers",
  "tickwork.handlers",
  "functions/handlers",
] as const;

/** Every conventional path, relative to the project directory, in lookup order. */
export function conventionalHandlersPaths(): string[] {
  return HANDLERS_LOCATIONS.flatMap((base) => HANDLERS_EXTENSIONS.map((ext) => `${base}${ext}`));
}

/** The conventional locations in one short line, e.g. `src/tickwork/handlers.{ts,mts,js,mjs}, …`. */
export function describeHandlersLocations(): string {
  const exts = HANDLERS_EXTENSIONS.map((ext) => ext.slice(1)).join(",");
  return HANDLERS_LOCATIONS.map((base) => `${base}.{${exts}}`).join(", ");
}

/**
 * The first conventional handlers module that exists under `dir` (absolute), or `undefined`.
 *
 * @example
 * findHandlersModule(process.cwd()); // "/app/src/tickwork/handlers.ts"
 */
export function findHandlersModule(dir: string): string | undefined {
  for (const path of conventionalHandlersPaths()) {
    const absolute = join(dir, path);
    if (existsSync(absolute)) return absolute;
  }
  return undefined;
}

/** The handlers module cannot be found, or does not export handlers: a usage mistake (exit 2). */
export class HandlersModuleError extends Error {
  override name = "HandlersModuleError";
}

/**
 * A TypeScript module cannot be loaded in this process (no type stripping, no tsx): a
 * `StartError` (named so), which the CLI reports in one line without a stack (exit 1).
 */
export class TypeScriptLoaderError extends StartError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { ...options, atRuntime: true });
  }
}

/** Resolve `specifier` the way `require` does from the file `base`; throws when it cannot. */
export type Resolver = (specifier: string, base: string) => string;

const requireResolve: Resolver = (specifier, base) => createRequire(base).resolve(specifier);

/** File URLs of tsx's two registration APIs. */
export interface TsxApis {
  /** `tsx/esm/api`: hooks for `import` (TypeScript in an ES module scope). */
  esm: string;
  /**
   * `tsx/cjs/api`: hooks for `require`. tsx compiles a `.ts` file of a package without
   * `"type": "module"` to CommonJS, which only loads with these registered too.
   */
  cjs: string;
}

/**
 * tsx's registration APIs (ESM builds), looked up from each of `bases` in turn (files, e.g. the
 * project's `package.json` and this module), or `undefined` when none reaches a tsx.
 *
 * @example
 * findTsxApis([join(process.cwd(), "package.json")]);
 * // { esm: "file:///app/node_modules/tsx/dist/esm/api/index.mjs", cjs: "file:///app/…/cjs/api/index.mjs" }
 */
export function findTsxApis(
  bases: readonly string[],
  resolveFrom: Resolver = requireResolve,
): TsxApis | undefined {
  for (const base of bases) {
    let manifest: string;
    try {
      manifest = resolveFrom("tsx/package.json", base);
    } catch {
      continue;
    }
    // `require.resolve("tsx/esm/api")` would pick the CommonJS builds; this module is an ES
    // module, so read the ESM ones from the package's exports.
    let exported: Record<string, unknown> | undefined;
    try {
      exported = (JSON.parse(readFileSync(manifest, "utf8")) as { exports?: unknown })
        .exports as Record<string, unknown>;
    } catch {
      // An unreadable manifest: fall back to the layout tsx 4 has.
    }
    const url = (subpath: "./esm/api" | "./cjs/api") => {
      const entry = exported?.[subpath] as string | { import?: string | { default?: string } };
      const chosen = typeof entry === "string" ? entry : entry?.import;
      const file =
        (typeof chosen === "string" ? chosen : chosen?.default) ??
        `./dist${subpath.slice(1)}/index.mjs`;
      return pathToFileURL(join(dirname(manifest), file)).href;
    };
    return { esm: url("./esm/api"), cjs: url("./cjs/api") };
  }
  return undefined;
}

/** How {@link loadHandlersModule} imports; every part can be replaced in tests. */
export interface LoadHandlersOptions {
  /** The project directory: tsx is looked for from here first. */
  cwd: string;
  /**
   * How this process imports TypeScript: `true` when the CLI itself runs from its TypeScript
   * sources (under tsx or vitest: nothing to register), `"native"` when Node strips types
   * (`process.features.typescript`: the project's tsx is still preferred), `false` when it
   * cannot without tsx.
   * @default detected
   */
  typescript?: boolean | "native";
  /**
   * Finds tsx's registration APIs from the given base files.
   * @default {@link findTsxApis}
   */
  findTsx?: (bases: readonly string[]) => TsxApis | undefined;
  /** @default dynamic `import()` */
  importModule?: (url: string) => Promise<unknown>;
}

/**
 * `true` when this CLI already runs from `.ts` sources, `"native"` when Node strips TypeScript
 * types itself, else `false`.
 */
export function importsTypeScript(): boolean | "native" {
  if (import.meta.url.endsWith(".ts")) return true;
  const features = process.features as { typescript?: unknown };
  return features.typescript ? "native" : false;
}

/** The tsx APIs registered in this process: once is enough, its hooks serve every later import. */
const registered = new Set<string>();

/**
 * Import the handlers module at `path` (absolute) and return its `handlers` (or default) export.
 * `.js`/`.mjs` load as they are; `.ts`/`.mts` through the project's tsx, else natively where Node
 * strips types, else through a tsx found from tickwork's own location.
 *
 * @throws TypeScriptLoaderError when TypeScript cannot be loaded; HandlersModuleError when the
 * module exports no handlers.
 * @example
 * const handlers = await loadHandlersModule("/app/src/tickwork/handlers.ts", { cwd: "/app" });
 */
export async function loadHandlersModule(
  path: string,
  options: LoadHandlersOptions,
): Promise<Handlers> {
  const importModule = options.importModule ?? ((url: string) => import(url));
  const shown = displayPath(path, options.cwd);
  const ext = extname(path);
  const typescript = ext === ".ts" || ext === ".mts" || ext === ".cts";
  const loads = options.typescript ?? importsTypeScript();
  if (typescript && loads !== true) {
    const findTsx = options.findTsx ?? ((bases) => findTsxApis(bases));
    // Where Node strips types itself, the project's own tsx still goes first: Node's stripping
    // follows the package's module type (a `.ts` file in a CommonJS package cannot `import`), maps
    // no `./x.js` import to `./x.ts` and refuses enums, and tsx does all three. Without one in the
    // project, Node's own; without either, tickwork's tsx, if it can find one.
    const apis =
      loads === "native"
        ? findTsx([join(options.cwd, "package.json")])
        : findTsx([join(options.cwd, "package.json"), fileURLToPath(import.meta.url)]);
    if (apis === undefined && loads !== "native") {
      throw new TypeScriptLoaderError(
        `cannot load ${shown}: Node ${process.versions.node} does not strip TypeScript types and ` +
          "tsx is not installed; run `npm install -D tsx` (or use Node 22.18 or newer, or a " +
          ".js/.mjs handlers module)",
      );
    }
    // Kept for the life of the process: handlers may import more TypeScript while jobs run.
    for (const api of apis ? [apis.esm, apis.cjs] : []) {
      if (registered.has(api)) continue;
      const { register } = (await importModule(api)) as { register: () => unknown };
      register();
      registered.add(api);
    }
  }
  const mod = (await importModule(pathToFileURL(path).href)) as {
    handlers?: unknown;
    default?: unknown;
  };
  // A CommonJS module's exports arrive as `default`.
  const fromDefault = (mod.default as { handlers?: unknown } | null | undefined)?.handlers;
  const handlers = mod.handlers ?? fromDefault ?? mod.default;
  if (typeof handlers !== "object" || handlers === null) {
    throw new HandlersModuleError(`${shown} must export \`handlers\` (a map of name → { run })`);
  }
  return handlers as Handlers;
}

/**
 * The handlers module to load: `file` (from `--handlers`) resolved against `cwd`, else the first
 * conventional one.
 *
 * @throws HandlersModuleError naming what was tried and how to make one.
 * @example
 * resolveHandlersModule(undefined, "/app"); // "/app/src/tickwork/handlers.ts"
 */
export function resolveHandlersModule(file: string | undefined, cwd: string): string {
  if (file !== undefined) {
    const path = resolve(cwd, file);
    if (!existsSync(path)) {
      throw new HandlersModuleError(
        `no handlers module at ${path}: pass --handlers <file> (it exports \`handlers\`)`,
      );
    }
    if (!statSync(path).isFile()) {
      throw new HandlersModuleError(
        `${path} is not a file: pass --handlers <file> (a module that exports \`handlers\`)`,
      );
    }
    return path;
  }
  const found = findHandlersModule(cwd);
  if (found !== undefined) return found;
  throw new HandlersModuleError(
    `no handlers module in ${cwd}: tried ${describeHandlersLocations()}. ` +
      "Create one with `npx tickwork init`, or pass --handlers <file> (it exports `handlers`)",
  );
}

/** `path` relative to `cwd` when it lies inside it, else as it is. */
function displayPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel && !rel.startsWith("..") ? rel : path;
}
