/**
 * A strict parser of the Prometheus text exposition format 0.0.4, for the tests: it throws on
 * anything the format does not allow (and on what it merely tolerates but we promise not to do:
 * a family without `# HELP` and `# TYPE`, a sample before its `# TYPE`, a family split in two,
 * a repeated series). Histograms are checked too: `le` buckets increasing, counts cumulative,
 * a `+Inf` bucket equal to `_count`, and `_sum`.
 */

export type MetricType = "counter" | "gauge" | "histogram" | "summary" | "untyped";

export interface Sample {
  /** The sample's own name (`x_bucket`, `x_sum`, … for histograms). */
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  help: string;
  type: MetricType;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES: readonly MetricType[] = ["counter", "gauge", "histogram", "summary", "untyped"];

/** Parse `text`; throws an `Error` naming the line for any violation. */
export function parsePrometheus(text: string): Map<string, Family> {
  if (text.length > 0 && !text.endsWith("\n")) throw new Error("exposition must end with \\n");
  const families = new Map<string, Family>();
  /** Which of HELP and TYPE each family has had. */
  const declared = new Map<string, Set<string>>();
  const series = new Set<string>();
  let current: Family | undefined;
  const lines = text.split("\n");
  lines.pop();
  for (const [index, line] of lines.entries()) {
    const fail = (why: string) => new Error(`line ${index + 1}: ${why}: ${JSON.stringify(line)}`);
    if (line === "") continue;
    if (line.startsWith("#")) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) continue; // a plain comment
      const [, keyword, name = "", rest = ""] = m;
      if (!METRIC_NAME.test(name)) throw fail("bad metric name");
      let family = families.get(name);
      if (family && family !== current) throw fail(`family ${name} is split`);
      if (!family) {
        if (current && current.samples.length === 0)
          throw fail(`family ${current.name} has no samples`);
        family = { name, help: "", type: "untyped", samples: [] };
        families.set(name, family);
        declared.set(name, new Set());
        current = family;
      }
      const seen = declared.get(name) as Set<string>;
      if (seen.has(keyword as string)) throw fail(`second ${keyword} for ${name}`);
      if (family.samples.length > 0) throw fail(`${keyword} after samples of ${name}`);
      seen.add(keyword as string);
      if (keyword === "HELP") {
        family.help = unescapeHelp(rest, fail);
      } else {
        if (!(TYPES as readonly string[]).includes(rest)) throw fail("unknown type");
        family.type = rest as MetricType;
      }
      continue;
    }
    const sample = parseSample(line, fail);
    if (!current) throw fail("sample before any # TYPE");
    const seen = declared.get(current.name) as Set<string>;
    if (!seen.has("HELP") || !seen.has("TYPE"))
      throw fail(`family ${current.name} lacks HELP or TYPE`);
    if (!belongsTo(sample.name, current)) throw fail(`sample outside its family ${current.name}`);
    const key = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
    if (series.has(key)) throw fail("repeated series");
    series.add(key);
    if (current.type === "counter" && !(sample.value >= 0)) throw fail("counter below 0 or NaN");
    current.samples.push(sample);
  }
  for (const family of families.values()) {
    if (family.samples.length === 0) throw new Error(`family ${family.name} has no samples`);
    if (family.type === "histogram") checkHistogram(family);
  }
  return families;
}

/** The value of the one sample of `name` with exactly `labels` (throws when absent). */
export function sampleValue(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number {
  for (const family of families.values()) {
    for (const s of family.samples) {
      if (s.name !== name) continue;
      const keys = Object.keys(s.labels);
      if (keys.length !== Object.keys(labels).length) continue;
      if (keys.every((k) => s.labels[k] === labels[k])) return s.value;
    }
  }
  throw new Error(`no sample ${name}${JSON.stringify(labels)}`);
}

function belongsTo(sample: string, family: Family): boolean {
  if (family.type === "histogram") {
    return ["_bucket", "_sum", "_count"].some((suffix) => sample === family.name + suffix);
  }
  if (family.type === "summary") {
    return (
      sample === family.name || sample === `${family.name}_sum` || sample === `${family.name}_count`
    );
  }
  return sample === family.name;
}

function parseSample(line: string, fail: (why: string) => Error): Sample {
  // Label values may hold any character but a raw line feed (a carriage return included).
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^\n]*\})? (\S+)(?: (-?\d+))?$/.exec(line);
  if (!m) throw fail("not a sample line");
  const [, name = "", rawLabels, rawValue = ""] = m;
  return {
    name,
    labels: rawLabels ? parseLabels(rawLabels, fail) : {},
    value: parseValue(rawValue, fail),
  };
}

