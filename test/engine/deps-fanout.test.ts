/**
 * A job with more dependents than one release changes at once (the Redis store's script changes
 * 1,000 per call, so a script stays short): the rest is released by the next tick, not left
 * `waiting` until some other job with dependents happens to finish (it could wait for good); and
 * a release left over when the job is retried from the dead-letter list is the dead job's, so
 * none of its cancelled dependents runs when the retried job succeeds. Memory and Redis stores.
 */
import { describe, expect, it } from "vitest";
import type { Engine, Handlers } from "../../src/engine/index.ts";
import { startRunnerRig } from "../support/runner-rig.ts";
import { makeRedisStore, storeFactories } from "../support/stores.ts";

/** More than one release changes (1,000). */
const DEPENDENTS = 1_200;

/** `flaky` dies at its first attempt; `ok` succeeds. */
const DYING: Handlers = {
  flaky: {
    retries: 0,
    run: () => {
      throw new Error("fails");
    },
  },
  ok: { run: () => "ok" },
};

/** {@link DEPENDENTS} `ok` jobs after job `id`, in batches. */
async function submitDependents(engine: Engine, id: string): Promise<void> {
  const jobs = Array.from({ length: DEPENDENTS }, () => ({ handler: "ok", after: [id] }));
  for (let i = 0; i < jobs.length; i += 500) {
    const { items } = await engine.broker.submitMany(jobs.slice(i, i + 500));
    expect(items.filter((item) => item.outcome !== "accepted")).toEqual([]);
  }
}

describe.each(storeFactories.filter((f) => f.name !== "upstash"))(
  "fan-out past one release on $name",
  (factory) => {
    it("the dependents one release leaves are released by the next tick", async () => {
      const t = await startRunnerRig(factory, { ok: { run: () => "ok" } }, 5);
      try {
        const a = await t.submit("ok");
        await submitDependents(t.engine, a.id);
        expect((await t.engine.stats()).jobs.waiting).toBe(DEPENDENTS);
        expect((await t.deliver(a)).status).toBe(200);
        // Each released job is one outbox message; the note asking the next tick to release the
        // rest is none (it was counted as one).
        const released = await t.engine.stats();
        expect(released.outbox).toBe(released.jobs.queued);
        await t.engine.ticker.tick();
        const { jobs: gauges } = await t.engine.stats();
        expect(gauges.waiting).toBe(0);
        expect(gauges.queued).toBe(DEPENDENTS);
      } finally {
        await t.cleanup();
      }
    }, 60_000);

    it("a release left over from a dead job is its own: a dependent added after a retry from the dead-letter list is not cancelled by it", async () => {
      const t = await startRunnerRig(factory, DYING, 6);
      try {
        const a = await t.submit("flaky");
        await submitDependents(t.engine, a.id);
        // Dead (489: the queue is told not to retry): its dependents are cancelled (on Redis,
        // the first 1,000 at once).
        expect((await t.deliver(a)).status).toBe(489);
        expect((await t.engine.broker.getJob(a.id)).status).toBe("dead");
        // Retried before a tick went on with the rest, and a new job waits for it.
        await t.engine.broker.retryDead(a.id);
        const { job: later } = await t.engine.broker.submit({ handler: "ok", after: [a.id] });
        expect(later.status).toBe("waiting");
        await t.engine.ticker.tick();
        const { jobs: gauges, totals } = await t.engine.stats();
        expect(totals.cancelled).toBe(DEPENDENTS);
        expect((await t.engine.broker.getJob(later.id)).status).toBe("waiting");
        expect(gauges.waiting).toBe(1);
      } finally {
        await t.cleanup();
      }
    }, 60_000);
  },
);

/**
 * What the previous version left: a capped release remembered as `<ok>:<id>`, naming the
 * dependency's live set, and no outbox member asking the tick to go on. Made here from the new
 * form (the leftover set renamed back, its entry rewritten, the member removed). Such a leftover
 * moves at the next release of any job with dependents, as it did before (that release gives what
 * it leaves a set of its own and asks the tick to go on); a retry of its dead dependency from the
 * dead-letter list gives it a set of its own first.
 */
describe("a release left over by the previous version, on Redis", () => {
  async function rig(handlers: Handlers) {
    let made: Awaited<ReturnType<typeof makeRedisStore>> | undefined;
    const factory = {
      name: "redis",
      make: async () => {
        made = await makeRedisStore();
        return made;
      },
    };
    const t = await startRunnerRig(factory, handlers, 7);
    const { redis, prefix } = made!;
    const root = `{${prefix}}`;
    /** Rewrite every leftover of the new form `<ok>:<id>#<n>` as the old `<ok>:<id>`. */
    const asOld = async () => {
      for (const entry of await redis.smembers(`${root}:deps:todo`)) {
        const [flagged, _n] = entry.split("#") as [string, string];
        await redis.rename(`${root}:deps:${entry.slice(2)}`, `${root}:deps:${flagged.slice(2)}`);
        await redis.srem(`${root}:deps:todo`, entry);
        await redis.sadd(`${root}:deps:todo`, flagged);
      }
      await redis.zrem(`${root}:outbox`, "deps:todo");
      expect(await redis.smembers(`${root}:deps:todo`)).toHaveLength(1);
    };
    return { t, asOld };
  }

  it("a dependent added after the dead dependency's retry is not cancelled by its leftover", async () => {
    const { t, asOld } = await rig(DYING);
    try {
      const a = await t.submit("flaky");
      await submitDependents(t.engine, a.id);
      expect((await t.deliver(a)).status).toBe(489);
      await asOld();
      await t.engine.broker.retryDead(a.id);
      const { job: later } = await t.engine.broker.submit({ handler: "ok", after: [a.id] });
      await t.engine.ticker.tick();
      expect((await t.engine.broker.getJob(later.id)).status).toBe("waiting");
      const { jobs: gauges, totals } = await t.engine.stats();
      expect(totals.cancelled).toBe(DEPENDENTS);
      expect(gauges.waiting).toBe(1);
    } finally {
      await t.cleanup();
    }
  }, 60_000);
});
