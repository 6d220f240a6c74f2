/**
 * The configuration and its building blocks: `defineConfig`/`parseConfig` name every problem;
 * the published JSON schema is the one the zod schema gives; handler globs agree with a reference
 * matcher (fast-check); the key ring finds exactly the keys it holds, hashes as SHA-256 does, and
 * compares every candidate; the JSON depth count and the reserved-key walk agree with reference
 * walks; `tickwork hash-key` prints a key and its hash.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runHashKeyCommand } from "../../src/adapter/node/hash-key.ts";
import {
  ConfigValidationError,
  compileGlobs,
  defineConfig,
  generateKey,
  hashKey,
  KeyRing,
  parseConfig,
  quotaWindows,
} from "../../src/config/index.ts";
import { CONFIG_SCHEMA_FILE, configJsonSchemaText } from "../../src/config/json-schema.ts";
import { bodyIssues, jsonDepth } from "../../src/core/schemas.ts";
import { ROOT } from "../dev/server.ts";

const HASH = `sha256:${"ab".repeat(32)}`;

describe("defineConfig and parseConfig", () => {
  it("returns a valid configuration as given", () => {
    const config = {
      tenants: [
        {
          id: "acme",
          keys: [{ id: "ci", hash: HASH, scopes: ["jobs:write" as const, "read" as const] }],
          manifest: {
            submit: ["email.*"],
            quotas: { submit: { perMinute: 100, windows: [{ limit: 5, windowMs: 10_000 }] } },
            maxTimeoutMs: 60_000,
          },
        },
      ],
      cors: { origins: ["https://app.example.com"] },
      degradation: { critical: "delay" as const, criticalDelayMs: 5_000 },
    };
    expect(defineConfig(config)).toBe(config);
    expect(parseConfig(JSON.stringify(config), "file.json")).toEqual(config);
  });

  it("names every problem with its path", () => {
    const bad = {
      tenants: [
        { id: "acme", keys: [{ hash: "sha256:XYZ", scopes: ["root"] }] },
        { id: "acme", keys: [{ hash: HASH, scopes: ["read"] }] },
        { id: "globex", keys: [{ hash: HASH, scopes: ["read"] }], manifest: { submit: ["a b"] } },
        { id: "bad id!", keys: [] },
      ],
      cors: { origins: ["*"], credentials: true },
      degradation: { queueDepth: { normal: 10, degraded: 5, critical: 1 } },
      extra: 1,
    };
    let error: unknown;
    try {
      parseConfig(bad, "tickwork.config.json");
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigValidationError);
    const paths = (error as ConfigValidationError).issues.map((i) => i.path);
    expect(paths).toEqual([
      "tenants.0.keys.0.hash",
      "tenants.0.keys.0.scopes.0",
      "tenants.2.manifest.submit.0",
      "tenants.3.id",
      "tenants.3.keys",
      "cors.credentials",
      "degradation.queueDepth",
      "",
    ]);
    // Duplicates are judged once every entry is well-formed.
    const duplicates = {
      tenants: [
        { id: "acme", keys: [{ hash: HASH, scopes: ["read"] }] },
        { id: "acme", keys: [{ id: "k", hash: `sha256:${"cd".repeat(32)}`, scopes: ["read"] }] },
        {
          id: "globex",
          keys: [
            { id: "k", hash: HASH, scopes: ["read"] },
            { id: "k", hash: `sha256:${"ef".repeat(32)}`, scopes: ["read"] },
          ],
        },
      ],
    };
    expect(() => parseConfig(duplicates)).toThrow(ConfigValidationError);
    try {
      parseConfig(duplicates);
    } catch (e) {
      expect((e as ConfigValidationError).issues.map((i) => i.path)).toEqual([
        "tenants.1.id",
        "tenants.2.keys.0.hash",
        "tenants.2.keys.1.id",
      ]);
    }
    expect((error as Error).message).toContain("tickwork.config.json is not a valid");
    expect(() => parseConfig("{not json", "x.json")).toThrow(
      /x.json is not a valid[\s\S]*not JSON/,
    );
    // Where it broke, never a snippet of the text: a configuration holds secrets.
    const broken = '{"webhooks":{"stripe":{"secrets":[whsec_TOPSECRET]}}}';
    expect(() => parseConfig(broken, "x.json")).toThrow(/not JSON/);
    expect(() => parseConfig('{"a":1,}', "x.json")).toThrow(/not JSON \(at character \d+\)/);
    expect(() => parseConfig(broken, "x.json")).not.toThrow(/TOPSECRET|whsec/);
    expect(() => defineConfig({ tenants: [{ id: "a", keys: [] }] })).toThrow(ConfigValidationError);
  });

  it("retention: whole numbers in range, nothing else", () => {
    const ok = { jobMs: 86_400_000, idempotencyMs: 1, maxFinishedJobs: 0, maxRunsPerSchedule: 10 };
    expect(parseConfig({ retention: ok }).retention).toEqual(ok);
    expect(parseConfig({ retention: {} }).retention).toEqual({});
    const paths = (retention: unknown) => {
      try {
        parseConfig({ retention });
      } catch (e) {
        return [...new Set((e as ConfigValidationError).issues.map((i) => i.path))];
      }
      return [];
    };
    // Numeric extremes, fractions, text, negatives, an unknown name, an inherited one.
    expect(paths({ jobMs: 1e300 })).toEqual(["retention.jobMs"]);
    expect(paths({ idempotencyMs: 0 })).toEqual(["retention.idempotencyMs"]);
    expect(paths({ maxFinishedJobs: 1.5 })).toEqual(["retention.maxFinishedJobs"]);
    expect(paths({ maxRunsPerSchedule: -1 })).toEqual(["retention.maxRunsPerSchedule"]);
    expect(paths({ jobMs: "7d" })).toEqual(["retention.jobMs"]);
    expect(paths({ keepForever: true })).toEqual(["retention"]);
    expect(paths(JSON.parse('{"__proto__": {"jobMs": 1}}'))).not.toEqual([]);
    expect(paths([1])).toEqual(["retention"]);
  });

  it("the README's example configuration is valid (its hash filled in)", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## Security & admission control"));
    const json = /```json\n([\s\S]*?)\n```/.exec(section)?.[1];
    expect(json).toBeDefined();
    const config = parseConfig(json!.replace('"sha256:…"', `"${HASH}"`), "README.md");
    expect(config.tenants?.[0]?.manifest?.quotas?.submit).toEqual({
      perMinute: 100,
      perDay: 10_000,
    });
  });

  it("quota limits become sliding windows, shortest first", () => {
    expect(
      quotaWindows({ perDay: 1_000, perMinute: 10, windows: [{ limit: 3, windowMs: 2_000 }] }),
    ).toEqual([
      { windowMs: 2_000, limit: 3 },
      { windowMs: 60_000, limit: 10 },
      { windowMs: 86_400_000, limit: 1_000 },
    ]);
  });

  it("the published JSON schema is the one the zod schema gives", () => {
    const published = readFileSync(join(ROOT, CONFIG_SCHEMA_FILE), "utf8");
    const schema = JSON.parse(published);
    expect(schema, "run: npx tsx scripts/gen-config-schema.ts").toEqual(
      JSON.parse(configJsonSchemaText()),
    );
    expect(schema.properties.tenants.items.properties.keys.items.properties.hash.pattern).toBe(
      "^sha256:[0-9a-f]{64}$",
    );
    expect(schema.additionalProperties).toBe(false);
  });
});

/** A reference glob matcher, written differently: backtracking over characters. */
function reference(pattern: string, name: string): boolean {
  const go = (p: number, n: number): boolean => {
    if (p === pattern.length) return n === name.length;
    if (pattern.startsWith("**", p)) {
      for (let k = n; k <= name.length; k++) if (go(p + 2, k)) return true;
      return false;
    }
    if (pattern[p] === "*") {
      for (let k = n; k <= name.length; k++) {
        if (go(p + 1, k)) return true;
        if (name[k] === ".") return false;
      }
      return false;
    }
    return n < name.length && pattern[p] === name[n] && go(p + 1, n + 1);
  };
  return go(0, 0);
}

