/**
 * A job with more dependents than one release changes at once (the Redis store's script changes
 * 1,000 per call, so a script stays short): the rest is released by the next tick, not left
 * `waiting` until some other job with dependents happens to finish (it could wait for good); and
 * a release left over when the job is retried from the dead-letter list is the dead job's, so
 * none of its cancelled dependents runs when the retried job succeeds. Memory and Redis stores.
 */
import { describe, expect, it } from "vitest";
import { startRunnerRig } from "../support/runner-rig.ts";
import { storeFactories } from "../support/stores.ts";

/** More than one release changes (1,000). */
const DEPENDENTS = 1_200;

describe.each(storeFactories.filter((f) => f.name !== "upstash"))(
  "fan-out past one release on $name",
  (factory) => {
    it("the dependents one release leaves are released by the next tick", async () => {
      const t = await startRunnerRig(factory, { ok: { run: () => "ok" } }, 5);
      try {
        const a = await t.submit("ok");
        const jobs = Array.from({ length: DEPENDENTS }, () => ({ handler: "ok", after: [a.id] }));
        for (let i = 0; i < jobs.length; i += 500) {
          const { items } = await t.engine.broker.submitMany(jobs.slice(i, i + 500));
          expect(items.filter((item) => item.outcome !== "accepted")).toEqual([]);
        }
        expect((await t.engine.stats()).jobs.waiting).toBe(DEPENDENTS);
        expect((await t.deliver(a)).status).toBe(200);
        await t.engine.ticker.tick();
        const { jobs: gauges } = await t.engine.stats();
        expect(gauges.waiting).toBe(0);
        expect(gauges.queued).toBe(DEPENDENTS);
      } finally {
        await t.cleanup();
      }
    }, 60_000);

    it("a release left over from a dead job is its own: a dependent added after a retry from the dead-letter list is not cancelled by it", async () => {
      const t = await startRunnerRig(
        factory,
        {
          flaky: {
            retries: 0,
            run: () => {
              throw new Error("fails");
            },
          },
          ok: { run: () => "ok" },
        },
        6,
      );
      try {
        const a = await t.submit("flaky");
        const jobs = Array.from({ length: DEPENDENTS }, () => ({ handler: "ok", after: [a.id] }));
        for (let i = 0; i < jobs.length; i += 500) {
          await t.engine.broker.submitMany(jobs.slice(i, i + 500));
        }
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
