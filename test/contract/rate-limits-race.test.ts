/**
 * Rate limits under racing workers (a property, fast-check): many simulated workers each run a
 * random sequence of `beginRun` → (a few turns of the event loop) → `finishRun` on a shared pool
 * of jobs, all at once (`Promise.all`), against the memory store on a fake clock the workers move
 * forward, and the real Redis store (three connections, so their scripts truly interleave at the
 * server) on Redis's own clock with windows of tens of milliseconds, so they slide during a race.
 * Some begins carry a concurrency limit too.
 *
 * The property: for every key, the start times (`startedAt`, the store's clock) of the runs it
 * admitted, sorted, never hold more than `limit` in any window of `periodMs` — for every i,
 * `starts[i + limit] - starts[i] >= periodMs`. On the memory store, whose clock stands still
 * afterwards, the window must then admit exactly as many fresh runs as it has room for (no start
 * lost, none counted twice, nothing taken by a refused begin).
 */
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { JobSpec } from "../../src/core/model.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { RateLimit, RunLimit, RunOutcome, Store } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { REDIS_URL } from "../support/stores.ts";
import { accepted, jobSpec } from "./fixtures.ts";

const LEASE = 60_000;

/** One step of a worker: take a job, hold it a few turns if it runs, finish it. */
interface Step {
  job: number;
  /** Turns of the event loop before the begin. */
  before: number;
  /** Fake-clock milliseconds that pass before the begin (memory store only). */
  advance: number;
  /** Turns between `run` and the finish. */
  hold: number;
  /** Also under a concurrency limit of the key. */
  slot: boolean;
  outcome: "ok" | "retry";
}

interface Plan {
  limit: number;
  periodMs: number;
  /** Concurrency limit of the steps with `slot`. */
  slots: number;
  keys: number;
  jobs: number;
  workers: Step[][];
}

const step = fc.record({
  job: fc.nat({ max: 63 }),
  before: fc.nat({ max: 3 }),
  advance: fc.nat({ max: 30 }),
  hold: fc.nat({ max: 4 }),
  slot: fc.boolean(),
  // Mostly retries: a failed job can begin again, so the pool stays busy.
  outcome: fc.constantFrom<Step["outcome"]>("ok", "retry", "retry", "retry"),
});
const plans: fc.Arbitrary<Plan> = fc.record({
  limit: fc.integer({ min: 1, max: 4 }),
  periodMs: fc.integer({ min: 10, max: 80 }),
  slots: fc.integer({ min: 1, max: 3 }),
  keys: fc.integer({ min: 1, max: 3 }),
  jobs: fc.integer({ min: 4, max: 24 }),
  workers: fc.array(fc.array(step, { minLength: 1, maxLength: 12 }), {
    minLength: 2,
    maxLength: 8,
  }),
});

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

const OUTCOMES: Record<Step["outcome"], RunOutcome> = {
  ok: { ok: true, result: null },
  retry: { ok: false, error: { name: "E", message: "again" }, final: false },
};

const rateOf = (plan: Plan, k: number): RateLimit => ({
  key: `race=7:default:k${k}`,
  limit: plan.limit,
  periodMs: plan.periodMs,
});
const slotOf = (plan: Plan, k: number): RunLimit => ({
  key: `race=7:default:k${k}`,
  limit: plan.slots,
});

/** Fails if more than `limit` of `starts` fall in one window of `periodMs`. */
function expectWithinRate(starts: number[], limit: number, periodMs: number, what: string): void {
  const sorted = [...starts].sort((a, b) => a - b);
  for (let i = 0; i + limit < sorted.length; i++) {
    const span = (sorted[i + limit] as number) - (sorted[i] as number);
    expect(span, `${what}: ${limit + 1} starts within ${span} ms`).toBeGreaterThanOrEqual(periodMs);
  }
}

/**
 * Runs `plan` on `stores` (worker i uses `stores[i % stores.length]`, all on one state); returns
 * the start times each key admitted, after checking them. `tick`, if given, moves the fake clock.
 */
