/**
 * A strict reader for the YAML the files in `infra/` are written in (no YAML library is installed,
 * and none is worth adding for this): block mappings and sequences by indentation (spaces only),
 * `- key: value` items, plain, single- and double-quoted scalars, flow sequences of scalars
 * (`["start", "--role", "tick"]`), the empty `{}` and `[]`, comments and `---` between documents.
 * Anything else — anchors, tags, block scalars, flow mappings with content, tabs, a bad indent,
 * a duplicate key — is an error, so a file it reads means the same to any YAML parser.
 */

type Value = null | boolean | number | string | Value[] | { [key: string]: Value };

interface Line {
  /** 1-based, for errors. */
  number: number;
  indent: number;
  text: string;
}

/** Every document of `source`, in order. */
export function parseYamlDocuments(source: string): Value[] {
  const documents: Line[][] = [[]];
  source.split("\n").forEach((raw, index) => {
    if (/^---\s*$/.test(raw)) {
      documents.push([]);
      return;
    }
    if (raw.includes("\t")) throw new SyntaxError(`line ${index + 1}: tab character`);
    const text = stripComment(raw).trimEnd();
    if (text.trim() === "") return;
    const indent = text.length - text.trimStart().length;
    documents.at(-1)?.push({ number: index + 1, indent, text: text.trimStart() });
  });
  return documents
    .filter((lines) => lines.length > 0)
    .map((lines) => {
      const cursor = { i: 0 };
      const value = parseBlock(lines, cursor, lines[0]?.indent ?? 0);
      const extra = lines[cursor.i];
      if (extra) throw new SyntaxError(`line ${extra.number}: unexpected indentation`);
      return value;
    });
}

function parseBlock(lines: Line[], cursor: { i: number }, indent: number): Value {
  const first = lines[cursor.i];
  if (!first || first.indent !== indent) throw new SyntaxError("expected a block");
  return isItem(first.text)
    ? parseSequence(lines, cursor, indent)
    : parseMapping(lines, cursor, indent);
}

function parseSequence(lines: Line[], cursor: { i: number }, indent: number): Value[] {
  const items: Value[] = [];
  for (let line = lines[cursor.i]; line?.indent === indent && isItem(line.text); ) {
    const rest = line.text.slice(1).trimStart();
    if (rest === "") {
      cursor.i++;
      items.push(parseNested(lines, cursor, indent, line));
    } else if (splitKey(rest)) {
      // `- key: value`: a mapping whose keys line up with `key`.
      const column = indent + line.text.length - rest.length;
      lines[cursor.i] = { number: line.number, indent: column, text: rest };
      items.push(parseMapping(lines, cursor, column));
    } else {
      cursor.i++;
      items.push(parseScalar(rest, line.number));
    }
    line = lines[cursor.i];
  }
  return items;
}

function parseMapping(lines: Line[], cursor: { i: number }, indent: number): Record<string, Value> {
  const map: Record<string, Value> = {};
  for (let line = lines[cursor.i]; line?.indent === indent; line = lines[cursor.i]) {
    if (isItem(line.text)) throw new SyntaxError(`line ${line.number}: a list item among keys`);
    const entry = splitKey(line.text);
    if (!entry) throw new SyntaxError(`line ${line.number}: expected "key: value"`);
    const [key, rest] = entry;
    if (Object.hasOwn(map, key)) throw new SyntaxError(`line ${line.number}: duplicate key ${key}`);
    cursor.i++;
    map[key] =
      rest === "" ? parseNested(lines, cursor, indent, line, true) : parseScalar(rest, line.number);
  }
  return map;
}

