/**
 * @module
 * Part of the Store contract (`store.contract.ts`): the failure callback (`markDead`) and the
 * dead-letter list (`listDead`, `retryDead`, `deleteDead`).
 */
import { describe, expect, it } from "vitest";
import type { JobRecord } from "../../src/core/model.ts";
import type { Store } from "../../src/store/port.ts";
import {
  fullJobSpec,
  jobSpec,
  type MakeContractStore,
  occurrenceSpec,
  scheduleRecord,
  sleep,
} from "./fixtures.ts";
import { expectBetween, useContractStore } from "./harness.ts";

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describeDeadLetterContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const { submit, recoverable, submitted, run, allPages } = useContractStore(make, (made) => {
      store = made;
    });

    describe("markDead", () => {
      it("marks a job whose run lease expired dead with the error, lists it once, and is idempotent", async () => {
        const spec = await submitted();
        const begun = await run(spec, 40);
        await sleep(60);
        const error = { name: "Error", message: "retries exhausted" };
        const t0 = await store.now();
        const dead = await store.markDead(spec, error);
        const t1 = await store.now();
        if (!dead) throw new Error("markDead answered null");
        expectBetween(dead.finishedAt, t0, t1);
        expect(dead).toEqual({ ...begun.job, status: "dead", error, finishedAt: dead.finishedAt });
        expect(await store.getJob(spec.id)).toEqual(dead);

        expect(await store.markDead(spec, { name: "Error", message: "again" })).toEqual(dead);
        expect(await store.listDead({ limit: 10 })).toEqual({ items: [dead] });
        // The attempt that was running can no longer finish.
        expect(await store.finishRun(spec.id, 1, { ok: true, result: 1 })).toEqual({
          kind: "stale",
          job: dead,
        });
      });

      it("leaves a running job with an unexpired run lease alone: the live attempt may still succeed", async () => {
        const spec = await submitted();
        const begun = await run(spec);
        const late = { name: "Error", message: "late failure callback" };
        expect(await store.markDead(spec, late)).toEqual(begun.job);
        expect(await store.getJob(spec.id)).toEqual(begun.job);
        expect(await store.listDead({ limit: 10 })).toEqual({ items: [] });
        const finished = await store.finishRun(spec.id, 1, { ok: true, result: 7 });
        expect(finished.kind === "ok" && finished.job.status).toBe("succeeded");
        expect(await store.listDead({ limit: 10 })).toEqual({ items: [] });
      });

      it("ignores the failure callback of an earlier dispatch (spec.runAt differs) after retryDead", async () => {
        const now = await store.now();
        const spec = await submitted({}, now - 10_000);
        const error = { name: "Error", message: "gave up" };
        expect((await store.markDead(spec, error))?.status).toBe("dead");
        const retried = await store.retryDead(spec.id, { recoverGraceMs: 0 });
        if (!retried) throw new Error("retryDead answered null");
        expect(retried.job.runAt).not.toBe(spec.runAt);

        // The late callback carries the old spec: the new dispatch is left alone.
        expect(await store.markDead(spec, error)).toEqual(retried.job);
        expect(await store.getJob(spec.id)).toEqual(retried.job);
        expect(await store.listDead({ limit: 10 })).toEqual({ items: [] });
        expect((await recoverable()).map((m) => m.dedupId)).toEqual([retried.message.dedupId]);

        // The callback of the new dispatch applies.
        expect((await store.markDead(retried.message.job, error))?.status).toBe("dead");
      });

      it("does not re-create a missing job without scheduleId (it expired): null, nothing written", async () => {
        const spec = fullJobSpec();
        expect(await store.markDead(spec, { name: "Error", message: "late" })).toBeNull();
        expect(await store.getJob(spec.id)).toBeNull();
        expect(await store.listDead({ limit: 10 })).toEqual({ items: [] });
        expect(await store.listJobs({ limit: 10 })).toEqual({ items: [] });
      });

      it("creates a missing job from its spec, as dead", async () => {
        const s = scheduleRecord();
        await store.putSchedule(s);
        const spec = occurrenceSpec(s, 1_800_000_000_000);
        const error = { name: "Error", message: "never delivered" };
        const dead = await store.markDead(spec, error);
        expect(dead).toEqual({
          ...spec,
          status: "dead",
          attempts: 0,
          error,
          finishedAt: expect.any(Number),
        });
        expect(await store.getJob(spec.id)).toEqual(dead);
        expect((await store.listRuns(s.id, { limit: 10 })).items).toEqual([dead]);
        expect((await store.listDead({ limit: 10 })).items).toEqual([dead]);
      });

      it("leaves succeeded, cancelled and skipped jobs alone", async () => {
        const error = { name: "Error", message: "late failure callback" };
        const ok = await submitted();
        await run(ok);
        const succeeded = (
          (await store.finishRun(ok.id, 1, { ok: true, result: 1 })) as { job: JobRecord }
        ).job;
        expect(await store.markDead(ok, error)).toEqual(succeeded);

        const queued = (await submit(jobSpec(), { delayMs: 0, recoverGraceMs: 60_000 })).job;
        const cancelled = ((await store.cancelJob(queued.id)) as { job: JobRecord }).job;
        expect(await store.markDead({ ...queued }, error)).toEqual(cancelled);

        const s = scheduleRecord({ overlap: "skip" });
        await store.putSchedule(s);
        await run(occurrenceSpec(s, 1_800_000_000_000));
        const occ2 = occurrenceSpec(s, 1_800_000_060_000);
        const skipped = (await store.beginRun(occ2, 5_000)) as { job: JobRecord };
        expect(await store.markDead(occ2, error)).toEqual(skipped.job);

        expect(await store.listDead({ limit: 10 })).toEqual({ items: [] });
      });

      it("releases the schedule's overlap lease", async () => {
        const s = scheduleRecord({ overlap: "skip" });
        await store.putSchedule(s);
        const occ1 = occurrenceSpec(s, 1_800_000_000_000);
        await run(occ1, 40);
        await sleep(60);
        await store.markDead(occ1, { name: "Error", message: "gave up" });
        expect((await run(occurrenceSpec(s, 1_800_000_060_000))).attempt).toBe(1);
      });
    });

    describe("dead-letter list", () => {
      it("listDead lists newest first and pages", async () => {
        const dead: JobRecord[] = [];
        for (let i = 0; i < 5; i++) {
          const died = await store.markDead(await submitted(), { name: "Error", message: `#${i}` });
          if (died) dead.push(died);
          if (i === 1) await sleep(2);
        }
        const newestFirst = [...dead].reverse();
        const pages = await allPages((cursor) =>
          store.listDead({ limit: 2, ...(cursor ? { cursor } : {}) }),
        );
        expect(pages).toEqual([
          newestFirst.slice(0, 2),
          newestFirst.slice(2, 4),
          newestFirst.slice(4),
        ]);
      });

      it("retryDead queues a dead job again with a fresh dedup id and an outbox message", async () => {
        const spec = await submitted();
        await run(spec, 40);
        await sleep(60);
        await run(spec);
        const error = { name: "Error", message: "still failing" };
        const died = await store.finishRun(spec.id, 2, { ok: false, error, final: true });
        const dead = (died as { job: JobRecord }).job;
        expect(dead.attempts).toBe(2);

        const t0 = await store.now();
        const retried = await store.retryDead(spec.id, { recoverGraceMs: 0 });
        const t1 = await store.now();
        expect(retried).not.toBeNull();
        if (!retried) return;
        const runAt = retried.job.runAt;
        expectBetween(runAt, t0, t1);
        const { finishedAt: _gone, ...kept } = dead;
        expect(retried.job).toEqual({ ...kept, status: "queued", runAt, attemptBase: 2 });
        expect(retried.job).not.toHaveProperty("finishedAt");
        expect(retried.message).toEqual({
          id: spec.id,
          dedupId: `${spec.id}~r1`,
          job: { ...spec, runAt },
          notBefore: runAt,
          recoverAt: runAt,
        });
        expect(await store.getJob(spec.id)).toEqual(retried.job);
        expect(await store.listDead({ limit: 10 })).toEqual({ items: [] });
        expect(await recoverable()).toEqual([
          { ...retried.message, recoverAt: expect.any(Number) },
        ]);

        expect(await store.retryDead(spec.id, { recoverGraceMs: 0 })).toBeNull();
        expect(await store.retryDead("no-such-job", { recoverGraceMs: 0 })).toBeNull();
        expect((await run(retried.message.job)).attempt).toBe(3);
        expect(await recoverable()).toEqual([]);
      });

      it("retryDead never repeats a dedup id, even when attempts did not change", async () => {
        const spec = await submitted();
        const error = { name: "Error", message: "never delivered" };
        await store.markDead(spec, error);
        const first = await store.retryDead(spec.id, { recoverGraceMs: 60_000 });
        if (!first) throw new Error("retryDead answered null");
        // The new dispatch is given up on before it ever ran: attempts stay 0.
        expect((await store.markDead(first.message.job, error))?.status).toBe("dead");
        const second = await store.retryDead(spec.id, { recoverGraceMs: 60_000 });
        if (!second) throw new Error("retryDead answered null");
        expect(second.job.attempts).toBe(first.job.attempts);
        expect(first.message.dedupId).toBe(`${spec.id}~r1`);
        expect(second.message.dedupId).toBe(`${spec.id}~r2`);
      });

      it("deleteDead removes a dead job entirely, and nothing else", async () => {
        const spec = await submitted();
        await store.markDead(spec, { name: "Error", message: "x" });
        expect(await store.deleteDead(spec.id)).toBe(true);
        expect(await store.getJob(spec.id)).toBeNull();
        expect(await store.listDead({ limit: 10 })).toEqual({ items: [] });
        expect(await store.listJobs({ limit: 10 })).toEqual({ items: [] });
        expect(await store.deleteDead(spec.id)).toBe(false);

        const queued = (await submit(jobSpec(), { delayMs: 0, recoverGraceMs: 60_000 })).job;
        expect(await store.deleteDead(queued.id)).toBe(false);
        expect(await store.getJob(queued.id)).toEqual(queued);
        expect(await store.deleteDead("no-such-job")).toBe(false);
      });
    });
  });
}
