/**
 * The layering rule of docs/architecture.md ("Layers"), checked: every import of every source
 * file under `src/` (tests excluded) — `import … from`, `export … from`, `import("…")` and
 * `typeof import("…")` — must point at its own layer or at one the table below lets it use.
 *
 * The order, bottom to top (a layer imports only layers below it, never a sibling or one above):
 *
 * | tier | layers                         | may import                                            |
 * | ---- | ------------------------------ | ----------------------------------------------------- |
 * | 0    | core                           | nothing (zod and cron-parser only)                    |
 * | 1    | config, store, transport       | core — and not each other                             |
 * | 2    | engine (and `src/index.ts`)    | core, store, transport — not config                   |
 * | 3    | http                           | core, config, store, transport, engine                |
 * | 3    | client (beside http)           | core; engine only through `import type`/`export type` |
 * | 4    | adapter/*                      | everything below; see the adapter rule                |
 * | 5    | tools (`src/tools/*`)          | everything below                                      |
 * | 6    | cli (`src/cli.ts`, `src/cli/`) | everything below                                      |
 *
 * - `src/index.ts` (the `tickwork` entry) is the engine's public face, so it is held to the
 *   engine's rule: the root entry pulls in no HTTP, config or platform code.
 * - `client` runs in browsers: only `core` at run time. Handler _types_ come from `engine` through
 *   `import type` (a `{ type X }` specifier inside a value import still loads the module under
 *   `verbatimModuleSyntax`, so it does not count as type-only).
 * - Adapters: each platform (`adapter/node`, `adapter/cloudflare`, `adapter/vercel`) imports its
 *   own folder and the shared `src/adapter/*.ts` files; `adapter/vercel` may also use
 *   `adapter/node` (it reuses the Node environment parsing). `adapter/cloudflare` imports no
 *   other adapter.
 * - Tools are programs, not platform adapters: `src/tools/*` sit above the adapters, below the
 *   CLI that starts them. They may use the Node adapter's helpers (the REST bridge reuses its
 *   server, ioredis loader and `StartError`).
 * - Imports of packages (`hono`, `zod`, `node:…`) are not layers and are not checked here, except
 *   that no source file imports this package by name (`tickwork/…`): inside `src/` use paths.
 *
 * One rule is about code rather than imports: HTTP answers are the `http` layer's. Below it
 * (core, config, store, transport, engine) no file builds a `Response` (`new Response(…)`,
 * `Response.json(…)`): the runner returns a delivery outcome and `src/http/delivery.ts` renders it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const SRC = join(ROOT, "src");

type Layer =
  | "core"
  | "config"
  | "store"
  | "transport"
  | "engine"
  | "http"
  | "client"
  | "adapter"
  | "tools"
  | "cli";

/** Bottom to top; a layer's tier is its index. Layers of one tier may not import each other. */
const TIERS: readonly (readonly Layer[])[] = [
  ["core"],
  ["config", "store", "transport"],
  ["engine"],
  ["http", "client"],
  ["adapter"],
  ["tools"],
  ["cli"],
];

const TIER = new Map<Layer, number>(TIERS.flatMap((layers, tier) => layers.map((l) => [l, tier])));

/** What each layer may import besides itself (run-time imports). */
const MAY_IMPORT: Record<Layer, readonly Layer[]> = {
  core: [],
  config: ["core"],
  store: ["core"],
  transport: ["core"],
  engine: ["core", "store", "transport"],
  http: ["core", "config", "store", "transport", "engine"],
  client: ["core"],
  adapter: ["core", "config", "store", "transport", "engine", "http", "client"],
  tools: ["core", "config", "store", "transport", "engine", "http", "client", "adapter"],
  cli: ["core", "config", "store", "transport", "engine", "http", "client", "adapter", "tools"],
};

/** What a layer may import with `import type` / `export type` only, on top of {@link MAY_IMPORT}. */
const MAY_IMPORT_TYPES: Partial<Record<Layer, readonly Layer[]>> = {
  client: ["engine"],
};

/** Adapters other than its own that an adapter may import (the shared `src/adapter/*.ts` always). */
const ADAPTER_USES: Record<string, readonly string[]> = {
  node: [],
  cloudflare: [],
  vercel: ["node"],
};

