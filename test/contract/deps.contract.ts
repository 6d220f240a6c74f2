/**
 * @module
 * Part of the Store contract (`store.contract.ts`): job dependencies (ADR 0014) — `after` and
 * `onFailure` on submit, waiting jobs, their release by `finishRun`, `markDead` and `cancelJob`.
 */
import { describe, expect, it } from "vitest";
import { TickworkError } from "../../src/core/errors.ts";
import type { JobRecord, JobSpec, NewJob, OnFailure } from "../../src/core/model.ts";
import type { Store } from "../../src/store/port.ts";
import {
  jobSpec,
  type MakeContractStore,
  occurrenceSpec,
  scheduleRecord,
  uid,
} from "./fixtures.ts";
import { useContractStore } from "./harness.ts";

const FAIL = { name: "E", message: "boom" };

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describeDepsContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const { submit, submitted, run, recoverable } = useContractStore(make, (made) => {
      store = made;
    });

    /** Submits a job waiting for `after`; due now (grace 0), so a queued one is recoverable. */
    async function submitAfter(
      after: string[],
      overrides: Partial<NewJob> & { onFailure?: OnFailure } = {},
    ) {
      return submit(jobSpec({ after, ...overrides }), { delayMs: 0, recoverGraceMs: 60_000 });
    }
    const status = async (id: string) => (await store.getJob(id))?.status;
    async function succeed(spec: JobSpec) {
      const begun = await run(spec);
      return store.finishRun(spec.id, begun.attempt, { ok: true, result: null });
    }
    async function failFinally(spec: JobSpec) {
      const begun = await run(spec);
      return store.finishRun(spec.id, begun.attempt, { ok: false, error: FAIL, final: true });
    }
    const specOf = async (id: string): Promise<JobSpec> => {
      const { status: _s, attempts: _a, ...spec } = (await store.getJob(id)) as JobRecord;
      return spec;
    };

    describe("dependencies (after)", () => {
      it("a job whose dependencies are unfinished waits: not dispatched, not pending", async () => {
        const a = await submitted();
        const c = await submitAfter([a.id]);
        expect(c.job).toMatchObject({ status: "waiting", after: [a.id], attempts: 0 });
        expect(c.message).toBeUndefined();
        expect(await store.getJob(c.job.id)).toMatchObject({ status: "waiting", after: [a.id] });
        const stats = await store.stats();
        expect(stats.jobs).toMatchObject({ queued: 1, waiting: 1 });
        expect(stats.totals.submitted).toBe(2);
        // Only A is in the outbox (due at once with grace 0 for this check's sake).
        expect((await recoverable()).map((m) => m.id)).not.toContain(c.job.id);
        const listed = await store.listJobs({ status: "waiting", limit: 10 });
        expect(listed.items.map((j) => j.id)).toEqual([c.job.id]);
      });

      it("is released when its last dependency succeeds, and dispatched as a submit", async () => {
        const a = await submitted();
        const b = await submitted();
        const c = await submitAfter([a.id, b.id]);
        await succeed(a);
        expect(await status(c.job.id)).toBe("waiting");
        await succeed(b);
        const released = await store.getJob(c.job.id);
        expect(released).toMatchObject({ status: "queued", attempts: 0 });
        const messages = await recoverable();
        const message = messages.find((m) => m.id === c.job.id);
        expect(message).toMatchObject({ id: c.job.id, dedupId: c.job.id });
        expect(message?.job).toMatchObject({ id: c.job.id, after: [a.id, b.id] });
        expect((await store.stats()).jobs).toMatchObject({ waiting: 0, queued: 1 });
        // It runs like any job.
        expect((await succeed(await specOf(c.job.id))).kind).toBe("ok");
      });

      it("a dependency named twice is waited for once", async () => {
        // The broker de-duplicates `after`; the store counts each dependency once all the same.
        const a = await submitted();
        const c = await submitAfter([a.id, a.id]);
        expect(c.job.status).toBe("waiting");
        await succeed(a);
        expect(await status(c.job.id)).toBe("queued");
        expect((await store.stats()).jobs).toMatchObject({ waiting: 0, queued: 1 });
        expect((await recoverable()).map((m) => m.id)).toEqual([c.job.id]);
      });

      it("dependencies already succeeded: submitted normally", async () => {
        const a = await submitted();
        await succeed(a);
        const c = await submitAfter([a.id]);
        expect(c.job.status).toBe("queued");
        expect(c.message).toMatchObject({ id: c.job.id, dedupId: c.job.id });
      });

      it("a failed dependency cancels its dependents, cascading (onFailure cancel)", async () => {
        const a = await submitted();
        const b = await submitAfter([a.id]);
        const c = await submitAfter([b.job.id]);
        const d = await submitAfter([c.job.id, a.id], { onFailure: "run" });
        await failFinally(a);
        expect(await status(b.job.id)).toBe("cancelled");
        expect(await status(c.job.id)).toBe("cancelled");
        // D runs on failure: A failed and C was cancelled, both count as finished.
        expect(await status(d.job.id)).toBe("queued");
        const stats = await store.stats();
        expect(stats.jobs.waiting).toBe(0);
        expect(stats.totals.cancelled).toBe(2);
        expect((await store.getJob(b.job.id))?.finishedAt).toBeGreaterThan(0);
      });

      it("onFailure run: released when a dependency is dead-lettered by markDead", async () => {
        const a = await submitted();
        const b = await submitAfter([a.id], { onFailure: "run" });
        const c = await submitAfter([a.id]);
        await store.markDead(a, FAIL);
        expect(await status(b.job.id)).toBe("queued");
        expect(await status(c.job.id)).toBe("cancelled");
      });

      it("cancelling a dependency cancels its dependents; a waiting job can be cancelled", async () => {
        const a = await submitted();
        const b = await submitAfter([a.id]);
        const c = await submitAfter([b.job.id]);
        const cancelled = await store.cancelJob(b.job.id);
        expect(cancelled).toMatchObject({ kind: "ok", job: { status: "cancelled" } });
        expect(await status(c.job.id)).toBe("cancelled");
        expect(await status(a.id)).toBe("queued");
        await store.cancelJob(a.id);
        expect((await store.stats()).jobs).toMatchObject({ waiting: 0, queued: 0 });
      });

      it("a dependency that already failed: cancelled at once, or submitted with onFailure run", async () => {
        const a = await submitted();
        await failFinally(a);
        // Another job waits meanwhile: the gauge counts it alone throughout.
        const other = await submitted();
        await submitAfter([other.id]);
        expect((await store.stats()).jobs.waiting).toBe(1);
        const cancelled = await submitAfter([a.id]);
        expect((await store.stats()).jobs.waiting).toBe(1);
        expect(cancelled.job).toMatchObject({ status: "cancelled" });
        expect(cancelled.message).toBeUndefined();
        expect(await status(cancelled.job.id)).toBe("cancelled");
        const runs = await submitAfter([a.id], { onFailure: "run" });
        expect(runs.job.status).toBe("queued");
        expect(runs.message?.id).toBe(runs.job.id);
      });

      it("a dependency skipped after its dependents wait releases them as a failure", async () => {
        // An occurrence of an overlap-skip schedule exists, queued, before its first begin when
        // a node outside its placement refused it; it is skipped when it begins while an
        // earlier occurrence runs.
        const schedule = {
          id: uid("nightly"),
          tenant: "default",
          handler: "h",
          overlap: "skip" as const,
        };
        await store.putSchedule(scheduleRecord(schedule));
        const now = await store.now();
        const first = occurrenceSpec(schedule, now - 2_000);
        const second = occurrenceSpec(schedule, now - 1_000, { placement: { group: "gpu" } });
        const refusal = { node: "cpu-1", reason: "needs group gpu" };
        expect(await store.refusePlacement?.(second, refusal, 60_000)).toBe("queued");
        expect((await store.beginRun(first, 60_000)).kind).toBe("run");
        const cancels = await submitAfter([second.id]);
        const runs = await submitAfter([second.id], { onFailure: "run" });
        expect([cancels.job.status, runs.job.status]).toEqual(["waiting", "waiting"]);
        expect((await store.beginRun(second, 60_000)).kind).toBe("skipped");
        expect(await status(cancels.job.id)).toBe("cancelled");
        expect(await status(runs.job.id)).toBe("queued");
        expect((await store.stats()).jobs.waiting).toBe(0);
      });

      it("unknown ids and another tenant's jobs are refused with 422, nothing written", async () => {
        const theirs = await submitted({ tenant: "acme" });
        const missing = `j_${"0".repeat(21)}`;
        const before = await store.stats();
        const refused = store.submitJob(jobSpec({ after: [theirs.id, missing] }), {
          delayMs: 0,
          recoverGraceMs: 0,
        });
        await expect(refused).rejects.toBeInstanceOf(TickworkError);
        await expect(refused).rejects.toMatchObject({
          status: 422,
          code: "unknown_dependencies",
          message: expect.stringContaining(missing),
        });
        await expect(refused).rejects.toMatchObject({
          message: expect.stringContaining(theirs.id),
        });
        expect((await store.stats()).totals.submitted).toBe(before.totals.submitted);
        // Within its own tenant the id is known.
        const own = await submitAfter([theirs.id], { tenant: "acme" });
        expect(own.job.status).toBe("waiting");
      });

      it("an idempotent replay of a waiting job answers the waiting job", async () => {
        const a = await submitted();
        const key = uid("idem");
        const first = await submitAfter([a.id], { idempotencyKey: key });
        const again = await submitAfter([a.id], { idempotencyKey: key });
        expect(again).toMatchObject({
          replayed: true,
          job: { id: first.job.id, status: "waiting" },
        });
        expect((await store.stats()).jobs.waiting).toBe(1);
        await succeed(a);
        const released = await submitAfter([a.id], { idempotencyKey: key });
        expect(released.job).toMatchObject({ id: first.job.id, status: "queued" });
      });
    });
  });
}
