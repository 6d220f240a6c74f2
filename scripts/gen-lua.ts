/**
 * @module
 * Build step for the Redis store's Lua: reads `src/store/redis/lua/<operation>-<numKeys>.lua`,
 * inlines `--@include "name"` lines from `lua/includes/` (each include once per script, its
 * own includes first), and writes `src/store/redis/scripts.generated.ts` with every script's
 * `{ name, numberOfKeys, source, sha1 }`. The runtime never touches the filesystem (Workers
 * have none) and never hashes: the sha1 is fixed here.
 *
 * The generated module is compact: each include's text is written once, each script's own text
 * once, and every script lists its parts in the order this generator resolved them; the module
 * joins them when it is imported (synchronously, plain string concatenation). The joined text is
 * exactly the expanded source the sha1 was computed from (checked here and in `scripts.test.ts`).
 *
 * The file is not committed (`.gitignore`): `npm run build`, `npm test`, `npm run dev`,
 * `npm run bench` and `npm run chaos` write it first. Writing is skipped when the file is already
 * up to date.
 *
 * Usage: `npx tsx scripts/gen-lua.ts` to write, `--check` to fail when the file is not what
 * would be generated (without writing it).
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const luaDir = join(repo, "src/store/redis/lua");
const includesDir = join(luaDir, "includes");
/** Where the generated module is written. */
export const outputFile = join(repo, "src/store/redis/scripts.generated.ts");

const SCRIPT_FILE = /^([a-z][A-Za-z0-9]*)-(\d+)\.lua$/;
const INCLUDE_LINE = /^--@include\s+"([A-Za-z0-9_-]+)"\s*$/;
const LEADING_BLOCK_COMMENT = /^--\[\[[\s\S]*?\]\]\n*/;

/** One generated script. */
export interface GeneratedScript {
  name: string;
  numberOfKeys: number;
  source: string;
  sha1: string;
  /**
   * Where the script's own code starts in `source`: everything before is its header and its
   * includes (definitions only, never a call), everything from here on runs per call. A Redis
   * function library defines the part before once (see `functionLibrary` in `script.ts`).
   */
  bodyStart: number;
  /** It calls only commands that never write (see {@link readsOnly}): a `no-writes` function. */
  readOnly: boolean;
  file: string;
  /**
   * `source` as parts, in order: a string is text of the script itself, a number the index of a
   * shared include piece in {@link GeneratedModule.pieces}. `source` is every part followed by
   * a newline.
   */
  parts: (string | number)[];
}

/** Everything `scripts.generated.ts` holds. */
export interface GeneratedModule {
  scripts: GeneratedScript[];
  /** Include text shared by scripts: `<include>#<n>` names the include's text after its n-th own include line. */
  pieces: { key: string; text: string }[];
}

/**
 * One line of an expanded script and where it comes from: `""` for the script's own text, else
 * `<include>#<n>`: include `<include>`, after `n` of its own `--@include` lines (`#0` holds the
 * `-- include "<include>"` marker line). The lines of one origin are the same in every script.
 */
interface Line {
  text: string;
  origin: string;
}

const includeCache = new Map<string, string>();

/** An include's code: its file without the leading `--[[ ]]` header, trailing space trimmed. */
function includeCode(name: string): string {
  let code = includeCache.get(name);
  if (code === undefined) {
    let body: string;
    try {
      body = readFileSync(join(includesDir, `${name}.lua`), "utf8");
    } catch {
      throw new Error(`include "${name}" not found in ${relative(repo, includesDir)}`);
    }
    // An include's header documents it in its file; the script keeps a marker line only.
    code = body.replace(LEADING_BLOCK_COMMENT, "").trimEnd();
    includeCache.set(name, code);
  }
  return code;
}

/**
 * Inline includes into `text` (whose lines come from `include`, or the script when `""`),
 * appending lines to `out`; `seen` holds includes already inlined in this script.
 */
function expand(
  text: string,
  include: string,
  seen: Set<string>,
  stack: string[],
  out: Line[],
): void {
  let chunk = 0;
  const origin = () => (include === "" ? "" : `${include}#${chunk}`);
  for (const line of text.split("\n")) {
    const match = INCLUDE_LINE.exec(line);
    if (!match) {
      out.push({ text: line, origin: origin() });
      continue;
    }
    chunk += 1;
    const name = match[1]!;
    if (stack.includes(name)) throw new Error(`include cycle: ${[...stack, name].join(" -> ")}`);
    if (seen.has(name)) continue;
    seen.add(name);
    const code = includeCode(name);
    out.push({ text: `-- include "${name}"`, origin: `${name}#0` });
    expand(code, name, seen, [...stack, name], out);
  }
}

