/**
 * @module
 * Part of the Store contract (`store.contract.ts`): attempts: `beginRun` (replays, occurrences, run
 * leases, overlap `skip`) and `finishRun`.
 */
import { describe, expect, it } from "vitest";
import type { JobRecord } from "../../src/core/model.ts";
import type { Store } from "../../src/store/port.ts";
import {
  fullJobSpec,
  jobSpec,
  type MakeContractStore,
  occurrenceSpec,
  outboxMessage,
  scheduleRecord,
  sleep,
  uid,
} from "./fixtures.ts";
import { expectBetween, useContractStore } from "./harness.ts";

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describeRunsContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const { submit, recoverable, writeOutbox, submitRecoverable, submitted, run } =
      useContractStore(make, (made) => {
        store = made;
      });

    describe("beginRun", () => {
      it("a delivery token used before is a replay: nothing written, nothing counted", async () => {
        const s = scheduleRecord();
        await store.putSchedule(s);
        const spec = occurrenceSpec(s, 1_800_000_000_000);
        const token = { id: uid("jwt"), expiresAt: Date.now() + 300_000 };
        const first = await store.beginRun(spec, 5_000, undefined, token);
        expect(first.kind).toBe("run");
        const job = await store.getJob(spec.id);
        const totals = (await store.stats()).totals;
        // The same token again changes nothing. While the attempt it began runs under its lease
        // it is busy (the request re-sent after a lost answer: the queue asks again later)…
        const again = await store.beginRun(spec, 5_000, undefined, token);
        expect(again.kind).toBe("busy");
        expect(again.kind === "busy" && again.retryAfterMs).toBeGreaterThan(0);
        expect(await store.getJob(spec.id)).toEqual(job);
        // …and once that attempt has finished it is done.
        await store.finishRun(spec.id, 1, {
          ok: false,
          error: { name: "E", message: "x" },
          final: false,
        });
        const failed = await store.getJob(spec.id);
        expect(await store.beginRun(spec, 5_000, undefined, token)).toEqual({ kind: "replayed" });
        expect(await store.markDead(spec, { name: "E", message: "y" }, undefined, token)).toEqual(
          failed,
        );
        expect(await store.getJob(spec.id)).toEqual(failed);
        expect(failed).toMatchObject({ status: "failed", attempts: 1 });
        expect(job?.attempts).toBe(1);
        expect((await store.stats()).totals).toEqual({ ...totals, failed: totals.failed + 1 });
        // A new token is a new delivery.
        const next = await store.beginRun(spec, 5_000, undefined, { ...token, id: uid("jwt") });
        expect(next).toMatchObject({ kind: "run", attempt: 2 });
        // A replayed delivery of a job that does not exist creates nothing.
        const other = occurrenceSpec(s, 1_800_000_060_000);
        const used = { id: uid("jwt"), expiresAt: Date.now() + 300_000 };
        await store.markDead(fullJobSpec(), { name: "E", message: "z" }, undefined, used);
        expect(await store.beginRun(other, 5_000, undefined, used)).toEqual({ kind: "replayed" });
        expect(await store.getJob(other.id)).toBeNull();
      });

      it("a delivery first told to wait is told to wait again, never done: it has not run", async () => {
        const s = scheduleRecord();
        await store.putSchedule(s);
        const spec = occurrenceSpec(s, 1_800_000_000_000);
        const token = () => ({ id: uid("jwt"), expiresAt: Date.now() + 300_000 });
        // A duplicate delivery runs attempt 1; the original, meanwhile, is busy…
        expect(await store.beginRun(spec, 5_000, undefined, token())).toMatchObject({
          kind: "run",
        });
        const waited = token();
        const busy = await store.beginRun(spec, 5_000, undefined, waited);
        expect(busy.kind).toBe("busy");
        // …and its request is re-sent (its answer was lost): busy again while attempt 1 runs…
        const again = await store.beginRun(spec, 5_000, undefined, waited);
        expect(again.kind).toBe("busy");
        expect(again.kind === "busy" && again.retryAfterMs).toBeGreaterThan(1_000);
        await store.finishRun(spec.id, 1, {
          ok: false,
          error: { name: "E", message: "x" },
          final: false,
        });
        const failed = await store.getJob(spec.id);
        const totals = (await store.stats()).totals;
        // …and after it failed: still busy (a "done" would end the queue's retries of a job that
        // has to run again), with nothing written or counted.
        expect(await store.beginRun(spec, 5_000, undefined, waited)).toEqual({
          kind: "busy",
          retryAfterMs: 1_000,
        });
        expect(await store.getJob(spec.id)).toEqual(failed);
        expect((await store.stats()).totals).toEqual(totals);
        // The queue's retry comes with a token of its own and runs attempt 2.
        expect(await store.beginRun(spec, 5_000, undefined, token())).toMatchObject({
          kind: "run",
          attempt: 2,
        });
      });

      it("a dead letter deleted stays deleted: a later delivery of the occurrence creates nothing", async () => {
        const s = scheduleRecord();
        await store.putSchedule(s);
        const spec = occurrenceSpec(s, 1_800_000_000_000);
        await store.markDead(spec, { name: "E", message: "x" });
        expect(await store.deleteDead(spec.id)).toBe(true);
        expect(await store.beginRun(spec, 5_000)).toEqual({ kind: "missing" });
        expect(await store.markDead(spec, { name: "E", message: "again" })).toBeNull();
        expect(await store.getJob(spec.id)).toBeNull();
        expect((await store.listDead({ limit: 10 })).items).toEqual([]);
      });

      it("creates an occurrence from its spec and runs attempt 1", async () => {
        const s = scheduleRecord();
        await store.putSchedule(s);
        const spec = occurrenceSpec(s, 1_800_000_000_000);
        const t0 = await store.now();
        const begun = await store.beginRun(spec, 5_000);
        const t1 = await store.now();
        expect(begun.kind).toBe("run");
        if (begun.kind !== "run") return;
        expectBetween(begun.job.startedAt, t0, t1);
        expect(begun).toEqual({
          kind: "run",
          attempt: 1,
          job: { ...spec, status: "running", attempts: 1, startedAt: begun.job.startedAt },
        });
        expect(await store.getJob(spec.id)).toEqual(begun.job);
        expect((await store.listRuns(s.id, { limit: 10 })).items).toEqual([begun.job]);
        expect((await store.listJobs({ limit: 10, scheduleId: s.id })).items).toEqual([begun.job]);
      });

      it("runs a submitted job; its outbox message is not recoverable while the attempt is watched", async () => {
        const { job, message } = await submitRecoverable();
        const begun = await run(message!.job);
        expect(begun.job).toEqual({
          ...job,
          status: "running",
          attempts: 1,
          startedAt: begun.job.startedAt,
        });
        expect(await recoverable()).toEqual([]);
      });

      it("answers `final` for a finished job, without running it again, and still removes its message", async () => {
        const spec = await submitted();
        await run(spec);
        const done = await store.finishRun(spec.id, 1, { ok: true, result: { sent: true } });
        expect(done.kind).toBe("ok");
        const succeeded = (done as { job: JobRecord }).job;

        await writeOutbox([outboxMessage(spec, { recoverAt: 0 })]);
        expect(await store.beginRun(spec, 5_000)).toEqual({ kind: "final", job: succeeded });
        expect(await recoverable()).toEqual([]);
        expect(await store.getJob(spec.id)).toEqual(succeeded);

        const { job: queued } = await submit(jobSpec(), {
          delayMs: 0,
          recoverGraceMs: 60_000,
        });
        const cancelled = (await store.cancelJob(queued.id)) as { job: JobRecord };
        expect(await store.beginRun({ ...queued }, 5_000)).toEqual({
          kind: "final",
          job: cancelled.job,
        });

        const deadSpec = await submitted();
        const dead = await store.markDead(deadSpec, { name: "Error", message: "gave up" });
        expect(await store.beginRun(deadSpec, 5_000)).toEqual({ kind: "final", job: dead });
      });

      it("answers `busy` while another attempt holds an unexpired run lease", async () => {
        const spec = await submitted();
        const first = await run(spec, 1_000);
        const busy = await store.beginRun(spec, 1_000);
        expect(busy.kind).toBe("busy");
        if (busy.kind !== "busy") return;
        expect(busy.retryAfterMs).toBeGreaterThan(0);
        expect(busy.retryAfterMs).toBeLessThanOrEqual(1_000);
        expect(await store.getJob(spec.id)).toEqual(first.job);
      });

      it("runs again as attempt + 1 once the run lease expired; the old attempt becomes stale", async () => {
        const spec = await submitted();
        const first = await run(spec, 40);
        await sleep(80);
        const second = await run(spec, 5_000);
        expect(second.attempt).toBe(2);
        expect(second.job).toEqual({ ...first.job, attempts: 2, startedAt: second.job.startedAt });
        expect(second.job.startedAt).toBeGreaterThan(first.job.startedAt!);

        expect(await store.finishRun(spec.id, 1, { ok: true, result: "late" })).toEqual({
          kind: "stale",
          job: second.job,
        });
        expect((await store.finishRun(spec.id, 2, { ok: true, result: "on time" })).kind).toBe(
          "ok",
        );
      });

      it("after a retryable failure runs the next attempt, keeping the last error", async () => {
        const spec = await submitted();
        await run(spec);
        const error = { name: "TypeError", message: "boom" };
        const failed = await store.finishRun(spec.id, 1, { ok: false, error, final: false });
        expect(failed.kind).toBe("ok");
        const again = await run(spec);
        expect(again.attempt).toBe(2);
        expect(again.job).toEqual({
          ...spec,
          status: "running",
          attempts: 2,
          startedAt: again.job.startedAt,
          error,
        });
      });

      it("overlap skip: marks an occurrence skipped while another holds the schedule's run lease", async () => {
        const s = scheduleRecord({ overlap: "skip" });
        await store.putSchedule(s);
        const occ1 = occurrenceSpec(s, 1_800_000_000_000);
        const occ2 = occurrenceSpec(s, 1_800_000_060_000);
        const occ3 = occurrenceSpec(s, 1_800_000_120_000);
        await run(occ1);

        const t0 = await store.now();
        const skipped = await store.beginRun(occ2, 5_000);
        const t1 = await store.now();
        expect(skipped.kind).toBe("skipped");
        if (skipped.kind !== "skipped") return;
        expectBetween(skipped.job.finishedAt, t0, t1);
        expect(skipped.job).toEqual({
          ...occ2,
          status: "skipped",
          attempts: 0,
          finishedAt: skipped.job.finishedAt,
        });
        expect(await store.getJob(occ2.id)).toEqual(skipped.job);
        expect(await store.beginRun(occ2, 5_000)).toEqual({ kind: "final", job: skipped.job });

        expect((await store.finishRun(occ1.id, 1, { ok: true, result: null })).kind).toBe("ok");
        expect((await run(occ3)).attempt).toBe(1);
      });

      it("overlap skip: a deleted schedule's running occurrence does not skip those of one created again under its id", async () => {
        const s = scheduleRecord({ overlap: "skip" });
        await store.putSchedule(s);
        const old = occurrenceSpec(s, 1_800_000_000_000);
        await run(old);
        expect(await store.deleteSchedule(s.id)).toBe(true);
        const again = scheduleRecord({ id: s.id, overlap: "skip" });
        if ((await store.putSchedule(again)).kind !== "ok") throw new Error("put refused");
        const first = occurrenceSpec(again, 1_800_000_300_000);
        expect((await run(first)).attempt).toBe(1);
        // The old run ending leaves the new schedule's lease alone: the next one is skipped.
        expect((await store.finishRun(old.id, 1, { ok: true, result: null })).kind).toBe("ok");
        expect((await store.beginRun(occurrenceSpec(again, 1_800_000_360_000), 5_000)).kind).toBe(
          "skipped",
        );
      });

      it("overlap skip after a PATCH from allow: occurrences begun before it hold back the next until all have ended", async () => {
        const s = scheduleRecord({ overlap: "allow" });
        const put = await store.putSchedule(s);
        if (put.kind !== "ok") throw new Error("put refused");
        const t0 = await store.now();
        // Two runs under allow, the older fired well before the newer.
        const older = occurrenceSpec(s, t0 - 3_600_000);
        const newer = occurrenceSpec(s, t0 - 60_000);
        await run(older);
        await run(newer);
        const patched = await store.putSchedule(
          { ...put.schedule, overlap: "skip" },
          put.schedule.rev,
        );
        if (patched.kind !== "ok") throw new Error("patch refused");
        const skip = { ...s, overlap: "skip" as const };
        const next = (k: number) => occurrenceSpec(skip, t0 + k * 60_000);
        expect((await store.beginRun(next(1), 5_000)).kind).toBe("skipped");
        // The newer ends first: the older still runs, so the next is skipped too.
        expect((await store.finishRun(newer.id, 1, { ok: true, result: null })).kind).toBe("ok");
        expect((await store.beginRun(next(2), 5_000)).kind).toBe("skipped");
        // Both ended (taking no lease, they leave none behind): the next one runs…
        expect((await store.finishRun(older.id, 1, { ok: true, result: null })).kind).toBe("ok");
        expect((await run(next(3))).attempt).toBe(1);
        // …and holds the lease as its own: the one after is skipped.
        expect((await store.beginRun(next(4), 5_000)).kind).toBe("skipped");
      });

      it("overlap skip: the schedule's run lease expires with the run lease, and its holder may run again", async () => {
        const s = scheduleRecord({ overlap: "skip" });
        await store.putSchedule(s);
        const occ1 = occurrenceSpec(s, 1_800_000_000_000);
        const occ2 = occurrenceSpec(s, 1_800_000_060_000);
        const occ3 = occurrenceSpec(s, 1_800_000_120_000);
        await run(occ1, 40);
        await sleep(80);
        expect((await run(occ1, 5_000)).attempt).toBe(2);
        expect((await store.beginRun(occ2, 5_000)).kind).toBe("skipped");
        expect(
          (
            await store.finishRun(occ1.id, 2, {
              ok: false,
              error: { name: "E", message: "x" },
              final: false,
            })
          ).kind,
        ).toBe("ok");
        expect((await run(occ3)).attempt).toBe(1);
      });

      it("overlap skip: a retry of a started occurrence is `busy`, not skipped, while another holds the lease", async () => {
        const s = scheduleRecord({ overlap: "skip" });
        await store.putSchedule(s);
        const occ1 = occurrenceSpec(s, 1_800_000_000_000);
        const occ2 = occurrenceSpec(s, 1_800_000_060_000);
        const started = await run(occ2, 40);
        await sleep(60); // its run lease (and the schedule's) expired: the queue will retry it
        await run(occ1);
        const retry = await store.beginRun(occ2, 5_000);
        expect(retry.kind).toBe("busy");
        if (retry.kind === "busy") {
          expect(retry.retryAfterMs).toBeGreaterThan(0);
          expect(retry.retryAfterMs).toBeLessThanOrEqual(5_000);
        }
        expect(await store.getJob(occ2.id)).toEqual(started.job);
      });

      it("answers `missing` for a missing job without scheduleId (it expired), writing nothing", async () => {
        const spec = fullJobSpec();
        expect(await store.beginRun(spec, 5_000)).toEqual({ kind: "missing" });
        expect(await store.getJob(spec.id)).toBeNull();
        expect(await store.listJobs({ limit: 10 })).toEqual({ items: [] });
      });

      it("an occurrence not begun when its schedule is paused or deleted is skipped, not run", async () => {
        const s = scheduleRecord();
        const put = await store.putSchedule(s);
        if (put.kind !== "ok") throw new Error("put refused");
        const started = occurrenceSpec(s, 1_800_000_000_000);
        const begun = await store.beginRun(started, 5_000);
        expect(begun.kind).toBe("run");
        const paused = await store.putSchedule(
          { ...put.schedule, status: "paused" },
          put.schedule.rev,
        );
        if (paused.kind !== "ok") throw new Error("pause refused");

        const t0 = await store.now();
        const skipped = await store.beginRun(occurrenceSpec(s, 1_800_000_060_000), 5_000);
        const t1 = await store.now();
        expect(skipped.kind).toBe("skipped");
        if (skipped.kind !== "skipped") return;
        expectBetween(skipped.job.finishedAt, t0, t1);
        expect(skipped.job).toMatchObject({ status: "skipped", attempts: 0 });
        expect(await store.getJob(skipped.job.id)).toEqual(skipped.job);
        // Its delivery again changes nothing.
        expect((await store.beginRun(occurrenceSpec(s, 1_800_000_060_000), 5_000)).kind).toBe(
          "final",
        );
        // An attempt that began before the pause is retried as usual.
        await store.finishRun(started.id, 1, {
          ok: false,
          error: { name: "E", message: "x" },
          final: false,
        });
        expect((await store.beginRun(started, 5_000)).kind).toBe("run");

        // Resumed: a later occurrence runs.
        const resumed = await store.putSchedule(
          { ...paused.schedule, status: "active" },
          paused.schedule.rev,
        );
        if (resumed.kind !== "ok") throw new Error("resume refused");
        expect((await store.beginRun(occurrenceSpec(s, 1_800_000_120_000), 5_000)).kind).toBe(
          "run",
        );

        // Deleted: the next one is skipped too, and counted as skipped.
        expect(await store.deleteSchedule(s.id)).toBe(true);
        const before = (await store.stats()).totals.skipped;
        expect((await store.beginRun(occurrenceSpec(s, 1_800_000_180_000), 5_000)).kind).toBe(
          "skipped",
        );
        expect((await store.stats()).totals.skipped).toBe(before + 1);
      });

      it("an occurrence of a deleted schedule retried from the dead-letter list runs", async () => {
        const s = scheduleRecord();
        await store.putSchedule(s);
        const spec = occurrenceSpec(s, 1_800_000_000_000);
        // Dead before any attempt (its deliveries were lost and the reaper gave up).
        await store.markDead(spec, { name: "E", message: "x" });
        expect(await store.deleteSchedule(s.id)).toBe(true);
        expect(await store.retryDead(spec.id, { recoverGraceMs: 0 })).not.toBeNull();
        expect((await store.beginRun(spec, 5_000)).kind).toBe("run");
      });

      it("overlap allow: occurrences of one schedule run side by side", async () => {
        const s = scheduleRecord({ overlap: "allow" });
        await store.putSchedule(s);
        await run(occurrenceSpec(s, 1_800_000_000_000));
        expect((await run(occurrenceSpec(s, 1_800_000_060_000))).attempt).toBe(1);
      });
    });

    describe("finishRun", () => {
      it("success: `succeeded` with the result; a previous error is cleared", async () => {
        const spec = await submitted();
        await run(spec);
        await store.finishRun(spec.id, 1, {
          ok: false,
          error: { name: "E", message: "first" },
          final: false,
        });
        const second = await run(spec);
        const t0 = await store.now();
        const done = await store.finishRun(spec.id, 2, { ok: true, result: { rows: [1, 2] } });
        const t1 = await store.now();
        expect(done.kind).toBe("ok");
        if (done.kind !== "ok") return;
        expectBetween(done.job.finishedAt, t0, t1);
        const { error: _cleared, ...rest } = second.job;
        expect(done.job).toEqual({
          ...rest,
          status: "succeeded",
          result: { rows: [1, 2] },
          finishedAt: done.job.finishedAt,
        });
        expect(done.job).not.toHaveProperty("error");
        expect(await store.getJob(spec.id)).toEqual(done.job);
        expect((await store.listDead({ limit: 10 })).items).toEqual([]);
      });

      it("recordOnly: a success answers `recorded` and is stored exactly as without it; a failure and a stale attempt answer as without it", async () => {
        // Two jobs taken through the same attempts, one finished without the option: their records
        // and every count must match.
        const [a, b] = [await submitted(), await submitted()];
        await run(a);
        await run(b);
        const done = await store.finishRun(a.id, 1, { ok: true, result: { n: 1 } }, undefined, {
          recordOnly: true,
        });
        expect(done).toEqual({ kind: "recorded" });
        const plain = await store.finishRun(b.id, 1, { ok: true, result: { n: 1 } });
        expect(plain.kind).toBe("ok");
        const stored = await store.getJob(a.id);
        // Alike but for their ids and times.
        const untimed = (job: JobRecord | null) => {
          const {
            id: _id,
            createdAt: _c,
            runAt: _r,
            startedAt: _s,
            finishedAt: _f,
            ...rest
          } = job!;
          return rest;
        };
        expect(untimed(stored)).toEqual(untimed(await store.getJob(b.id)));
        expect(stored!.status).toBe("succeeded");
        expect((await store.stats()).totals.succeeded).toBe(2);
        // Finished: the same attempt again is stale, with the job, whatever it asks.
        const again = await store.finishRun(a.id, 1, { ok: true, result: 2 }, undefined, {
          recordOnly: true,
        });
        expect(again).toEqual({ kind: "stale", job: stored });
        // A failure answers the job, which the runner reads (cancelled or not).
        const c = await submitted();
        const begun = await run(c);
        const error = { name: "E", message: "no" };
        const failed = await store.finishRun(
          c.id,
          1,
          { ok: false, error, final: true },
          undefined,
          {
            recordOnly: true,
          },
        );
        expect(failed).toEqual({
          kind: "ok",
          job: { ...begun.job, status: "dead", error, finishedAt: expect.any(Number) },
        });
      });

      it("retryable failure: `failed` with the error, not dead-lettered", async () => {
        const spec = await submitted();
        const begun = await run(spec);
        const error = { name: "TimeoutError", message: "took too long" };
        const done = await store.finishRun(spec.id, 1, { ok: false, error, final: false });
        expect(done).toEqual({
          kind: "ok",
          job: { ...begun.job, status: "failed", error, finishedAt: expect.any(Number) },
        });
        expect(await store.getJob(spec.id)).toEqual((done as { job: JobRecord }).job);
        expect((await store.listDead({ limit: 10 })).items).toEqual([]);
      });

      it("final failure: `dead` and listed in the dead-letter list", async () => {
        const spec = await submitted();
        const begun = await run(spec);
        const error = { name: "NonRetryableError", message: "bad input" };
        const done = await store.finishRun(spec.id, 1, { ok: false, error, final: true });
        expect(done).toEqual({
          kind: "ok",
          job: { ...begun.job, status: "dead", error, finishedAt: expect.any(Number) },
        });
        const dead = (done as { job: JobRecord }).job;
        expect(await store.getJob(spec.id)).toEqual(dead);
        expect(await store.listDead({ limit: 10 })).toEqual({ items: [dead] });
      });

      it("refuses a stale attempt: wrong attempt, already finished, or missing job", async () => {
        const spec = await submitted();
        const begun = await run(spec);
        expect(await store.finishRun(spec.id, 2, { ok: true, result: 1 })).toEqual({
          kind: "stale",
          job: begun.job,
        });
        const done = await store.finishRun(spec.id, 1, { ok: true, result: 1 });
        const finished = (done as { job: JobRecord }).job;
        expect(
          await store.finishRun(spec.id, 1, {
            ok: false,
            error: { name: "E", message: "x" },
            final: true,
          }),
        ).toEqual({
          kind: "stale",
          job: finished,
        });
        expect(await store.getJob(spec.id)).toEqual(finished);
        expect(await store.finishRun("no-such-job", 1, { ok: true, result: 1 })).toEqual({
          kind: "stale",
          job: null,
        });
        const queued = (await submit(jobSpec(), { delayMs: 0, recoverGraceMs: 60_000 })).job;
        expect(await store.finishRun(queued.id, 0, { ok: true, result: 1 })).toEqual({
          kind: "stale",
          job: queued,
        });
      });

      it("releases the schedule's overlap lease whatever the outcome", async () => {
        const s = scheduleRecord({ overlap: "skip" });
        await store.putSchedule(s);
        const fires = [0, 1, 2, 3].map((i) => occurrenceSpec(s, 1_800_000_000_000 + i * 60_000));
        const outcomes = [
          { ok: true as const, result: 1 },
          { ok: false as const, error: { name: "E", message: "x" }, final: false },
          { ok: false as const, error: { name: "E", message: "x" }, final: true },
        ];
        for (const [i, outcome] of outcomes.entries()) {
          await run(fires[i]!);
          expect((await store.finishRun(fires[i]!.id, 1, outcome)).kind).toBe("ok");
        }
        expect((await run(fires[3]!)).attempt).toBe(1);
      });
    });
  });
}
