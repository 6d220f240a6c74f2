/**
 * The package's entries, two ways: `exports` in package.json (what users import, in dist/) and
 * `paths` in tsconfig.json (what `tickwork/…` means inside this repository, in src/). They must
 * name the same entries, each pointing at the same module.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ROOT } from "../dev/server.ts";

const json = (path: string) => JSON.parse(readFileSync(`${ROOT}/${path}`, "utf8"));
/** tsconfig.json has comments: strip them before parsing. */
const tsconfig = JSON.parse(
  readFileSync(`${ROOT}/tsconfig.json`, "utf8").replace(/^\s*\/\/.*$/gm, ""),
) as { compilerOptions: { paths: Record<string, string[]> } };

describe("package entries", () => {
  it("exports (dist) and tsconfig paths (src) name the same modules", () => {
    const exports = json("package.json").exports as Record<
      string,
      string | { types: string; default: string }
    >;
    const fromExports: Record<string, string> = {};
    for (const [entry, target] of Object.entries(exports)) {
      if (typeof target === "string") continue; // ./package.json
      expect(target.types, entry).toBe(target.default.replace(/\.js$/, ".d.ts"));
      const name = entry === "." ? "tickwork" : `tickwork/${entry.slice(2)}`;
      fromExports[name] = target.default.replace(/^\.\/dist\//, "./src/").replace(/\.js$/, ".ts");
    }
    const fromPaths = Object.fromEntries(
      Object.entries(tsconfig.compilerOptions.paths).map(([name, [path]]) => [name, path]),
    );
    expect(fromPaths).toEqual(fromExports);
  });
});
