/**
 * The Prometheus rendering against a strict parser of the format: any stats render to a valid
 * exposition that reads back to the same numbers (property-based), and the parser itself rejects
 * what the format forbids (so a broken rendering cannot pass).
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { renderPrometheus } from "../../src/http/prometheus.ts";
import {
  type DegradationLevel,
  HISTOGRAM_BOUNDS_MS,
  type Histogram,
  type StoreStats,
} from "../../src/store/port.ts";
import { parsePrometheus, sampleValue } from "./prometheus-parser.ts";

const count = fc.nat({ max: 1e9 });
const ms = fc.nat({ max: 2 ** 40 });

const histogram: fc.Arbitrary<Histogram> = fc
  .tuple(
    fc.array(fc.nat({ max: 1e6 }), {
      minLength: HISTOGRAM_BOUNDS_MS.length + 1,
      maxLength: HISTOGRAM_BOUNDS_MS.length + 1,
    }),
    fc.double({ min: 0, max: 1e12, noNaN: true }),
  )
  .map(([counts, sum]) => ({
    bounds: HISTOGRAM_BOUNDS_MS,
    counts,
    sum,
    count: counts.reduce((a, b) => a + b, 0),
  }));

const level = fc.constantFrom<DegradationLevel>("normal", "degraded", "critical");

const stats: fc.Arbitrary<StoreStats> = fc.record({
  now: ms,
  jobs: fc.record({ queued: count, running: count, failed: count, waiting: count }),
  totals: fc.record({
    submitted: count,
    dispatched: count,
    recovered: count,
    started: count,
    succeeded: count,
    failed: count,
    dead: count,
    cancelled: count,
    skipped: count,
    limited: count,
    unplaced: count,
    retried: count,
    ticks: count,
  }),
  outbox: count,
  backlog: count,
  dispatchLagMs: histogram,
  handlerDurationMs: histogram,
  tickDurationMs: histogram,
  leaseAcquisitionMs: histogram,
  averages: fc.record({
    lagMs: fc.double({ min: 0, max: 1e9, noNaN: true }),
    failureRate: fc.double({ min: 0, max: 1, noNaN: true }),
  }),
  leader: fc.record({
    // Holders are instance ids: anything, quotes, backslashes and line feeds included.
    holder: fc.option(fc.string({ unit: "binary", maxLength: 40 }), { nil: null }),
    active: fc.boolean(),
    leaseRemainingMs: fc.nat({ max: 600_000 }),
    changes: count,
    flaps: count,
    acquiredAt: ms,
  }),
  degradation: fc.record({
    level,
    since: ms,
    signals: fc.record({
      queueDepth: count,
      lagMs: fc.double({ min: 0, max: 1e9, noNaN: true }),
      failureRate: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  }),
});

const HISTOGRAM_NAMES = {
  dispatchLagMs: "tickwork_dispatch_lag_seconds",
  handlerDurationMs: "tickwork_handler_duration_seconds",
  tickDurationMs: "tickwork_tick_duration_seconds",
  leaseAcquisitionMs: "tickwork_leader_lease_acquisition_seconds",
} as const;

describe("renderPrometheus", () => {
  it("renders any stats as a valid exposition that reads back to the same numbers", () => {
    fc.assert(
      fc.property(stats, (s) => {
        const families = parsePrometheus(renderPrometheus(s));
        for (const status of ["queued", "running", "failed"] as const) {
          expect(sampleValue(families, "tickwork_jobs", { status })).toBe(s.jobs[status]);
        }
        expect(sampleValue(families, "tickwork_queue_depth")).toBe(s.backlog);
        expect(sampleValue(families, "tickwork_jobs_succeeded_total")).toBe(s.totals.succeeded);
        expect(sampleValue(families, "tickwork_ticks_total")).toBe(s.totals.ticks);
        expect(sampleValue(families, "tickwork_leader_changes_total")).toBe(s.leader.changes);
        expect(sampleValue(families, "tickwork_leader_active")).toBe(s.leader.active ? 1 : 0);
        if (s.leader.holder === null) expect(families.has("tickwork_leader_info")).toBe(false);
        else {
          expect(sampleValue(families, "tickwork_leader_info", { holder: s.leader.holder })).toBe(
            1,
          );
        }
        for (const l of ["normal", "degraded", "critical"]) {
          const value = sampleValue(families, "tickwork_degradation_level", { level: l });
          expect(value).toBe(l === s.degradation.level ? 1 : 0);
        }
        for (const [key, name] of Object.entries(HISTOGRAM_NAMES)) {
          const h = s[key as keyof typeof HISTOGRAM_NAMES];
          expect(families.get(name)?.type).toBe("histogram");
          let cumulative = 0;
          HISTOGRAM_BOUNDS_MS.forEach((bound, i) => {
            cumulative += h.counts[i] ?? 0;
            const le = String(bound / 1000);
            expect(sampleValue(families, `${name}_bucket`, { le })).toBe(cumulative);
          });
          expect(sampleValue(families, `${name}_bucket`, { le: "+Inf" })).toBe(h.count);
          expect(sampleValue(families, `${name}_count`)).toBe(h.count);
          expect(sampleValue(families, `${name}_sum`)).toBeCloseTo(h.sum / 1000, 6);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("declares every counter as a counter named *_total, with HELP text", () => {
    const families = parsePrometheus(
      renderPrometheus(fc.sample(stats, { numRuns: 1, seed: 1 })[0]!),
    );
    for (const family of families.values()) {
      expect(family.help.length).toBeGreaterThan(10);
      expect(family.name.startsWith("tickwork_")).toBe(true);
      if (family.type === "counter") expect(family.name).toMatch(/_total$/);
      if (family.name.endsWith("_total")) expect(family.type).toBe("counter");
    }
  });
});

describe("jobs_skipped_total", () => {
  // An occurrence is skipped when its predecessor still runs (overlap `skip`), and also when its
  // schedule was paused or deleted before it began: the HELP text and the README say both.
  it("names both causes of a skip, in its HELP text and in the README", () => {
    const families = parsePrometheus(
      renderPrometheus(fc.sample(stats, { numRuns: 1, seed: 1 })[0]!),
    );
    const help = families.get("tickwork_jobs_skipped_total")?.help ?? "";
    expect(help).toMatch(/overlap|previous|predecessor/i);
    expect(help).toMatch(/paused/);
    expect(help).toMatch(/deleted/);
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const row = readme.split("\n").find((line) => line.startsWith("| `jobs_cancelled_total`"));
    expect(row).toMatch(/paused/);
  });
});

describe("the README's metrics table", () => {
  it("lists exactly the metrics of the exposition", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const table = readme.slice(readme.indexOf("| metric (`tickwork_…`)"));
    const rows = table.slice(0, table.indexOf("\n\n")).split("\n").slice(2);
    const listed = rows.flatMap((row) =>
      [...(row.split(/(?<!\\)\|/)[1] ?? "").matchAll(/`([a-z_]+)[{`]/g)].map(
        (m) => `tickwork_${m[1]}`,
      ),
    );
    const withHolder = { ...fc.sample(stats, { numRuns: 1, seed: 2 })[0]! };
    withHolder.leader = { ...withHolder.leader, holder: "web-1" };
    const families = [...parsePrometheus(renderPrometheus(withHolder)).keys()];
    expect([...listed].sort()).toEqual([...families].sort());
  });
});

describe("the strict parser", () => {
  const valid = [
    "# HELP x_seconds A histogram.",
    "# TYPE x_seconds histogram",
    'x_seconds_bucket{le="0.1"} 1',
    'x_seconds_bucket{le="1"} 3',
    'x_seconds_bucket{le="+Inf"} 4',
    "x_seconds_sum 2.5",
    "x_seconds_count 4",
    "# HELP y_total A counter.",
    "# TYPE y_total counter",
    'y_total{a="q\\"uote\\\\ and\\nline"} 7',
    "",
  ].join("\n");

  it("reads a valid exposition, unescaping label values", () => {
    const families = parsePrometheus(valid);
    expect(sampleValue(families, "y_total", { a: 'q"uote\\ and\nline' })).toBe(7);
    expect(sampleValue(families, "x_seconds_bucket", { le: "+Inf" })).toBe(4);
  });

  const broken: [string, (text: string) => string][] = [
    ["a decreasing bucket", (t) => t.replace('le="1"} 3', 'le="1"} 0')],
    ["+Inf unequal to _count", (t) => t.replace("x_seconds_count 4", "x_seconds_count 5")],
    ["no +Inf bucket", (t) => t.replace('x_seconds_bucket{le="+Inf"} 4\n', "")],
    ["le out of order", (t) => t.replace('le="0.1"', 'le="2"')],
    ["no TYPE", (t) => t.replace("# TYPE y_total counter\n", "")],
    ["no HELP", (t) => t.replace("# HELP y_total A counter.\n", "")],
    ["an unknown escape", (t) => t.replace("\\nline", "\\tline")],
    ["an unquoted label", (t) => t.replace('{a="q', "{a=q")],
    ["a bad label name", (t) => t.replace('{a="', '{1a="')],
    ["a bad value", (t) => t.replace("y_total{", "y_total {").replace("} 7", "} seven")],
    ["a negative counter", (t) => t.replace("} 7", "} -7")],
    ["a repeated series", (t) => `${t}${t.split("\n").at(-2)}\n`],
    ["a split family", (t) => `${t}x_seconds_sum 1\n`],
    ["a missing final line feed", (t) => t.slice(0, -1)],
    ["a sample of another family", (t) => t.replace("x_seconds_sum 2.5", "z_sum 2.5")],
  ];
  it.each(broken)("rejects %s", (_, breakIt) => {
    const text = breakIt(valid);
    expect(text).not.toBe(valid);
    expect(() => parsePrometheus(text)).toThrow();
  });
});