function parseLabels(text: string, fail: (why: string) => Error): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 1; // after "{"
  const end = text.length - 1; // the "}"
  while (i < end) {
    const eq = text.indexOf("=", i);
    if (eq < 0) throw fail("label without =");
    const name = text.slice(i, eq);
    if (!LABEL_NAME.test(name) || name.startsWith("__"))
      throw fail(`bad label name ${JSON.stringify(name)}`);
    if (name in labels) throw fail(`repeated label ${name}`);
    if (text[eq + 1] !== '"') throw fail("label value not quoted");
    let value = "";
    let j = eq + 2;
    for (;;) {
      const ch = text[j];
      if (ch === undefined || j >= end + 1) throw fail("unterminated label value");
      if (ch === '"') break;
      if (ch === "\n") throw fail("raw line feed in label value");
      if (ch === "\\") {
        const next = text[j + 1];
        if (next === "\\") value += "\\";
        else if (next === '"') value += '"';
        else if (next === "n") value += "\n";
        else throw fail("bad escape in label value");
        j += 2;
        continue;
      }
      value += ch;
      j++;
    }
    labels[name] = value;
    i = j + 1;
    if (text[i] === ",") i++;
    else if (i !== end) throw fail("labels not separated by ,");
  }
  if (i !== end) throw fail("bad label set");
  return labels;
}

function parseValue(text: string, fail: (why: string) => Error): number {
  if (text === "+Inf") return Number.POSITIVE_INFINITY;
  if (text === "-Inf") return Number.NEGATIVE_INFINITY;
  if (text === "NaN") return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw fail(`bad value ${text}`);
  return Number(text);
}

function unescapeHelp(text: string, fail: (why: string) => Error): string {
  return text.replace(/\\(.?)/g, (_, ch: string) => {
    if (ch === "\\") return "\\";
    if (ch === "n") return "\n";
    throw fail("bad escape in HELP");
  });
}

/** `le` ascending and unique, counts cumulative, `+Inf` last and equal to `_count`, one `_sum`. */
function checkHistogram(family: Family): void {
  const groups = new Map<string, Sample[]>();
  for (const s of family.samples) {
    const { le, ...rest } = s.labels;
    if (s.name.endsWith("_bucket") && le === undefined) throw new Error(`${s.name} without le`);
    const key = JSON.stringify(Object.entries(rest).sort());
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  for (const samples of groups.values()) {
    const buckets = samples.filter((s) => s.name.endsWith("_bucket"));
    const count = samples.filter((s) => s.name.endsWith("_count"));
    const sum = samples.filter((s) => s.name.endsWith("_sum"));
    if (count.length !== 1 || sum.length !== 1)
      throw new Error(`${family.name}: one _sum and one _count`);
    let previous = { le: Number.NEGATIVE_INFINITY, value: 0 };
    for (const bucket of buckets) {
      const le = parseValue(
        bucket.labels.le ?? "",
        (why) => new Error(`${family.name}: le ${why}`),
      );
      if (!(le > previous.le)) throw new Error(`${family.name}: le not increasing at ${le}`);
      if (bucket.value < previous.value)
        throw new Error(`${family.name}: bucket counts decrease at le=${le}`);
      previous = { le, value: bucket.value };
    }
    if (previous.le !== Number.POSITIVE_INFINITY) throw new Error(`${family.name}: no +Inf bucket`);
    if (previous.value !== count[0]?.value) {
      throw new Error(`${family.name}: +Inf bucket ${previous.value} != _count ${count[0]?.value}`);
    }
  }
}