interface Place {
  layer: Layer;
  /** For `adapter`: the platform folder, or `shared` for `src/adapter/*.ts`. */
  unit?: string;
}

/** The layer of a file, by its path under `src/`; `undefined` when no rule covers it. */
function placeOf(file: string): Place | undefined {
  const path = relative(SRC, file).split("\\").join("/");
  const [top, sub] = path.split("/");
  if (path === "index.ts") return { layer: "engine" };
  if (path === "cli.ts" || top === "cli") return { layer: "cli" };
  if (top === "tools") return { layer: "tools" };
  if (top === "adapter") {
    if (sub?.endsWith(".ts")) return { layer: "adapter", unit: "shared" };
    return { layer: "adapter", unit: sub! };
  }
  const layers: readonly string[] = [
    "core",
    "config",
    "store",
    "transport",
    "engine",
    "http",
    "client",
  ];
  return top !== undefined && layers.includes(top) ? { layer: top as Layer } : undefined;
}

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...sourceFiles(path));
    else if (/\.ts$/.test(entry.name) && !/\.test\.ts$/.test(entry.name)) files.push(path);
  }
  return files.sort();
}

/** Layers below `http`, which must not build HTTP answers. */
const BELOW_HTTP: readonly Layer[] = ["core", "config", "store", "transport", "engine"];

const parsed = new Map<string, ts.SourceFile>();

/** The syntax tree of `file` (parsed once). */
function sourceOf(file: string): ts.SourceFile {
  let source = parsed.get(file);
  if (!source) {
    source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
    parsed.set(file, source);
  }
  return source;
}

function lineOf(source: ts.SourceFile, node: ts.Node): number {
  return source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
}

