/**
 * The Lua arithmetic of admission control, checked against the memory store's pure functions
 * (`store/memory/quota.ts` and `degrade.ts`) with fast-check, on real Redis. The contract tests
 * run on the store's own clock; here the includes are called with an injected `now`, so
 * sequences of writes and evaluations at arbitrary times can be compared step by step.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { evaluateDegradation, initialDegradation } from "../memory/degrade.ts";
import { checkQuota, type QuotaCounters } from "../memory/quota.ts";
import type { DegradationPolicy, DegradationState, QuotaWindow, Thresholds } from "../port.ts";
import { degradationOf, policyArg, windowsArg } from "./codec.ts";

const redis = new Redis("redis://127.0.0.1:6379");
afterAll(() => redis.disconnect());

/** A probe script: the named includes (dependencies first), then `body`. */
function probe(includes: string[], body: string): string {
  const source = (name: string) =>
    readFileSync(new URL(`./lua/includes/${name}.lua`, import.meta.url), "utf8");
  return `${includes.map(source).join("\n")}\n${body}`;
}

// The counter's TTL is read, then removed: the probe injects `now`, so Redis's own clock must not
// expire it between steps (in the store, `now` is Redis's clock and the TTL is exact).
const QUOTA = probe(
  ["time", "keys", "quota"],
  `local admitted, state = checkQuota(KEYS[1], parseWindows(ARGV[1]), tonumber(ARGV[2]))
local ttl = redis.call('PTTL', KEYS[1])
redis.call('PERSIST', KEYS[1])
return { admitted and 1 or 0, state, ttl }`,
);

const DEGRADE = probe(
  ["time", "json", "events", "degrade"],
  `local level = evaluateDegradation(KEYS[1], KEYS[2], 1000, parsePolicy(ARGV[1]), tonumber(ARGV[2]),
  tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]))
return { level, redis.call('HGETALL', KEYS[1]) }`,
);

const NUM = probe(["time"], "return num(tonumber(ARGV[1]))");

let n = 0;
const testKey = (what: string) =>
  `{admission-test-${process.pid}-${Date.now().toString(36)}-${++n}}:${what}`;

describe("Lua number text", () => {
  it("num() reads back as the same double", async () => {
    await fc.assert(
      fc.asyncProperty(fc.double({ noNaN: true, noDefaultInfinity: true }), async (x) => {
        const text = (await redis.eval(NUM, 0, String(x))) as string;
        expect(Number(text)).toBe(x === 0 ? 0 : x); // -0 prints as 0
      }),
      { numRuns: 300 },
    );
  }, 60_000);
});

describe("quota include (checkQuota) against the memory store's arithmetic", () => {
  const windowArb = fc.record({
    windowMs: fc.constantFrom(1, 59, 60, 61, 120, 1_000, 6_000, 60_000, 3_600_000),
    limit: fc.integer({ min: 1, max: 6 }),
  });

  it("admits, refuses and reports exactly alike, step by step", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(windowArb, { minLength: 1, maxLength: 3 }),
        // Starts on an hour boundary, so steps of whole buckets and windows land on boundaries.
        fc.integer({ min: 472_000, max: 500_000 }).map((h) => h * 3_600_000),
        fc.array(
          fc.oneof(
            fc.nat({ max: 20 }),
            fc.constantFrom(1, 59, 60, 61, 100, 1_000, 6_000, 60_000, 3_600_000),
            fc.nat({ max: 90_000 }),
          ),
          { minLength: 1, maxLength: 40 },
        ),
        async (windows: QuotaWindow[], start, steps) => {
          const key = testKey("quota");
          const counters: QuotaCounters = new Map();
          const longest = Math.max(...windows.map((w) => w.windowMs));
          let now = start;
          try {
            for (const step of steps) {
              now += step;
              const [admitted, state, ttl] = (await redis.eval(
                QUOTA,
                1,
                key,
                windowsArg(windows),
                String(now),
              )) as [number, string, number];
              const expected = checkQuota(counters, { key: "k", windows }, now);
              expect({ admitted: admitted === 1, state: JSON.parse(state) }).toEqual({
                admitted: expected.admitted,
                state: expected.state,
              });
              // Admitted: the counter was written to expire after the longest window (read back a
              // moment later by Redis's clock, hence the slack).
              if (admitted === 1) {
                expect(ttl).toBeLessThanOrEqual(longest);
                if (longest >= 1_000) expect(ttl).toBeGreaterThan(longest - 1_000);
              }
            }
          } finally {
            await redis.del(key);
          }
        },
      ),
      { numRuns: 100 },
    );
  }, 60_000);
});