/** The block under `parent`: more indented, or (for a key) a sequence at the same indent. */
function parseNested(
  lines: Line[],
  cursor: { i: number },
  indent: number,
  parent: Line,
  sameIndentList = false,
): Value {
  const next = lines[cursor.i];
  if (next && next.indent > indent) return parseBlock(lines, cursor, next.indent);
  if (sameIndentList && next?.indent === indent && isItem(next.text)) {
    return parseSequence(lines, cursor, indent);
  }
  if (next && next.indent > parent.indent) {
    throw new SyntaxError(`line ${next.number}: unexpected indentation`);
  }
  return null;
}

function isItem(text: string): boolean {
  return text === "-" || text.startsWith("- ");
}

/** `key: rest` (key plain or quoted), or undefined when the text is not a mapping entry. */
function splitKey(text: string): [string, string] | undefined {
  const quoted = /^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*')\s*:(?:\s+|$)(.*)$/.exec(text);
  if (quoted) return [parseScalar(quoted[1] as string, 0) as string, quoted[2] ?? ""];
  const plain = /^([^\s"'#[\]{},&*!|>%@`-][^:]*?|-[^\s:][^:]*?)\s*:(?:\s+|$)(.*)$/.exec(text);
  return plain ? [plain[1] as string, plain[2] ?? ""] : undefined;
}

function parseScalar(text: string, lineNumber: number): Value {
  if (text === "{}") return {};
  if (text === "[]") return [];
  if (text.startsWith("[")) {
    if (!text.endsWith("]")) throw new SyntaxError(`line ${lineNumber}: unclosed [`);
    return splitFlow(text.slice(1, -1), lineNumber).map((item) => parseScalar(item, lineNumber));
  }
  if (text.startsWith('"')) {
    if (!/^"(?:[^"\\]|\\.)*"$/.test(text)) throw new SyntaxError(`line ${lineNumber}: bad string`);
    return JSON.parse(text) as string;
  }
  if (text.startsWith("'")) {
    if (!/^'(?:[^']|'')*'$/.test(text)) throw new SyntaxError(`line ${lineNumber}: bad string`);
    return text.slice(1, -1).replaceAll("''", "'");
  }
  if (/^[&*!|>%@`{]/.test(text) || /:\s/.test(text)) {
    throw new SyntaxError(`line ${lineNumber}: outside the supported subset: ${text}`);
  }
  if (/^(null|~)$/.test(text)) return null;
  if (/^(true|false)$/.test(text)) return text === "true";
  if (/^[-+]?\d+$/.test(text)) return Number(text);
  if (/^[-+]?(\d+\.\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) return Number(text);
  return text;
}

/** Split the inside of a flow sequence at commas outside quotes. */
function splitFlow(inner: string, lineNumber: number): string[] {
  const items: string[] = [];
  let current = "";
  let quote: string | undefined;
  for (let i = 0; i < inner.length; i++) {
    const char = inner[i] as string;
    if (quote) {
      current += char;
      if (char === "\\" && quote === '"') current += inner[++i] ?? "";
      else if (char === quote) quote = undefined;
    } else if (char === '"' || char === "'") {
      quote = char;
      current += char;
    } else if (char === ",") {
      items.push(current.trim());
      current = "";
    } else if ("[]{}".includes(char)) {
      throw new SyntaxError(`line ${lineNumber}: nested flow collections are not supported`);
    } else {
      current += char;
    }
  }
  if (quote) throw new SyntaxError(`line ${lineNumber}: unclosed quote`);
  if (current.trim() !== "" || items.length > 0) items.push(current.trim());
  return items;
}

/** The line without a comment: `#` at its start or after a space, outside quotes. */
function stripComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const char = line[i];
    if (quote) {
      if (char === "\\" && quote === '"') i++;
      else if (char === quote) quote = undefined;
    } else if (char === '"' || char === "'") {
      // Quotes open a scalar only at its start (after `: `, `- `, `[`, `,` or the indent).
      if (/(^|[\s[,])$/.test(line.slice(0, i))) quote = char;
    } else if (char === "#" && (i === 0 || /\s/.test(line[i - 1] ?? ""))) {
      return line.slice(0, i);
    }
  }
  return line;
}
