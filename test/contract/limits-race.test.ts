/**
 * Concurrency limits under racing workers (a property, fast-check): many simulated workers each
 * run a random sequence of `beginRun` → (a few turns of the event loop) → `finishRun` on a shared
 * pool of jobs, all at once (`Promise.all`), against the memory store and the real Redis store
 * (several connections, so their scripts truly interleave at the server). At no moment may more
 * than `limit` jobs of one key be running.
 *
 * "Running", as the workers see it: `beginRun` answered `run` and the worker has not yet asked to
 * finish. Every job in that set is running in the store too (its begin was applied; its finish
 * not even sent), so the set exceeding `limit` proves the store admitted too many. Afterwards no
 * slot may be left behind: exactly `limit` fresh jobs of each key run, the next is limited.
 */
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { JobSpec } from "../../src/core/model.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { RunLimit, RunOutcome, Store } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { REDIS_URL } from "../support/stores.ts";
import { accepted, jobSpec } from "./fixtures.ts";

const LEASE = 60_000;

/** One step of a worker: take a job, hold it a few turns if it runs, finish it somehow. */
interface Step {
  job: number;
  /** Turns of the event loop before the begin. */
  before: number;
  /** Turns between `run` and the finish. */
  hold: number;
  outcome: "ok" | "retry" | "dead";
}

interface Plan {
  limit: number;
  keys: number;
  jobs: number;
  workers: Step[][];
}

const step = fc.record({
  job: fc.nat({ max: 63 }),
  before: fc.nat({ max: 3 }),
  hold: fc.nat({ max: 4 }),
  outcome: fc.constantFrom<Step["outcome"]>("ok", "ok", "retry", "dead"),
});
const plans: fc.Arbitrary<Plan> = fc.record({
  limit: fc.integer({ min: 1, max: 3 }),
  keys: fc.integer({ min: 1, max: 3 }),
  jobs: fc.integer({ min: 2, max: 12 }),
  workers: fc.array(fc.array(step, { minLength: 1, maxLength: 10 }), {
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
  dead: { ok: false, error: { name: "E", message: "dead" }, final: true },
};

/**
 * Runs `plan` on `stores` (worker i uses `stores[i % stores.length]`, all on one state) and
 * checks the limit at every `run` and, afterwards, that no slot was left behind.
 */
async function race(stores: Store[], plan: Plan): Promise<void> {
  const store = stores[0] as Store;
  const limitOf = (k: number): RunLimit => ({ key: `race=7:default:k${k}`, limit: plan.limit });
  const specs: JobSpec[] = [];
  for (let j = 0; j < plan.jobs; j++) {
    const res = accepted(
      await store.submitJob(jobSpec({ handler: "race" }), { delayMs: 0, recoverGraceMs: 60_000 }),
    );
    specs.push(res.message?.job as JobSpec);
  }
  const running = Array.from({ length: plan.keys }, () => new Set<string>());
  let peak = 0;

  await Promise.all(
    plan.workers.map(async (steps, w) => {
      const mine = stores[w % stores.length] as Store;
      for (const s of steps) {
        await turns(s.before);
        const j = s.job % plan.jobs;
        const k = j % plan.keys;
        const spec = specs[j] as JobSpec;
        const begun = await mine.beginRun(spec, LEASE, 60_000, undefined, limitOf(k));
        if (begun.kind !== "run") continue;
        const set = running[k] as Set<string>;
        set.add(spec.id);
        peak = Math.max(peak, set.size);
        expect(set.size, `jobs of key ${k} running at once`).toBeLessThanOrEqual(plan.limit);
        await turns(s.hold);
        set.delete(spec.id); // before the finish is even sent
        const finished = await mine.finishRun(spec.id, begun.attempt, OUTCOMES[s.outcome]);
        expect(finished.kind).toBe("ok");
      }
    }),
  );
  expect(peak).toBeLessThanOrEqual(plan.limit);

  // No slot left behind: every key admits exactly `limit` fresh jobs, then limits the next.
  for (let k = 0; k < plan.keys; k++) {
    for (let i = 0; i <= plan.limit; i++) {
      const res = accepted(
        await store.submitJob(jobSpec({ handler: "race" }), { delayMs: 0, recoverGraceMs: 0 }),
      );
      const begun = await store.beginRun(
        res.message?.job as JobSpec,
        LEASE,
        60_000,
        undefined,
        limitOf(k),
      );
      expect(begun.kind).toBe(i < plan.limit ? "run" : "limited");
    }
  }
}

describe("concurrency limits under racing workers (property)", () => {
  it("memory: never more than `limit` jobs of a key run at once", async () => {
    await fc.assert(
      fc.asyncProperty(plans, (plan) => race([new MemoryStore()], plan)),
      { numRuns: 150 },
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

    it("never more than `limit` jobs of a key run at once (three connections)", async () => {
      await fc.assert(
        fc.asyncProperty(plans, async (plan) => {
          const prefix = `race-${Math.random().toString(36).slice(2, 10)}`;
          const stores = connections.map((c) => new RedisStore({ client: fromIoredis(c), prefix }));
          try {
            await race(stores, plan);
          } finally {
            await deletePrefix(prefix);
          }
        }),
        { numRuns: 40 },
      );
    }, 120_000);
  });
});