describe("handler globs", () => {
  const segment = fc.stringMatching(/^[a-c]{1,3}$/);
  const name = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join("."));
  const pattern = fc
    .array(fc.oneof(segment, fc.constantFrom("*", "**", "a*", "*b", ".")), {
      minLength: 1,
      maxLength: 6,
    })
    .map((parts) => parts.join(""));

  it("agree with a reference matcher on random names and patterns", () => {
    fc.assert(
      fc.property(pattern, name, (p, n) => {
        expect(compileGlobs([p])(n)).toBe(reference(p, n));
      }),
      { numRuns: 2_000 },
    );
  });

  it("follow the documented examples; a list matches when any pattern does", () => {
    const allowed = compileGlobs(["email.*", "reports.**", "report-*"]);
    expect(
      ["email.send", "reports.daily", "reports.daily.pdf", "report-sales"].map(allowed),
    ).toEqual([true, true, true, true]);
    expect(["email.send.bulk", "emails.send", "report-sales.pdf", "billing"].map(allowed)).toEqual([
      false,
      false,
      false,
      false,
    ]);
    expect(compileGlobs([])("anything")).toBe(false);
    expect(() => compileGlobs(["a b"])).toThrow(RangeError);
  });
});

describe("API keys", () => {
  it("hashKey is the SHA-256 of the key's UTF-8 bytes; generated keys are distinct", async () => {
    for (const key of ["k", "tw_😀", generateKey()]) {
      expect(await hashKey(key)).toBe(
        `sha256:${createHash("sha256").update(key, "utf8").digest("hex")}`,
      );
    }
    const keys = new Set(Array.from({ length: 100 }, generateKey));
    expect(keys.size).toBe(100);
    for (const key of keys) expect(key).toMatch(/^tw_[A-Za-z0-9_-]{43}$/);
  });

  it("the ring finds exactly the keys it holds, whichever position they have", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.string({ minLength: 1, maxLength: 20 }), { minLength: 1, maxLength: 8 }),
        fc.string({ maxLength: 20 }),
        async (keys, other) => {
          const ring = new KeyRing(
            await Promise.all(keys.map(async (key, i) => ({ hash: await hashKey(key), value: i }))),
          );
          for (const [i, key] of keys.entries()) expect(await ring.find(key)).toBe(i);
          expect(await ring.find(other)).toBe(
            keys.includes(other) ? keys.indexOf(other) : undefined,
          );
          // A key that matched is found again at once, without a promise; one that did not is
          // hashed again (never remembered, so unknown keys cannot fill the memory).
          for (const [i, key] of keys.entries()) expect(ring.lookup(key)).toBe(i);
          if (!keys.includes(other)) {
            const again = ring.lookup(other);
            expect(again).toBeInstanceOf(Promise);
            expect(await again).toBeUndefined();
          }
        },
      ),
      { numRuns: 200 },
    );
    expect(() => new KeyRing([{ hash: "sha256:00", value: 1 }])).toThrow(RangeError);
  });
});