async function race(
  stores: Store[],
  plan: Plan,
  tick?: (ms: number) => void,
): Promise<{ specs: JobSpec[]; starts: number[][] }> {
  const store = stores[0] as Store;
  const specs: JobSpec[] = [];
  for (let j = 0; j < plan.jobs; j++) {
    const res = accepted(
      await store.submitJob(jobSpec({ handler: "race" }), { delayMs: 0, recoverGraceMs: 60_000 }),
    );
    specs.push(res.message?.job as JobSpec);
  }
  const starts = Array.from({ length: plan.keys }, () => [] as number[]);
  let limited = 0;

  await Promise.all(
    plan.workers.map(async (steps, w) => {
      const mine = stores[w % stores.length] as Store;
      for (const s of steps) {
        await turns(s.before);
        tick?.(s.advance);
        const j = s.job % plan.jobs;
        const k = j % plan.keys;
        const spec = specs[j] as JobSpec;
        const slot = s.slot ? slotOf(plan, k) : undefined;
        const begun = await mine.beginRun(spec, LEASE, 60_000, undefined, slot, rateOf(plan, k));
        if (begun.kind === "limited") limited++;
        if (begun.kind !== "run") continue;
        (starts[k] as number[]).push(begun.job.startedAt as number);
        await turns(s.hold);
        const finished = await mine.finishRun(spec.id, begun.attempt, OUTCOMES[s.outcome]);
        expect(finished.kind).toBe("ok");
      }
    }),
  );
  for (let k = 0; k < plan.keys; k++) {
    expectWithinRate(starts[k] as number[], plan.limit, plan.periodMs, `key ${k}`);
  }
  // Every `limited` answer was counted, and only those.
  expect((await store.stats()).totals.limited).toBe(limited);
  return { specs, starts };
}

describe("rate limits under racing workers (property)", () => {
  it("memory (fake clock): never more than `limit` begins of a key in any window", async () => {
    await fc.assert(
      fc.asyncProperty(plans, async (plan) => {
        let now = 1_700_000_000_000;
        const store = new MemoryStore({ clock: () => now });
        const { starts } = await race([store], plan, (ms) => {
          now += ms;
        });
        // The clock stands still: each window admits exactly the room it has left, then limits.
        for (let k = 0; k < plan.keys; k++) {
          const live = (starts[k] as number[]).filter((t) => t > now - plan.periodMs).length;
          const room = Math.max(0, plan.limit - live);
          for (let i = 0; i <= room; i++) {
            const res = accepted(
              await store.submitJob(jobSpec({ handler: "race" }), {
                delayMs: 0,
                recoverGraceMs: 0,
              }),
            );
            const spec = res.message?.job as JobSpec;
            const begun = await store.beginRun(spec, LEASE, 60_000, undefined, undefined, {
              ...rateOf(plan, k),
            });
            expect(begun.kind, `fresh begin ${i} of key ${k} (room ${room})`).toBe(
              i < room ? "run" : "limited",
            );
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  describe("redis", () => {
    const connections = [new Redis(REDIS_URL), new Redis(REDIS_URL), new Redis(REDIS_URL)];
    afterAll(() => {
      for (const c of connections) c.disconnect();
    });

    async function deletePrefix(prefix: string): Promise<void> {
      const redis = connections[0] as Redis;
      let cursor = "0";
      do {
        const [next, found] = await redis.scan(cursor, "MATCH", `{${prefix}}:*`, "COUNT", 1000);
        if (found.length > 0) await redis.del(...found);
        cursor = next;
      } while (cursor !== "0");
    }

    it("never more than `limit` begins of a key in any window (three connections)", async () => {
      let admitted = 0;
      await fc.assert(
        fc.asyncProperty(plans, async (plan) => {
          const prefix = `rrace-${Math.random().toString(36).slice(2, 10)}`;
          const stores = connections.map((c) => new RedisStore({ client: fromIoredis(c), prefix }));
          try {
            const { starts } = await race(stores, plan);
            admitted += starts.reduce((n, s) => n + s.length, 0);
          } finally {
            await deletePrefix(prefix);
          }
        }),
        { numRuns: 40 },
      );
      // The races did race: runs were admitted (and windows slid, periods being tens of ms).
      expect(admitted).toBeGreaterThan(40);
    }, 120_000);
  });
});
