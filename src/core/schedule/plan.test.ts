import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_INSTANT_MS } from "../instant.ts";
import type { Misfire } from "../model.ts";
import { occurrenceJitter } from "./jitter.ts";
import { between, firstRunAt, nextAfter } from "./occurrences.ts";
import { parseSchedule } from "./parse.ts";
import { type Plan, type PlanOptions, type PlanSchedule, planOccurrences } from "./plan.ts";
import type { ParsedSchedule } from "./types.ts";

const at = (iso: string): number => Date.parse(iso);
const opts = (o: Partial<PlanOptions> = {}): PlanOptions => ({
  horizonMs: 60_000,
  graceMs: 120_000,
  catchUpLimit: 100,
  limit: 1_000,
  ...o,
});
const record = (nextRunAt: number | null, o: Partial<PlanSchedule> = {}): PlanSchedule => ({
  id: "s1",
  nextRunAt,
  runs: 0,
  misfire: "once",
  jitterMs: 0,
  ...o,
});
const fireAts = (plan: Plan): number[] => plan.fires.map((f) => f.fireAt);

describe("planOccurrences", () => {
  const tenSeconds = parseSchedule("10s", "UTC");
  const now = at("2024-06-01T12:00:00Z");

  it("plans every occurrence up to now + horizon, each published to run at its time", () => {
    const plan = planOccurrences(tenSeconds, record(now), now, opts());
    expect(fireAts(plan)).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => now + i * 10_000));
    expect(plan.fires.every((f) => f.runAt === f.fireAt)).toBe(true);
    expect(plan.nextRunAt).toBe(now + 70_000);
    expect(plan.missed).toBe(0);
  });

  it("plans nothing past 9999-12-31, and no jitter carries a run time past it", () => {
    const last = at("9999-12-31T23:59:50Z");
    const plan = planOccurrences(
      tenSeconds,
      record(last, { jitterMs: 86_400_000 }),
      last,
      opts({ horizonMs: 3_600_000 }),
    );
    expect(fireAts(plan)).toEqual([last]);
    expect(plan.fires[0]!.runAt).toBeLessThanOrEqual(at("9999-12-31T23:59:59.999Z"));
    expect(plan.nextRunAt).toBeNull();
  });

  it("plans nothing before the schedule is due", () => {
    expect(planOccurrences(tenSeconds, record(now + 61_000), now, opts())).toEqual({
      fires: [],
      nextRunAt: now + 61_000,
      missed: 0,
    });
  });

  it("runs late occurrences within the grace, whatever the misfire policy", () => {
    const plan = planOccurrences(
      tenSeconds,
      record(now - 120_000, { misfire: "skip" }),
      now,
      opts(),
    );
    expect(fireAts(plan)[0]).toBe(now - 120_000);
    expect(plan.missed).toBe(0);
  });

  it.each<[Misfire, number[], number]>([
    ["skip", [], 360],
    ["once", [-130_000], 359],
    ["all", [-160_000, -150_000, -140_000, -130_000], 356],
  ])("misfire %s: keeps %j of the missed hour, drops %d", (misfire, kept, missed) => {
    const plan = planOccurrences(
      tenSeconds,
      record(now - 3_720_000, { misfire }),
      now,
      opts({ catchUpLimit: 4 }),
    );
    const onTime = Array.from({ length: 19 }, (_, i) => now - 120_000 + i * 10_000);
    expect(fireAts(plan)).toEqual([...kept.map((d) => now + d), ...onTime]);
    expect(plan.missed).toBe(missed);
  });

  it("stops at maxRuns and finishes the schedule", () => {
    const plan = planOccurrences(tenSeconds, record(now, { runs: 8, maxRuns: 10 }), now, opts());
    expect(fireAts(plan)).toEqual([now, now + 10_000]);
    expect(plan.nextRunAt).toBeNull();
    expect(
      planOccurrences(tenSeconds, record(now, { runs: 10, maxRuns: 10 }), now, opts()),
    ).toEqual({
      fires: [],
      nextRunAt: null,
      missed: 0,
    });
  });

  it("plans nothing after endAt and finishes the schedule", () => {
    const plan = planOccurrences(tenSeconds, record(now, { endAt: now + 25_000 }), now, opts());
    expect(fireAts(plan)).toEqual([now, now + 10_000, now + 20_000]);
    expect(plan.nextRunAt).toBeNull();
    const later = planOccurrences(tenSeconds, record(now, { endAt: now + 600_000 }), now, opts());
    expect(later.nextRunAt).toBe(now + 70_000);
  });

  it("is finished when nextRunAt is null", () => {
    expect(planOccurrences(tenSeconds, record(null), now, opts())).toEqual({
      fires: [],
      nextRunAt: null,
      missed: 0,
    });
  });

  it("cuts the plan at limit and resumes from the first occurrence not planned", () => {
    const plan = planOccurrences(tenSeconds, record(now), now, opts({ limit: 3 }));
    expect(fireAts(plan)).toEqual([now, now + 10_000, now + 20_000]);
    expect(plan.nextRunAt).toBe(now + 30_000);
  });

  it("adds a deterministic jitter in [0, jitterMs] per occurrence", () => {
    const s = record(now, { jitterMs: 5_000 });
    const plan = planOccurrences(tenSeconds, s, now, opts());
    expect(planOccurrences(tenSeconds, s, now, opts())).toEqual(plan);
    const delays = plan.fires.map((f) => f.runAt - f.fireAt);
    expect(delays.every((d) => d >= 0 && d <= 5_000 && Number.isInteger(d))).toBe(true);
    expect(new Set(delays).size).toBeGreaterThan(1);
  });

  describe("a schedule missed for a whole year is counted, not enumerated", () => {
    const yearAgo = at("2024-01-01T00:00:00Z");
    const newYear = at("2025-01-01T00:00:00Z");
    const o = opts({ horizonMs: 0, graceMs: 0 });

    it.each<[string, string, number]>([
      ["1s", "UTC", 31_622_400],
      ["* * * * * *", "Europe/Berlin", 31_622_400], // a cadence: every real second, DST or not
      ["30 2 * * *", "Europe/Berlin", 366], // once a day, on the gap and fold days too
    ])("%s in %s", (spec, tz, occurrences) => {
      const p = parseSchedule(spec, tz);
      const first = firstRunAt(p, yearAgo)!;
      const skip = planOccurrences(p, record(first, { misfire: "skip" }), newYear, o);
      const once = planOccurrences(p, record(first, { misfire: "once" }), newYear, o);
      const all = planOccurrences(p, record(first, { misfire: "all" }), newYear, o);
      const onTime = skip.fires.length; // `now` itself when it is an occurrence
      expect(skip.missed).toBe(occurrences);
      expect(once.missed).toBe(occurrences - 1);
      expect(once.fires).toHaveLength(1 + onTime);
      expect(all.missed).toBe(Math.max(0, occurrences - 100));
      expect(all.fires).toHaveLength(Math.min(occurrences, 100) + onTime);
      expect(nextAfter(p, all.fires.at(-1)!.fireAt)).toBe(all.nextRunAt);
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Properties, against a reference that enumerates everything.

const SCHEDULES: { spec: string; tz: string; periodMs: number }[] = [
  { spec: "1s", tz: "UTC", periodMs: 1_000 },
  { spec: "7s", tz: "UTC", periodMs: 7_000 },
  { spec: "5m", tz: "UTC", periodMs: 300_000 },
  { spec: "*/10 * * * * *", tz: "UTC", periodMs: 10_000 },
  { spec: "0 */5 * * * *", tz: "Europe/Berlin", periodMs: 300_000 },
  { spec: "*/15 * * * *", tz: "Australia/Lord_Howe", periodMs: 900_000 },
  { spec: "*/20 2 * * *", tz: "Europe/Berlin", periodMs: 8 * 3_600_000 },
  { spec: "30 2 * * *", tz: "America/New_York", periodMs: 86_400_000 },
];
/** Near DST transitions, and an ordinary day. */
const BASES = [
  at("2024-03-31T01:00:00Z"),
  at("2024-10-27T01:00:00Z"),
  at("2024-04-06T15:00:00Z"),
  at("2024-10-05T15:30:00Z"),
  at("2024-03-10T07:00:00Z"),
  at("2024-11-03T06:00:00Z"),
  at("2024-07-15T12:34:56Z"),
];

interface Case {
  p: ParsedSchedule;
  s: PlanSchedule;
  now: number;
  o: PlanOptions;
}

const caseArb: fc.Arbitrary<Case> = fc
  .record({
    schedule: fc.constantFrom(...SCHEDULES),
    base: fc.constantFrom(...BASES),
    shift: fc.integer({ min: -2 * 86_400_000, max: 2 * 86_400_000 }),
    anchor: fc.integer({ min: 0, max: 86_400_000 }),
    // In thousandths of the schedule's period; negative = not due yet.
    backlog: fc.oneof(
      fc.integer({ min: -3_000, max: 3_000 }),
      fc.integer({ min: 0, max: 3_000_000 }),
    ),
    misfire: fc.constantFrom<Misfire>("skip", "once", "all"),
    jitterMs: fc.oneof(
      fc.constant(0),
      fc.integer({ min: 0, max: 60_000 }),
      fc.integer({ min: 0, max: 86_400_000 }),
    ),
    runs: fc.integer({ min: 0, max: 50 }),
    maxRunsLeft: fc.option(fc.integer({ min: 0, max: 80 }), { nil: undefined, freq: 2 }),
    endIn: fc.option(fc.integer({ min: -3_600_000, max: 6 * 3_600_000 }), {
      nil: undefined,
      freq: 2,
    }),
    horizonMs: fc.oneof(fc.constant(60_000), fc.integer({ min: 0, max: 600_000 })),
    graceMs: fc.oneof(fc.constant(120_000), fc.constant(0), fc.integer({ min: 0, max: 3_600_000 })),
    catchUpLimit: fc.integer({ min: 0, max: 30 }),
    limit: fc.integer({ min: 1, max: 60 }),
  })
  .map((r) => {
    const now = r.base + r.shift;
    const p = parseSchedule(r.schedule.spec, r.schedule.tz, r.anchor);
    const nextRunAt = firstRunAt(p, Math.round(now - (r.backlog / 1_000) * r.schedule.periodMs))!;
    const s: PlanSchedule = {
      id: `s-${r.anchor}`,
      nextRunAt,
      runs: r.runs,
      misfire: r.misfire,
      jitterMs: r.jitterMs,
      ...(r.maxRunsLeft === undefined ? {} : { maxRuns: r.runs + r.maxRunsLeft }),
      ...(r.endIn === undefined ? {} : { endAt: now + r.endIn }),
    };
    const o = {
      horizonMs: r.horizonMs,
      graceMs: r.graceMs,
      catchUpLimit: r.catchUpLimit,
      limit: r.limit,
    };
    return { p, s, now, o };
  });

/** The semantics, spelled out on a full enumeration. */
function reference({ p, s, now, o }: Case): Plan {
  const endAt = s.endAt ?? Number.POSITIVE_INFINITY;
  const runsLeft = s.maxRuns === undefined ? Number.POSITIVE_INFINITY : s.maxRuns - s.runs;
  const first = s.nextRunAt;
  if (first === null || runsLeft <= 0 || first > endAt)
    return { fires: [], nextRunAt: null, missed: 0 };
  const until = Math.min(now + o.horizonMs, endAt);
  if (first > until) return { fires: [], nextRunAt: first, missed: 0 };
  const all = [first, ...between(p, first + 1, until, Number.MAX_SAFE_INTEGER)];
  const late = all.filter((t) => t < now - o.graceMs);
  const onTime = all.filter((t) => t >= now - o.graceMs);
  const keep = s.misfire === "skip" ? 0 : s.misfire === "once" ? 1 : o.catchUpLimit;
  const kept = late.slice(Math.max(0, late.length - keep));
  const sequence = [...kept, ...onTime];
  const n = Math.min(sequence.length, o.limit, runsLeft);
  const fires = sequence.slice(0, n).map((fireAt) => ({ fireAt }));
  let nextRunAt: number | null;
  if (n === runsLeft) nextRunAt = null;
  else if (n < sequence.length) nextRunAt = sequence[n]!;
  else {
    const next = nextAfter(p, until);
    nextRunAt = next === null || next > endAt ? null : next;
  }
  return { fires: fires as Plan["fires"], nextRunAt, missed: late.length - kept.length };
}

describe("planOccurrences: properties", () => {
  it("matches the reference semantics exactly", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const plan = planOccurrences(c.p, c.s, c.now, c.o);
        const expected = reference(c);
        expect(fireAts(plan)).toEqual(fireAts(expected));
        expect(plan.nextRunAt).toBe(expected.nextRunAt);
        expect(plan.missed).toBe(expected.missed);
      }),
      { numRuns: 400 },
    );
  });

  it("keeps its invariants: order, horizon, limit, maxRuns, endAt, jitter", () => {
    fc.assert(
      fc.property(caseArb, ({ p, s, now, o }) => {
        const plan = planOccurrences(p, s, now, o);
        const at = fireAts(plan);
        for (let i = 1; i < at.length; i++) expect(at[i]!).toBeGreaterThan(at[i - 1]!);
        for (const t of at) {
          expect(t).toBeLessThanOrEqual(now + o.horizonMs);
          if (s.endAt !== undefined) expect(t).toBeLessThanOrEqual(s.endAt);
        }
        expect(at.length).toBeLessThanOrEqual(o.limit);
        if (s.maxRuns !== undefined) expect(s.runs + at.length).toBeLessThanOrEqual(s.maxRuns);
        if (plan.nextRunAt !== null) for (const t of at) expect(plan.nextRunAt).toBeGreaterThan(t);
        for (const f of plan.fires) {
          expect(f.runAt - f.fireAt).toBeGreaterThanOrEqual(0);
          expect(f.runAt - f.fireAt).toBeLessThanOrEqual(s.jitterMs);
          // Jitter never carries an occurrence to the next one's fire time, so however long it
          // is, a schedule never has more than one jittered occurrence waiting.
          const following = nextAfter(p, f.fireAt);
          if (following !== null) expect(f.runAt).toBeLessThan(following);
          // And the delay is the occurrence's own, cut only by that gap.
          const room =
            following === null ? s.jitterMs : Math.min(s.jitterMs, following - f.fireAt - 1);
          expect(f.runAt).toBe(
            Math.min(f.fireAt + occurrenceJitter(s.id, f.fireAt, room), MAX_INSTANT_MS),
          );
        }
        expect(planOccurrences(p, s, now, o)).toEqual(plan); // deterministic
        if (s.misfire === "skip")
          for (const t of at) expect(t).toBeGreaterThanOrEqual(now - o.graceMs);
      }),
      { numRuns: 400 },
    );
  });

  it("chunked by limit, continues exactly as one big call", () => {
    fc.assert(
      fc.property(caseArb, fc.integer({ min: 1, max: 7 }), ({ p, s, now, o }, chunk) => {
        const big = planOccurrences(p, s, now, { ...o, limit: Number.MAX_SAFE_INTEGER });
        const fires: Plan["fires"] = [];
        let missed = 0;
        let state = s;
        let plan: Plan;
        for (;;) {
          plan = planOccurrences(p, state, now, { ...o, limit: chunk });
          fires.push(...plan.fires);
          missed += plan.missed;
          state = { ...state, nextRunAt: plan.nextRunAt, runs: state.runs + plan.fires.length };
          if (plan.fires.length < chunk) break;
        }
        expect(fires).toEqual(big.fires);
        expect(missed).toBe(big.missed);
        expect(plan.nextRunAt).toBe(big.nextRunAt);
      }),
      { numRuns: 300 },
    );
  });

  it("tick after tick, never plans an occurrence twice and only plans occurrences", () => {
    fc.assert(
      fc.property(
        caseArb,
        fc.array(fc.integer({ min: 0, max: 180_000 }), { minLength: 1, maxLength: 12 }),
        ({ p, s, now, o }, steps) => {
          let state = s;
          let t = now;
          let last = Number.NEGATIVE_INFINITY;
          for (const step of steps) {
            t += step;
            const plan = planOccurrences(p, state, t, o);
            for (const { fireAt } of plan.fires) {
              expect(fireAt).toBeGreaterThan(last);
              if (fireAt !== s.nextRunAt) expect(nextAfter(p, fireAt - 1)).toBe(fireAt);
              last = fireAt;
            }
            state = { ...state, nextRunAt: plan.nextRunAt, runs: state.runs + plan.fires.length };
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