const FUNCTION_START = /^local function ([A-Za-z_][A-Za-z0-9_]*)\(/;
const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/g;

/**
 * Drops the include functions a script never calls. Every call of a script runs its whole text,
 * defining each `local function` of its includes anew (a closure each, with its upvalues): an
 * unused one costs Redis CPU on every call. A top-level include function — `local function
 * name(` at column 0 up to the next `end` at column 0 — is kept when its name appears (as a
 * word: in code or comments alike, so a doubt keeps it) in a kept line outside it; dropping one
 * may leave another unused, so this repeats until nothing changes.
 *
 * Lines are relabelled so a piece shared between scripts is one function, or the text between
 * two: `<include>#<n>.<k>` (k counts the blocks and gaps of that chunk), the same text in every
 * script that keeps it.
 */
function shake(lines: Line[]): Line[] {
  const blocks: { name: string; from: number; to: number }[] = [];
  const out = lines.map((l) => ({ ...l }));
  let k = 0;
  let base = "";
  for (let i = 0; i < out.length; i++) {
    const origin = lines[i]!.origin;
    if (origin === "") continue;
    if (origin !== base) {
      base = origin;
      k = 0;
    }
    const name = FUNCTION_START.exec(out[i]!.text)?.[1];
    if (name === undefined) {
      out[i]!.origin = `${origin}.${k}`;
      continue;
    }
    let j = i;
    while (j < out.length && !(lines[j]!.text === "end" && lines[j]!.origin === origin)) j++;
    if (j === out.length) {
      throw new Error(`include ${origin}: function ${name} has no \`end\` at column 0`);
    }
    k += 1;
    for (let x = i; x <= j; x++) out[x]!.origin = `${origin}.${k}`;
    blocks.push({ name, from: i, to: j });
    k += 1;
    i = j;
  }
  const owner = new Array<number>(out.length).fill(-1);
  for (const [n, b] of blocks.entries()) owner.fill(n, b.from, b.to + 1);
  const words = out.map((l) => new Set(l.text.match(IDENTIFIER) ?? []));
  // How many kept lines outside each block name it.
  const uses = new Map<string, number>();
  const count = (line: number, delta: number) => {
    for (const word of words[line]!) {
      if (uses.has(word) || blocks.some((b) => b.name === word)) {
        uses.set(word, (uses.get(word) ?? 0) + delta);
      }
    }
  };
  for (const b of blocks) uses.set(b.name, uses.get(b.name) ?? 0);
  const own = (n: number, word: string) =>
    words.slice(blocks[n]!.from, blocks[n]!.to + 1).filter((w) => w.has(word)).length;
  for (let i = 0; i < out.length; i++) count(i, 1);
  const dead = new Set<number>();
  for (let changed = true; changed; ) {
    changed = false;
    blocks.forEach((b, n) => {
      if (dead.has(n)) return;
      // Names used in kept lines, less this block's own mentions of its name.
      const outside = (uses.get(b.name) ?? 0) - own(n, b.name);
      const twin = blocks.some((o, m) => m !== n && !dead.has(m) && o.name === b.name);
      if (outside > 0 || twin) return;
      dead.add(n);
      changed = true;
      for (let i = b.from; i <= b.to; i++) count(i, -1);
    });
  }
  return out.filter((_, i) => owner[i] === -1 || !dead.has(owner[i]!));
}

/** Commands that never write. */
const READ_COMMANDS = new Set(
  [
    "EXISTS GET MGET STRLEN TYPE TTL PTTL TIME HGET HMGET HGETALL HEXISTS HLEN HKEYS HVALS HSCAN",
    "ZCARD ZCOUNT ZRANGE ZRANGEBYSCORE ZREVRANGE ZREVRANGEBYSCORE ZRANK ZREVRANK ZSCORE ZMSCORE",
    "ZSCAN LINDEX LLEN LRANGE SCARD SISMEMBER SMEMBERS SSCAN XLEN XRANGE XREVRANGE XPENDING",
    "XINFO",
  ]
    .join(" ")
    .split(" "),
);

/**
 * Whether every `redis.call`/`redis.pcall` in `source` names, as a literal, a command of
 * {@link READ_COMMANDS}, called directly or through `pcall(redis.call, …)`. A call with a
 * computed command name counts as a write. Such a script is registered with the `no-writes`
 * flag, so Redis runs it when over `maxmemory` (an unflagged function is refused there) and
 * would refuse any write it tried.
 */
export function readsOnly(source: string): boolean {
  for (const match of source.matchAll(/redis\.p?call\b/g)) {
    // Called at once (`redis.call(…)`, `redis.call (…)`) or through `pcall(redis.call, …)`, with a
    // literal command first; anything else (`local c = redis.call`) may call anything.
    const rest = source.slice(match.index! + match[0].length);
    const literal = /^\s*[(,]\s*'([A-Za-z]+)'\s*[,)]/.exec(rest);
    if (!literal || !READ_COMMANDS.has(literal[1]!.toUpperCase())) return false;
  }
  return true;
}

/** Checks a script's header and that it uses no key beyond `numberOfKeys`. */
function validate(file: string, raw: string, source: string, numberOfKeys: number): void {
  const header = /^--\[\[([\s\S]*?)\]\]/.exec(raw)?.[1];
  if (!header || !/Input/.test(header) || !/Output/.test(header)) {
    throw new Error(
      `${file}: must start with a --[[ ]] header naming Input (KEYS, ARGV) and Output`,
    );
  }
  const declared = [...header.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1]));
  const declaredMax = Math.max(0, ...declared);
  if (declaredMax !== numberOfKeys) {
    throw new Error(
      `${file}: header documents ${declaredMax} KEYS, the file name says ${numberOfKeys}`,
    );
  }
  const code = source.replace(/--\[\[[\s\S]*?\]\]/g, "").replace(/--[^\n]*/g, "");
  for (const m of code.matchAll(/KEYS\[(\d+)\]/g)) {
    if (Number(m[1]) > numberOfKeys)
      throw new Error(`${file}: uses KEYS[${m[1]}] of ${numberOfKeys}`);
  }
}

