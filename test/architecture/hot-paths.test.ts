/**
 * A rule of docs/adr/0027-objects-on-hot-paths.md, checked: in the files that run once per
 * request, per job or per delivery (below), no object literal starts with a spread and goes on
 * with more members (`{ ...job, status }`, `{ ...a, ...b }`). On Node 20 such a literal costs
 * 1–3 µs, 10–30 times `Object.assign({}, job, { status })` or assigning to a fresh object; the
 * submit path had three of them. A literal that starts with a plain member and spreads later
 * (`{ id, ...(x ? { x } : {}) }`) is fast, and so is a lone spread (`{ ...job }`).
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");

/** The files on the submit, tick and delivery paths. */
const HOT_FILES = [
  "src/core/message-json.ts",
  "src/store/redis/jobs.ts",
  "src/store/redis/batch.ts",
  "src/store/redis/runs.ts",
  "src/store/redis/tick.ts",
  "src/store/redis/codec.ts",
  "src/store/redis/script.ts",
  "src/store/memory/jobs.ts",
  "src/engine/jobs.ts",
  "src/engine/batch.ts",
  "src/engine/admission.ts",
  "src/engine/actor.ts",
  "src/engine/publish.ts",
  "src/engine/runner.ts",
  "src/engine/ticker.ts",
  "src/engine/logger.ts",
  "src/engine/tracing.ts",
  "src/transport/qstash/qstash-transport.ts",
  "src/transport/qstash/publish-request.ts",
  "src/transport/qstash/batch-wire.ts",
  "src/http/serialize.ts",
  "src/http/routes/jobs.ts",
  "src/http/routes/batch.ts",
  "src/http/middleware/auth.ts",
  "src/http/middleware/body.ts",
  "src/http/middleware/rate-limit.ts",
  "src/http/middleware/request-id.ts",
  "src/http/middleware/scope.ts",
];

/** `file:line: text` of each object literal in `source` that starts with a spread and goes on. */
function spreadFirstLiterals(file: string, source: string): string[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isObjectLiteralExpression(node)) {
      const [first, ...rest] = node.properties;
      if (first && rest.length > 0 && ts.isSpreadAssignment(first)) {
        const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
        found.push(`${file}:${line + 1}: ${node.getText(sf).replace(/\s+/g, " ").slice(0, 80)}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

describe("objects on hot paths (docs/adr/0027-objects-on-hot-paths.md)", () => {
  it("finds the pattern it forbids (the check can fail)", () => {
    const sample = [
      "const a = { ...job, status };",
      "const b = { ...x, ...y };",
      "const ok1 = { id, ...(x ? { x } : {}) };",
      "const ok2 = { ...job };",
      "const ok3 = Object.assign({}, job, { status });",
    ].join("\n");
    expect(spreadFirstLiterals("sample.ts", sample)).toEqual([
      "sample.ts:1: { ...job, status }",
      "sample.ts:2: { ...x, ...y }",
    ]);
  });

  it("no literal in a per-request, per-job or per-delivery file starts with a spread and goes on", () => {
    const found = HOT_FILES.flatMap((file) =>
      spreadFirstLiterals(file, readFileSync(join(ROOT, file), "utf8")),
    );
    expect(found).toEqual([]);
  });
});
