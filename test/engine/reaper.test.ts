/**
 * The reaper (invariant I1 of docs/architecture.md, when the queue gives up silently): a job whose
 * attempt started and then saw no delivery and no failure callback — the worker died or its
 * retries were never delivered, the
 * queue gave up, and its failure callback was lost too — is re-dispatched by a tick once its
 * watch is due (`reapAfterMs` after the run lease ended, or after a failed attempt), or
 * dead-lettered when its retries are spent. Each case loses the queue's messages on purpose (the
 * double's pending list is emptied), so nothing but the tick can bring the job back.
 */
import { describe, expect, it } from "vitest";
import type { OutboxMessage } from "../../src/core/model.ts";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { deliveryResponse } from "../../src/http/delivery.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { prng } from "../support/prng.ts";
import { storeFactories } from "../support/stores.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const TIMEOUT_MS = 1_000;
const GRACE_MS = 50;
const REAP_MS = 150;
const MAX_REAPS = 3;
/** Long enough for a run lease to end and its watch to come due. */
const PAST_WATCH_MS = TIMEOUT_MS + GRACE_MS + REAP_MS + 100;

describe.each(storeFactories)("reaper on $name", (factory) => {
  async function setup(opts: { retries?: number; failFirst?: boolean } = {}) {
    const handle = await factory.make();
    const queue = new ChaosQueue(prng(7));
    const runs: number[] = [];
    const engine = createEngine({
      store: handle.store,
      transport: queue,
      handlers: {
        work: {
          run: (_input, ctx) => {
            runs.push(ctx.attempt);
            if (opts.failFirst && ctx.attempt === 1) throw new Error("transient");
            return "done";
          },
        },
      },
      logger: silentLogger,
      leaseGraceMs: GRACE_MS,
      reapAfterMs: REAP_MS,
      maxReaps: MAX_REAPS,
      jobs: { timeoutMs: TIMEOUT_MS, retries: opts.retries ?? 3 },
      tick: { recoverGraceMs: 100 },
      degradation: false,
    });
    const deliver = (message: OutboxMessage) =>
      engine.runner
        .deliver({
          url: "http://worker.test/v1/worker",
          headers: new Headers({ "upstash-signature": "chaos-queue-signature" }),
          body: JSON.stringify(message.job),
        })
        .then(deliveryResponse);
    /** The queue loses everything it holds: no delivery, no failure callback. */
    const queueGivesUp = () => queue.pending.splice(0).map((p) => p.message);
    return { ...handle, engine, queue, runs, deliver, queueGivesUp };
  }

  it("a job whose worker died mid-attempt and whose queue then gave up silently is re-dispatched and runs to success", async () => {
    const t = await setup();
    try {
      const { job } = await t.engine.broker.submit({ handler: "work" });
      const [message] = t.queueGivesUp();
      if (!message) throw new Error("the submit was not published");
      // The worker began attempt 1 and died: beginRun ran, the handler never finished.
      expect((await t.store.beginRun(message.job, TIMEOUT_MS + GRACE_MS, REAP_MS)).kind).toBe(
        "run",
      );

      // While the attempt's lease holds, and until its watch is due, ticks leave it alone.
      expect(await t.engine.ticker.tick()).toMatchObject({ recovered: 0 });
      expect(t.queue.pending).toHaveLength(0);

      await sleep(PAST_WATCH_MS);
      expect(await t.engine.ticker.tick()).toMatchObject({ recovered: 1 });
      const [again] = t.queueGivesUp();
      // A dedup id of its own for each re-dispatch: no dedup window can swallow it.
      expect(again).toMatchObject({ id: job.id, attempt: 1 });
      expect(again?.dedupId).toMatch(new RegExp(`^${job.id}~a1-\\d+$`));
      if (!again) return;

      expect((await t.deliver(again)).status).toBe(200);
      expect(t.runs).toEqual([2]);
      expect(await t.store.getJob(job.id)).toMatchObject({ status: "succeeded", attempts: 2 });

      // Finished: nothing is watched any more.
      await sleep(PAST_WATCH_MS);
      expect(await t.engine.ticker.tick()).toMatchObject({ recovered: 0 });
      expect(t.queue.pending).toHaveLength(0);
    } finally {
      await t.cleanup();
    }
  });

  it("a failed attempt whose retry never comes is re-dispatched reapAfterMs after the failure", async () => {
    const t = await setup({ failFirst: true });
    try {
      const { job } = await t.engine.broker.submit({ handler: "work" });
      const [message] = t.queueGivesUp();
      if (!message) throw new Error("the submit was not published");
      expect((await t.deliver(message)).status).toBe(500); // the queue would retry; it gives up
      expect(await t.store.getJob(job.id)).toMatchObject({ status: "failed", attempts: 1 });

      await sleep(REAP_MS + 100);
      expect(await t.engine.ticker.tick()).toMatchObject({ recovered: 1 });
      const [again] = t.queueGivesUp();
      if (!again) throw new Error("not re-dispatched");
      expect((await t.deliver(again)).status).toBe(200);
      expect(t.runs).toEqual([1, 2]);
      expect(await t.store.getJob(job.id)).toMatchObject({ status: "succeeded", attempts: 2 });
    } finally {
      await t.cleanup();
    }
  });

  it("an abandoned job with no retries left is dead-lettered, not re-dispatched", async () => {
    const t = await setup({ retries: 0 });
    try {
      const { job } = await t.engine.broker.submit({ handler: "work" });
      const [message] = t.queueGivesUp();
      if (!message) throw new Error("the submit was not published");
      await t.store.beginRun(message.job, TIMEOUT_MS + GRACE_MS, REAP_MS);

      await sleep(PAST_WATCH_MS);
      expect(await t.engine.ticker.tick()).toMatchObject({ recovered: 1 });
      expect(t.queue.pending).toHaveLength(0);
      const dead = await t.store.getJob(job.id);
      expect(dead).toMatchObject({ status: "dead", error: { name: "AbandonedError" } });
      expect((await t.store.listDead({ limit: 10 })).items.map((j) => j.id)).toEqual([job.id]);
      expect(t.runs).toEqual([]);

      // From the dead-letter list it runs again like any dead job.
      const retried = await t.engine.broker.retryDead(job.id);
      expect(retried).not.toBeNull();
      const [again] = t.queueGivesUp();
      if (!again) throw new Error("retryDead did not publish");
      expect((await t.deliver(again)).status).toBe(200);
      expect(await t.store.getJob(job.id)).toMatchObject({ status: "succeeded" });
    } finally {
      await t.cleanup();
    }
  });

  it("a job whose re-dispatches never reach a worker is dead-lettered after maxReaps reaps", async () => {
    const t = await setup();
    try {
      const { job } = await t.engine.broker.submit({ handler: "work" });
      t.queueGivesUp(); // the submit's publish: never delivered
      await sleep(150);
      // The tick re-publishes the never-begun submit, and its ack makes it attempt 0's watch.
      expect(await t.engine.ticker.tick()).toMatchObject({ recovered: 1 });
      t.queueGivesUp();
      for (let reap = 1; reap <= MAX_REAPS; reap++) {
        await sleep(REAP_MS + 100);
        expect(await t.engine.ticker.tick()).toMatchObject({ recovered: 1 });
        expect(t.queueGivesUp()).toHaveLength(1); // re-dispatched, lost again
        expect(await t.store.getJob(job.id)).toMatchObject({ status: "queued" });
      }
      await sleep(REAP_MS + 100);
      await t.engine.ticker.tick();
      expect(t.queue.pending).toHaveLength(0);
      const dead = await t.store.getJob(job.id);
      expect(dead).toMatchObject({ status: "dead", error: { name: "AbandonedError" } });
      expect(dead?.error?.message).toContain(`re-dispatched ${MAX_REAPS} times`);
      // Nothing is watched any more.
      await sleep(REAP_MS + 100);
      expect(await t.engine.ticker.tick()).toMatchObject({ recovered: 0 });
    } finally {
      await t.cleanup();
    }
  });
});