/**
 * Reads and expands every script, sorted by name, and splits each into the script's own text
 * and shared include pieces.
 */
export function buildModule(): GeneratedModule {
  const scripts: GeneratedScript[] = [];
  const shared = new Map<string, string>();
  const literal = new Set<string>();
  const expanded: { lines: Line[]; script: Omit<GeneratedScript, "parts"> }[] = [];
  for (const file of readdirSync(luaDir).sort()) {
    if (!file.endsWith(".lua")) continue;
    const match = SCRIPT_FILE.exec(file);
    if (!match) throw new Error(`${file}: script files are named <operation>-<numKeys>.lua`);
    const name = match[1]!;
    const numberOfKeys = Number(match[2]);
    const raw = readFileSync(join(luaDir, file), "utf8");
    const all: Line[] = [];
    expand(raw.trimEnd(), "", new Set(), [], all);
    const lines = shake(all);
    const source = `${lines
      .map((l) => l.text)
      .join("\n")
      .replace(/\n{3,}/g, "\n\n")}\n`;
    validate(file, raw, source, numberOfKeys);
    if (expanded.some((e) => e.script.name === name))
      throw new Error(`${file}: duplicate operation ${name}`);
    const sha1 = createHash("sha1").update(source, "utf8").digest("hex");
    // The same blank-line collapse, line by line, so the parts join to `source` exactly.
    const kept = lines.filter((l, i) => !(l.text === "" && i > 0 && lines[i - 1]!.text === ""));
    const bodyStart = startOfBody(file, kept);
    for (const run of runs(kept)) {
      if (run.origin === "") continue;
      const known = shared.get(run.origin);
      // A collapse that cut into an include makes that text differ: it stays the script's own.
      if (known !== undefined && known !== run.text) literal.add(run.origin);
      else shared.set(run.origin, run.text);
    }
    const readOnly = readsOnly(source);
    expanded.push({
      lines: kept,
      script: { name, numberOfKeys, source, sha1, bodyStart, readOnly, file },
    });
  }

  const keys = [...shared.keys()].filter((key) => !literal.has(key)).sort(byInclude);
  const index = new Map(keys.map((key, i) => [key, i]));
  for (const { lines, script } of expanded) {
    const parts: (string | number)[] = [];
    for (const run of runs(lines)) {
      const i = index.get(run.origin);
      const last = parts.length - 1;
      if (i !== undefined) parts.push(i);
      else if (typeof parts[last] === "string") parts[last] = `${parts[last]}\n${run.text}`;
      else parts.push(run.text);
    }
    const joined = parts.map((p) => `${typeof p === "number" ? shared.get(keys[p]!) : p}\n`);
    if (joined.join("") !== script.source) {
      throw new Error(`${script.file}: its parts do not join to its expanded source`);
    }
    scripts.push({ ...script, parts });
  }
  return { scripts, pieces: keys.map((key) => ({ key, text: shared.get(key)! })) };
}

/** Reads and expands every script, sorted by name. */
export function buildScripts(): GeneratedScript[] {
  return buildModule().scripts;
}

/**
 * The offset in the source (lines joined by newlines) of the first line after the script's last
 * include line. Every include line must come before the script's own code (its header comment
 * aside): a function library runs the includes once, the rest per call.
 */