/** Lines of `file` that build a `Response` (`new Response(…)`, `Response.json(…)`, …). */
function responsesBuiltIn(file: string): number[] {
  const source = sourceOf(file);
  const lines: number[] = [];
  const isResponse = (e: ts.Expression) => ts.isIdentifier(e) && e.text === "Response";
  const visit = (node: ts.Node): void => {
    if (
      (ts.isNewExpression(node) && isResponse(node.expression)) ||
      (ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        isResponse(node.expression.expression))
    ) {
      lines.push(lineOf(source, node));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return lines;
}

interface ImportRef {
  specifier: string;
  line: number;
  /** Erased from the JavaScript (`import type`, `export type`, `typeof import()`). */
  typeOnly: boolean;
}

/** Every module a file refers to, from its syntax tree (comments and strings are not imports). */
function importsOf(file: string): ImportRef[] {
  const source = sourceOf(file);
  const refs: ImportRef[] = [];
  const add = (node: ts.Node, specifier: ts.Expression | undefined, typeOnly: boolean) => {
    if (!specifier || !ts.isStringLiteralLike(specifier)) return;
    refs.push({ specifier: specifier.text, line: lineOf(source, node), typeOnly });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      add(node, node.moduleSpecifier, node.importClause?.isTypeOnly === true);
    } else if (ts.isExportDeclaration(node)) {
      add(node, node.moduleSpecifier, node.isTypeOnly);
    } else if (ts.isImportEqualsDeclaration(node)) {
      const ref = node.moduleReference;
      if (ts.isExternalModuleReference(ref)) add(node, ref.expression, node.isTypeOnly);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node, node.arguments[0], false);
    } else if (ts.isImportTypeNode(node)) {
      const arg = node.argument;
      if (ts.isLiteralTypeNode(arg)) add(node, arg.literal, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return refs;
}

interface Violation {
  file: string;
  line: number;
  specifier: string;
  why: string;
}

function describePlace(place: Place): string {
  return place.unit ? `${place.layer}/${place.unit}` : place.layer;
}

/** Why `from` may not import `to` (with `typeOnly` as given), or `undefined` when it may. */
function refusal(from: Place, to: Place, typeOnly: boolean): string | undefined {
  if (from.layer === to.layer) {
    if (from.layer !== "adapter" || from.unit === to.unit || to.unit === "shared") return;
    if (ADAPTER_USES[from.unit!]?.includes(to.unit!)) return;
    return `adapter/${from.unit} may not import adapter/${to.unit}`;
  }
  if (MAY_IMPORT[from.layer].includes(to.layer)) return;
  if (typeOnly && MAY_IMPORT_TYPES[from.layer]?.includes(to.layer)) return;
  if (MAY_IMPORT_TYPES[from.layer]?.includes(to.layer)) {
    return `${from.layer} may import ${to.layer} with \`import type\` only`;
  }
  const a = TIER.get(from.layer)!;
  const b = TIER.get(to.layer)!;
  const relation =
    b > a ? "a higher layer" : b === a ? "a sibling layer" : "a layer it may not use";
  const allowed = MAY_IMPORT[from.layer].join(", ") || "no other layer";
  return `${describePlace(from)} imports ${relation}, ${describePlace(to)} (${from.layer} may import: ${allowed})`;
}

function check(): { violations: Violation[]; unplaced: string[]; edges: number } {
  const violations: Violation[] = [];
  const unplaced: string[] = [];
  let edges = 0;
  for (const file of sourceFiles(SRC)) {
    const name = relative(ROOT, file).split("\\").join("/");
    const from = placeOf(file);
    if (!from) {
      unplaced.push(name);
      continue;
    }
    for (const ref of importsOf(file)) {
      if (ref.specifier === "tickwork" || ref.specifier.startsWith("tickwork/")) {
        violations.push({
          file: name,
          line: ref.line,
          specifier: ref.specifier,
          why: "imports the package by name; inside src/ use a relative path",
        });
        continue;
      }
      if (!ref.specifier.startsWith(".")) continue; // a package
      const target = resolve(dirname(file), ref.specifier);
      if (!target.startsWith(SRC)) continue;
      const to = placeOf(target);
      if (!to) {
        unplaced.push(relative(ROOT, target));
        continue;
      }
      edges++;
      const why = refusal(from, to, ref.typeOnly);
      if (why) violations.push({ file: name, line: ref.line, specifier: ref.specifier, why });
    }
  }
  return { violations, unplaced, edges };
}

describe("layers", () => {
  const { violations, unplaced, edges } = check();

  it("places every source file in a layer", () => {
    expect(unplaced).toEqual([]);
    expect(edges).toBeGreaterThan(100); // the scan found the imports
  });

  it("no layer imports a higher one, a sibling, or one it may not use", () => {
    const report = violations.map((v) => `${v.file}:${v.line} imports "${v.specifier}": ${v.why}`);
    expect(report, `layering violations:\n${report.join("\n")}`).toEqual([]);
  });

  it("no layer below http builds an HTTP answer", () => {
    const built: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const place = placeOf(file);
      if (!place || !BELOW_HTTP.includes(place.layer)) continue;
      const name = relative(ROOT, file).split("\\").join("/");
      for (const line of responsesBuiltIn(file)) built.push(`${name}:${line} builds a Response`);
    }
    expect(built, `HTTP answers built below http:\n${built.join("\n")}`).toEqual([]);
  });

  it("the checker itself tells the rules apart", () => {
    const at = (path: string) => placeOf(join(SRC, path))!;
    expect(refusal(at("engine/broker.ts"), at("config/schema.ts"), true)).toContain("a layer it");
    expect(refusal(at("core/model.ts"), at("engine/index.ts"), true)).toContain("a higher layer");
    expect(refusal(at("store/port.ts"), at("transport/port.ts"), true)).toContain("sibling");
    expect(refusal(at("http/app.ts"), at("engine/index.ts"), false)).toBeUndefined();
    expect(refusal(at("client/jobs.ts"), at("engine/handlers.ts"), true)).toBeUndefined();
    expect(refusal(at("client/jobs.ts"), at("engine/handlers.ts"), false)).toContain("type");
    expect(refusal(at("adapter/vercel/app.ts"), at("adapter/node/env.ts"), false)).toBeUndefined();
    expect(refusal(at("adapter/cloudflare/x.ts"), at("adapter/node/env.ts"), false)).toContain(
      "adapter/cloudflare may not import adapter/node",
    );
    expect(refusal(at("adapter/cloudflare/x.ts"), at("adapter/peer.ts"), false)).toBeUndefined();
    expect(refusal(at("cli/init.ts"), at("tools/redis-rest/cli.ts"), false)).toBeUndefined();
    expect(refusal(at("tools/redis-rest/cli.ts"), at("cli/init.ts"), false)).toContain("higher");
    expect(at("index.ts").layer).toBe("engine");
    expect(at("tools/redis-rest/serve.ts").layer).toBe("tools");
  });
});