describe("JSON limits", () => {
  const depthOf = (v: unknown): number =>
    typeof v === "object" && v !== null
      ? 1 + Math.max(0, ...Object.values(v as Record<string, unknown>).map(depthOf))
      : 0;

  it("jsonDepth counts nesting without parsing, strings and escapes skipped", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), (v) => {
        expect(jsonDepth(JSON.stringify(v), 100)).toBe(depthOf(v));
      }),
      { numRuns: 1_000 },
    );
    expect(jsonDepth('{"a":"\\"[[[{"}', 10)).toBe(1);
    expect(jsonDepth("[".repeat(1_000), 32)).toBe(33);
  });

  it("bodyIssues finds a reserved key wherever it is put, with its path", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.stringMatching(/^[a-z]{1,4}$/), fc.nat(3)), { maxLength: 6 }),
        fc.constantFrom("__proto__", "constructor", "prototype"),
        (path, key) => {
          let value: unknown = JSON.parse(`{${JSON.stringify(key)}:1}`);
          for (const step of [...path].reverse()) {
            if (typeof step === "number") {
              const array: unknown[] = Array.from({ length: step + 1 }, () => 0);
              array[step] = value;
              value = array;
            } else value = { [step]: value };
          }
          const issues = bodyIssues(value);
          expect(issues.map((i) => i.path)).toEqual([[...path, key].join(".")]);
        },
      ),
      { numRuns: 500 },
    );
    expect(bodyIssues({ a: "__proto__", b: ["constructor"] })).toEqual([]);
  });
});

describe("tickwork hash-key", () => {
  it("generates a key and prints its hash and a tenant snippet", async () => {
    const out: string[] = [];
    expect(
      await runHashKeyCommand(["--tenant", "acme", "--scopes", "read"], {
        out: (t) => out.push(t),
      }),
    ).toBe(0);
    const key = /^key {3}(\S+)$/m.exec(out[0]!)?.[1];
    const hash = /^hash {2}(\S+)$/m.exec(out[0]!)?.[1];
    expect(hash).toBe(await hashKey(key!));
    const snippet = JSON.parse(/^ {2}(\{.*\})$/m.exec(out[0]!)![1]!);
    expect(parseConfig({ tenants: [snippet] }).tenants?.[0]).toEqual({
      id: "acme",
      keys: [{ hash, scopes: ["read"] }],
    });
  });

  it("hashes a key from stdin (trailing newline dropped); refuses bad input", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
    expect(await runHashKeyCommand(["--stdin"], { ...io, stdin: async () => "s3cret\n" })).toBe(0);
    expect(out).toEqual([await hashKey("s3cret")]);
    expect(await runHashKeyCommand(["--stdin"], { ...io, stdin: async () => "two words" })).toBe(2);
    expect(await runHashKeyCommand(["--scopes", "root"], io)).toBe(2);
    expect(await runHashKeyCommand(["--bogus"], io)).toBe(2);
    expect(err.join("\n")).toContain('unknown scope "root"');
    // A tenant id the configuration would refuse gets no snippet.
    for (const tenant of ["acme corp", "", "a:b", "x".repeat(65), ".lead"]) {
      out.length = 0;
      expect(await runHashKeyCommand(["--tenant", tenant], io)).toBe(2);
      expect(out).toEqual([]);
    }
    expect(err.at(-1)).toContain('--tenant ".lead": id must match');
  });
});