function startOfBody(file: string, lines: Line[]): number {
  let last = -1;
  lines.forEach((l, i) => {
    if (l.origin !== "") last = i;
  });
  const code = (l: Line) => l.origin === "" && l.text.trim() !== "" && !l.text.startsWith("--");
  let inHeader = false;
  for (let i = 0; i < last; i++) {
    const l = lines[i]!;
    if (l.origin !== "") continue;
    if (l.text.startsWith("--[[")) inHeader = !l.text.includes("]]");
    else if (inHeader) inHeader = !l.text.includes("]]");
    else if (code(l)) throw new Error(`${file}: code before an --@include line: ${l.text}`);
  }
  return lines.slice(0, last + 1).reduce((n, l) => n + l.text.length + 1, 0);
}

/** Consecutive lines of one origin, joined. */
function runs(lines: Line[]): { origin: string; text: string }[] {
  const out: { origin: string; lines: string[] }[] = [];
  for (const line of lines) {
    const last = out.at(-1);
    if (last && last.origin === line.origin) last.lines.push(line.text);
    else out.push({ origin: line.origin, lines: [line.text] });
  }
  return out.map((r) => ({ origin: r.origin, text: r.lines.join("\n") }));
}

/** `<include>#<n>.<k>` keys by include name, then n, then k. */
function byInclude(a: string, b: string): number {
  const [an, ai] = a.split("#") as [string, string];
  const [bn, bi] = b.split("#") as [string, string];
  const [an1, an2] = ai.split(".").map(Number) as [number, number];
  const [bn1, bn2] = bi.split(".").map(Number) as [number, number];
  return an < bn ? -1 : an > bn ? 1 : an1 - bn1 || an2 - bn2;
}

function templateLiteral(text: string): string {
  return `\`${text.replaceAll("\\", "\\\\").replaceAll("`", "\\`").replaceAll("${", "\\${")}\``;
}

/** The text of `scripts.generated.ts`. */
export function generate(): string {
  const { scripts, pieces } = buildModule();
  const parts = [
    "// Generated by scripts/gen-lua.ts from src/store/redis/lua/. Do not edit: run `npm run gen`.",
    'import type { LuaScript } from "./script.ts";',
    "",
    "/**",
    " * Include text shared by the scripts, each piece once: `lua/includes/<name>.lua` without its",
    " * header, split after each of its own `--@include` lines (`name#n`: after the n-th).",
    " */",
    "const pieces: readonly string[] = [",
  ];
  pieces.forEach((piece, i) => {
    parts.push(`  // ${i}: ${piece.key}`, `  ${templateLiteral(piece.text)},`);
  });
  parts.push(
    "];",
    "",
    "/** A script's source: its parts in order, each followed by a newline; a number is a piece. */",
    "function assemble(parts: readonly (string | number)[]): string {",
    '  let source = "";',
    "  for (const part of parts) {",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: code of the generated module
    '    source += `${typeof part === "number" ? pieces[part] : part}\\n`;',
    "  }",
    "  return source;",
    "}",
    "",
  );
  for (const s of scripts) {
    const items = s.parts.map((p) =>
      typeof p === "number" ? `    ${p}, // ${pieces[p]!.key}` : `    ${templateLiteral(p)},`,
    );
    parts.push(
      `/** \`lua/${s.file}\` */`,
      `export const ${s.name}: LuaScript = {`,
      `  name: ${JSON.stringify(s.name)},`,
      `  numberOfKeys: ${s.numberOfKeys},`,
      `  sha1: ${JSON.stringify(s.sha1)},`,
      `  bodyStart: ${s.bodyStart},`,
      ...(s.readOnly ? ["  readOnly: true,"] : []),
      "  source: /* @__PURE__ */ assemble([",
      ...items,
      "  ]),",
      "};",
      "",
    );
  }
  parts.push(
    "/** Every script, by operation name. */",
    "export const scripts = {",
    ...scripts.map((s) => `  ${s.name},`),
    "} as const;",
    "",
  );
  return parts.join("\n");
}

function main(argv: string[]): number {
  const text = generate();
  const where = relative(repo, outputFile);
  let current = "";
  try {
    current = readFileSync(outputFile, "utf8");
  } catch {
    // missing counts as out of date
  }
  if (argv.includes("--check")) {
    if (current !== text) {
      console.error(`${where} is out of date with src/store/redis/lua: run \`npm run gen\`.`);
      return 1;
    }
    console.log(`${where} is up to date.`);
    return 0;
  }
  if (current === text) {
    console.log(`${where} is up to date.`);
    return 0;
  }
  // Written whole, then renamed into place: a process importing it meanwhile (a test, a dev
  // server started at the same time) reads the old file or the new one, never half of one.
  const temporary = `${outputFile}.${process.pid}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, outputFile);
  console.log(`wrote ${where}`);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = main(process.argv.slice(2));
}
