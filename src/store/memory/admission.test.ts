/**
 * Properties of the admission arithmetic (`quota.ts`, `degrade.ts`; the spec in `store/port/`),
 * checked with fast-check: a quota never admits more than `limit` writes in any bucket-aligned
 * window span, a refusal's `resetMs` is exactly when a write is admitted again, and the
 * degradation level moves only after a target has held for the debounce, never leaves a level
 * while a signal still holds it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { DegradationLevel, DegradationPolicy, QuotaWindow } from "../port.ts";
import { evaluateDegradation, initialDegradation, targetLevel } from "./degrade.ts";
import { MemoryStore } from "./memory-store.ts";
import { bucketMs, checkQuota, type QuotaCounters } from "./quota.ts";

const windowArb = fc.record({
  windowMs: fc.integer({ min: 1, max: 5_000 }),
  limit: fc.integer({ min: 1, max: 6 }),
});
const windowsArb = fc.uniqueArray(windowArb, {
  minLength: 1,
  maxLength: 3,
  selector: (w) => w.windowMs,
});

describe("quota buckets", () => {
  it("never admit more than `limit` writes in any bucket-aligned span of `windowMs`", () => {
    fc.assert(
      fc.property(
        windowsArb,
        fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 200 }),
        (windows, gaps) => {
          const counters: QuotaCounters = new Map();
          const admitted: number[] = [];
          let now = 1_000_000;
          for (const gap of gaps) {
            now += gap;
            if (checkQuota(counters, { key: "k", windows }, now).admitted) admitted.push(now);
          }
          for (const w of windows) {
            const width = bucketMs(w.windowMs);
            for (const t of admitted) {
              const start = Math.floor(t / width) * width;
              const inSpan = admitted.filter((x) => x >= start && x < start + w.windowMs).length;
              expect(inSpan).toBeLessThanOrEqual(w.limit);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("refusal's resetMs is the first moment a write is admitted again", () => {
    fc.assert(
      fc.property(
        windowsArb,
        fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 60 }),
        (windows, gaps) => {
          const counters: QuotaCounters = new Map();
          let now = 5_000_000;
          for (const gap of gaps) {
            now += gap;
            const verdict = checkQuota(counters, { key: "k", windows }, now);
            if (verdict.admitted) {
              expect(verdict.state.remaining).toBeGreaterThanOrEqual(0);
              expect(verdict.state.resetMs).toBeGreaterThan(0);
              expect(verdict.state.resetMs).toBeLessThanOrEqual(verdict.state.windowMs);
              continue;
            }
            const { resetMs } = verdict.state;
            expect(resetMs).toBeGreaterThan(0);
            expect(verdict.state.remaining).toBe(0);
            // Probe copies: one ms earlier still refused, at resetMs admitted.
            if (resetMs > 1) {
              expect(
                checkQuota(copy(counters), { key: "k", windows }, now + resetMs - 1).admitted,
              ).toBe(false);
            }
            expect(checkQuota(copy(counters), { key: "k", windows }, now + resetMs).admitted).toBe(
              true,
            );
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a refused write counts nothing: replaying only the admitted ones admits them all", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 60 }), { minLength: 1, maxLength: 40 }),
        async (gaps) => {
          const windows: QuotaWindow[] = [
            { windowMs: 600, limit: 3 },
            { windowMs: 2_000, limit: 5 },
          ];
          const times: number[] = [];
          let t = 1_000_000;
          for (const gap of gaps) {
            t += gap;
            times.push(t);
          }

          const admittedAt: number[] = [];
          let now = 0;
          const all = new MemoryStore({ clock: () => now });
          for (const [i, at] of times.entries()) {
            now = at;
            const res = await all.putSchedule(schedule(`a${i}`), undefined, {
              quota: { key: "q", windows },
            });
            if (res.kind === "ok") admittedAt.push(at);
            else expect(await all.getSchedule(`a${i}`)).toBeNull();
          }
          const only = new MemoryStore({ clock: () => now });
          for (const [i, at] of admittedAt.entries()) {
            now = at;
            const res = await only.putSchedule(schedule(`b${i}`), undefined, {
              quota: { key: "q", windows },
            });
            expect(res.kind).toBe("ok");
          }
          expect((await all.listSchedules({ limit: 1_000 })).items).toHaveLength(admittedAt.length);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe("degradation controller", () => {
  const policyArb = fc
    .record({
      normal: fc.integer({ min: 0, max: 10 }),
      toDegraded: fc.integer({ min: 0, max: 10 }),
      toCritical: fc.integer({ min: 0, max: 10 }),
      debounceMs: fc.integer({ min: 0, max: 500 }),
    })
    .map(
      ({ normal, toDegraded, toCritical, debounceMs }): DegradationPolicy => ({
        queueDepth: {
          normal,
          degraded: normal + toDegraded,
          critical: normal + toDegraded + toCritical,
        },
        lagMs: { normal: 10, degraded: 20, critical: 30 },
        failureRate: { normal: 0.25, degraded: 0.5, critical: Number.POSITIVE_INFINITY },
        debounceMs,
      }),
    );
  const stepArb = fc.record({
    gap: fc.integer({ min: 0, max: 300 }),
    queueDepth: fc.integer({ min: 0, max: 35 }),
    lagMs: fc.constantFrom(0, 5, 15, 25, 40),
    failureRate: fc.constantFrom(0, 0.1, 0.3, 0.6, 1),
    running: fc.constantFrom(0, 0, 1),
  });

  it("changes only to a target that held for debounceMs, and never against the thresholds", () => {
    fc.assert(
      fc.property(policyArb, fc.array(stepArb, { maxLength: 120 }), (policy, steps) => {
        let state = initialDegradation();
        let now = 1_000;
        /** Evaluations since the current level was entered: time and target. */
        let seen: { at: number; target: DegradationLevel }[] = [];
        for (const step of steps) {
          now += step.gap;
          const measured = {
            queueDepth: step.queueDepth,
            lagMs: step.lagMs,
            failureRate: step.failureRate,
          };
          // With nothing due or running the averages are judged 0 (DegradationPolicy).
          const signals =
            measured.queueDepth === 0 && step.running === 0
              ? { queueDepth: 0, lagMs: 0, failureRate: 0 }
              : measured;
          const target = targetLevel(state.level, signals, policy);
          const next = evaluateDegradation(
            state,
            policy,
            { ...measured, running: step.running },
            now,
          );
          seen.push({ at: now, target });
          expect(next.state.signals).toEqual(signals);
          if (next.changed) {
            expect(next.changed).toEqual({ from: state.level, to: target });
            expect(next.state).toEqual({ level: target, since: now, signals });
            // The same target was computed by every evaluation of the last debounceMs, and first
            // seen at least debounceMs ago.
            let i = seen.length - 1;
            while (i > 0 && seen[i - 1]!.target === target) i--;
            expect(now - seen[i]!.at).toBeGreaterThanOrEqual(policy.debounceMs);
            // Hysteresis: leaving for normal needs every signal below its `normal`.
            if (target === "normal") {
              expect(signals.queueDepth).toBeLessThan(policy.queueDepth.normal);
              expect(signals.lagMs).toBeLessThan(policy.lagMs.normal);
              expect(signals.failureRate).toBeLessThan(policy.failureRate.normal);
            }
            seen = [];
          } else {
            expect(next.state.level).toBe(state.level);
            expect(next.state.since).toBe(state.since);
            if (target === state.level) expect(next.state.pending).toBeUndefined();
            else {
              expect(next.state.pending?.level).toBe(target);
              // Not changed: the target has not held for the debounce yet.
              expect(now - (next.state.pending?.since ?? now)).toBeLessThan(policy.debounceMs);
            }
          }
          state = next.state;
        }
      }),
      { numRuns: 500 },
    );
  });

  it("targets: critical at any critical threshold; normal only below every `normal`", () => {
    fc.assert(
      fc.property(
        policyArb,
        fc.constantFrom<DegradationLevel>("normal", "degraded", "critical"),
        stepArb,
        (policy, level, s) => {
          const signals = { queueDepth: s.queueDepth, lagMs: s.lagMs, failureRate: s.failureRate };
          const target = targetLevel(level, signals, policy);
          const pairs: [number, { normal: number; degraded: number; critical: number }][] = [
            [s.queueDepth, policy.queueDepth],
            [s.lagMs, policy.lagMs],
            [s.failureRate, policy.failureRate],
          ];
          const anyAt = (k: "degraded" | "critical") => pairs.some(([v, t]) => v >= t[k]);
          const allBelow = (k: "normal" | "degraded") => pairs.every(([v, t]) => v < t[k]);
          if (anyAt("critical")) expect(target).toBe("critical");
          else if (level === "normal")
            expect(target).toBe(anyAt("degraded") ? "degraded" : "normal");
          else if (allBelow("normal")) expect(target).toBe("normal");
          else if (level === "critical" && allBelow("degraded")) expect(target).toBe("degraded");
          else expect(target).toBe(level);
        },
      ),
      { numRuns: 500 },
    );
  });
});

function copy(counters: QuotaCounters): QuotaCounters {
  return new Map([...counters].map(([w, buckets]) => [w, new Map(buckets)]));
}

function schedule(id: string) {
  return {
    id,
    tenant: "default",
    handler: "h",
    schedule: "* * * * *",
    tz: "UTC",
    input: null,
    priority: 5,
    timeoutMs: 1_000,
    retries: 0,
    misfire: "once" as const,
    overlap: "allow" as const,
    jitterMs: 0,
    tags: [],
    status: "active" as const,
    nextRunAt: 4_000_000_000_000,
    runs: 0,
    rev: 0,
    createdAt: 0,
    updatedAt: 0,
  };
}