describe("degrade include (evaluateDegradation) against the memory store's controller", () => {
  /** normal <= degraded <= critical; critical sometimes Infinity ("never"). */
  const thresholdsArb = (max: number, integer: boolean): fc.Arbitrary<Thresholds> =>
    fc
      .tuple(
        integer ? fc.integer({ min: 0, max }) : fc.double({ min: 0, max, noNaN: true }),
        integer ? fc.integer({ min: 0, max }) : fc.double({ min: 0, max, noNaN: true }),
        integer ? fc.integer({ min: 0, max }) : fc.double({ min: 0, max, noNaN: true }),
        fc.boolean(),
      )
      .map(([a, b, c, never]) => {
        const [normal, degraded, critical] = [a, b, c].sort((x, y) => x - y) as [
          number,
          number,
          number,
        ];
        return { normal, degraded, critical: never ? Number.POSITIVE_INFINITY : critical };
      });

  const policyArb: fc.Arbitrary<DegradationPolicy> = fc
    .record({
      queueDepth: thresholdsArb(40, true),
      lagMs: thresholdsArb(1_000, false),
      failureRate: thresholdsArb(1, false),
      cpu: fc.option(thresholdsArb(100, false), { nil: undefined }),
      memory: fc.option(thresholdsArb(100, false), { nil: undefined }),
      debounceMs: fc.constantFrom(0, 1, 10, 50),
    })
    .map((p) => {
      const out: DegradationPolicy = {
        queueDepth: p.queueDepth,
        lagMs: p.lagMs,
        failureRate: p.failureRate,
        debounceMs: p.debounceMs,
      };
      if (p.cpu) out.cpu = p.cpu;
      if (p.memory) out.memory = p.memory;
      return out;
    });

  const stepArb = fc.record({
    dt: fc.nat({ max: 40 }),
    depth: fc.nat({ max: 50 }),
    lag: fc.double({ min: 0, max: 1_200, noNaN: true }),
    fail: fc.double({ min: 0, max: 1, noNaN: true }),
    running: fc.constantFrom(0, 0, 1, 3),
    cpu: fc.option(fc.double({ min: 0, max: 100, noNaN: true }), { nil: undefined }),
    memory: fc.option(fc.double({ min: 0, max: 100, noNaN: true }), { nil: undefined }),
  });

  it("moves through the same levels, pending targets, signals and change events", async () => {
    await fc.assert(
      fc.asyncProperty(
        policyArb,
        fc.array(stepArb, { minLength: 1, maxLength: 30 }),
        async (policy, steps) => {
          const [key, events] = [testKey("degrade"), testKey("events")];
          let state: DegradationState = initialDegradation();
          let changes = 0;
          let now = 1_700_000_000_000;
          try {
            for (const step of steps) {
              now += step.dt;
              const local: NonNullable<DegradationPolicy["local"]> = {};
              if (step.cpu !== undefined) local.cpu = step.cpu;
              if (step.memory !== undefined) local.memory = step.memory;
              const p: DegradationPolicy = { ...policy, local };
              const [level, flat] = (await redis.eval(
                DEGRADE,
                2,
                key,
                events,
                policyArg(p),
                String(step.depth),
                String(step.lag),
                String(step.fail),
                String(now),
                String(step.running),
              )) as [string, string[]];
              const next = evaluateDegradation(
                state,
                p,
                {
                  queueDepth: step.depth,
                  lagMs: step.lag,
                  failureRate: step.fail,
                  running: step.running,
                },
                now,
              );
              state = next.state;
              if (next.changed) changes++;
              const hash: Record<string, string> = {};
              for (let i = 0; i < flat.length; i += 2) hash[flat[i]!] = flat[i + 1]!;
              expect(level).toBe(state.level);
              expect(degradationOf(hash)).toEqual(state);
              expect(await redis.xlen(events)).toBe(changes);
            }
          } finally {
            await redis.del(key, events);
          }
        },
      ),
      { numRuns: 80 },
    );
  }, 60_000);
});
