/**
 * @module
 * Part of the Store contract (`store.contract.ts`): jobs: `submitJob` (stamps, idempotency,
 * copies), `getJob`, `cancelJob` and `listJobs` (filters, paging).
 */
import { describe, expect, it } from "vitest";
import type { JobRecord, JobSpec } from "../../src/core/model.ts";
import type { Store } from "../../src/store/port.ts";
import {
  CONTRACT_RETENTION,
  jobSpec,
  type MakeContractStore,
  scheduleRecord,
  sleep,
  uid,
} from "./fixtures.ts";
import { expectBetween, putOk, useContractStore } from "./harness.ts";

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describeJobsContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const { submit, recoverable, submitRecoverable, run, allPages } = useContractStore(
      make,
      (made) => {
        store = made;
      },
    );

    // ── jobs ───────────────────────────────────────────────────────────────

    describe("submitJob", () => {
      it("stamps createdAt and runAt (now + delay) from the store clock and writes the outbox message", async () => {
        const spec = jobSpec({ priority: 8, tags: ["a", "b"] });
        const t0 = await store.now();
        const res = await submit(spec, { delayMs: 5_000, recoverGraceMs: 1_000 });
        const t1 = await store.now();
        const createdAt = res.job.createdAt;
        expectBetween(createdAt, t0, t1);
        const stamped: JobSpec = { ...spec, createdAt, runAt: createdAt + 5_000 };
        expect(res).toEqual({
          replayed: false,
          job: { ...stamped, status: "queued", attempts: 0 },
          message: {
            id: spec.id,
            dedupId: spec.id,
            job: stamped,
            notBefore: createdAt + 5_000,
            recoverAt: createdAt + 6_000,
          },
        });
        expect(await store.getJob(spec.id)).toEqual(res.job);
      });

      it("takes an explicit runAt over the delay; the message is recovered once runAt + grace has passed", async () => {
        const now = await store.now();
        const spec = jobSpec();
        const res = await submit(spec, {
          runAt: now - 500,
          delayMs: 9_999,
          recoverGraceMs: 100,
        });
        expect(res.job.runAt).toBe(now - 500);
        expect(res.message).toEqual({
          id: spec.id,
          dedupId: spec.id,
          job: { ...spec, createdAt: res.job.createdAt, runAt: now - 500 },
          notBefore: now - 500,
          recoverAt: now - 400,
        });
        const [recovered, ...rest] = await recoverable();
        expect(rest).toEqual([]);
        expect(recovered).toEqual({ ...res.message, recoverAt: expect.any(Number) });

        const later = await submit(jobSpec(), {
          runAt: now + 60_000,
          delayMs: 0,
          recoverGraceMs: 0,
        });
        expect(later.message?.notBefore).toBe(now + 60_000);
        expect((await recoverable()).map((m) => m.id)).toEqual([spec.id]);
      });

      it("replays a known idempotency key of the tenant: the first job, nothing written", async () => {
        const first = await submitRecoverable({ idempotencyKey: "order-42" });
        const again = jobSpec({ idempotencyKey: "order-42" });
        const replay = await submit(again, { delayMs: 0, recoverGraceMs: 0 });
        expect(replay).toEqual({ replayed: true, job: first.job });
        expect(replay.message).toBeUndefined();
        expect(await store.getJob(again.id)).toBeNull();
        expect((await store.listJobs({ limit: 10 })).items).toEqual([first.job]);
        expect((await recoverable()).map((m) => m.id)).toEqual([first.job.id]);

        const otherTenant = await submit(jobSpec({ tenant: "acme", idempotencyKey: "order-42" }), {
          delayMs: 0,
          recoverGraceMs: 0,
        });
        expect(otherTenant.replayed).toBe(false);
        expect(otherTenant.message).toBeDefined();

        // The replay returns the first job as it is now.
        const cancelled = await store.cancelJob(first.job.id);
        expect(cancelled.kind).toBe("ok");
        const replay2 = await submit(jobSpec({ idempotencyKey: "order-42" }), {
          delayMs: 0,
          recoverGraceMs: 0,
        });
        expect(replay2.replayed).toBe(true);
        expect(replay2.job).toEqual(await store.getJob(first.job.id));
        expect(replay2.job.status).toBe("cancelled");
      });

      it("keeps tenants' idempotency keys apart, whatever characters they hold", async () => {
        const timing = { delayMs: 0, recoverGraceMs: 60_000 };
        const a = await submit(jobSpec({ tenant: "a:b", idempotencyKey: "c" }), timing);
        const b = await submit(jobSpec({ tenant: "a", idempotencyKey: "b:c" }), timing);
        expect(a.replayed).toBe(false);
        expect(b.replayed).toBe(false);
        expect(b.job.id).not.toBe(a.job.id);
      });

      it("forgets an idempotency key after retention.idempotencyMs", async () => {
        const first = await submit(jobSpec({ idempotencyKey: "k" }), {
          delayMs: 0,
          recoverGraceMs: 0,
        });
        await sleep(CONTRACT_RETENTION.idempotencyMs + 100);
        const spec = jobSpec({ idempotencyKey: "k" });
        const second = await submit(spec, { delayMs: 0, recoverGraceMs: 0 });
        expect(second.replayed).toBe(false);
        expect(second.job.id).toBe(spec.id);
        expect(second.job.id).not.toBe(first.job.id);
        expect(await store.getJob(first.job.id)).not.toBeNull();
      });

      it("keeps a live job whose id is submitted again: nothing written, nothing counted", async () => {
        // A re-sent submit (docs/adr/0032-scripts-run-twice.md): its answer is the first one's.
        const timing = { delayMs: 0, recoverGraceMs: 60_000 };
        const spec = jobSpec();
        const first = await submit(spec, timing);
        const again = await submit(spec, timing);
        expect(again).toEqual(first);
        const begun = await run({ ...first.job });
        const other = await submit(jobSpec({ id: spec.id, input: { other: true } }), {
          delayMs: 60_000,
          recoverGraceMs: 0,
        });
        expect(other.replayed).toBe(false);
        expect(other.job).toMatchObject({
          id: spec.id,
          createdAt: first.job.createdAt,
          runAt: first.job.runAt,
        });
        expect(await store.getJob(spec.id)).toEqual(begun.job);
        expect((await store.listJobs({ limit: 10 })).items).toEqual([begun.job]);
        const stats = await store.stats();
        expect(stats.totals.submitted).toBe(1);
        expect(stats.jobs).toMatchObject({ queued: 0, running: 1 });
        // With the idempotency key that names it, and stored waiting: answered as stored.
        const held = jobSpec({ idempotencyKey: uid("idem"), after: [spec.id] });
        const waiting = await submit(held, timing);
        expect(waiting.job.status).toBe("waiting");
        expect(await submit(held, timing)).toEqual(waiting);
        expect((await store.stats()).totals.submitted).toBe(2);
      });

      it("keeps its own copies: mutating inputs or outputs does not change stored records", async () => {
        const spec = jobSpec({ input: { deep: { value: 1 } }, tags: ["x"] });
        const res = await submit(spec, { delayMs: 0, recoverGraceMs: 0 });
        const snapshot = structuredClone(res.job);
        (spec.input as { deep: { value: number } }).deep.value = 2;
        spec.tags.push("y");
        (res.job.input as { deep: { value: number } }).deep.value = 3;
        res.job.status = "succeeded";
        (res.message!.job.input as { deep: { value: number } }).deep.value = 4;
        const read = (await store.getJob(spec.id))!;
        expect(read).toEqual(snapshot);
        (read.input as { deep: { value: number } }).deep.value = 5;
        expect(await store.getJob(spec.id)).toEqual(snapshot);

        const schedule = scheduleRecord({ input: { deep: { value: 1 } } });
        const put = await putOk(store, schedule);
        (schedule.input as { deep: { value: number } }).deep.value = 2;
        (put.input as { deep: { value: number } }).deep.value = 3;
        expect(await store.getSchedule(schedule.id)).toEqual({
          ...schedule,
          input: { deep: { value: 1 } },
          rev: 1,
        });
      });
    });

    describe("getJob and cancelJob", () => {
      it("getJob answers null for an unknown id", async () => {
        expect(await store.getJob("no-such-job")).toBeNull();
      });

      it("getJob with a tenant answers null for another tenant's job, as for a missing one", async () => {
        const { job } = await submitRecoverable({
          tenant: "acme",
          input: { big: "x".repeat(10_000) },
        });
        const { job: plain } = await submitRecoverable();
        expect(await store.getJob(job.id, "acme")).toEqual(job);
        expect(await store.getJob(job.id)).toEqual(job);
        expect(await store.getJob(job.id, "globex")).toBeNull();
        expect(await store.getJob(job.id, "default")).toBeNull();
        expect(await store.getJob("no-such-job", "acme")).toBeNull();
        // The default tenant's job, as such.
        expect(await store.getJob(plain.id, "default")).toEqual(plain);
        expect(await store.getJob(plain.id, "acme")).toBeNull();
      });

      it("jobsExist answers, per id in order, whether the job exists and is the tenant's", async () => {
        if (!store.jobsExist) return;
        const { job } = await submitRecoverable({ tenant: "acme" });
        const { job: plain } = await submitRecoverable();
        const ids = [job.id, plain.id, "no-such-job", job.id];
        expect(await store.jobsExist(ids, "acme")).toEqual([true, false, false, true]);
        expect(await store.jobsExist(ids, "default")).toEqual([false, true, false, false]);
        expect(await store.jobsExist([], "acme")).toEqual([]);
      });

      it("jobsExist answers false for a job whose retention lapsed", async () => {
        if (!store.jobsExist) return;
        const { job } = await submitRecoverable();
        const { job: kept } = await submitRecoverable();
        expect((await store.cancelJob(job.id)).kind).toBe("ok");
        expect(await store.jobsExist([job.id, kept.id], "default")).toEqual([true, true]);
        await sleep(CONTRACT_RETENTION.jobMs + 150);
        expect(await store.jobsExist([job.id, kept.id], "default")).toEqual([false, true]);
      });

      it("cancels a queued job and removes its outbox message", async () => {
        const { job } = await submitRecoverable();
        const t0 = await store.now();
        const res = await store.cancelJob(job.id);
        const t1 = await store.now();
        expect(res.kind).toBe("ok");
        if (res.kind !== "ok") return;
        expectBetween(res.job.finishedAt, t0, t1);
        expect(res.job).toEqual({ ...job, status: "cancelled", finishedAt: res.job.finishedAt });
        expect(await store.getJob(job.id)).toEqual(res.job);
        expect(await recoverable()).toEqual([]);
        expect(await store.cancelJob(job.id)).toEqual({ kind: "conflict", job: res.job });
      });

      it("asks a running job to stop, refuses a finished one, and reports a missing one", async () => {
        const { job } = await submit(jobSpec(), { delayMs: 0, recoverGraceMs: 60_000 });
        const running = await run({ ...job });
        const asked = { ...running.job, cancelRequested: true };
        expect(await store.cancelJob(job.id)).toEqual({ kind: "requested", job: asked });
        expect(await store.cancelJob(job.id)).toEqual({ kind: "requested", job: asked });
        // A success that came first stands.
        const done = await store.finishRun(job.id, 1, { ok: true, result: 1 });
        expect(done).toMatchObject({ kind: "ok", job: { status: "succeeded" } });
        expect(await store.cancelJob(job.id)).toEqual({
          kind: "conflict",
          job: (done as { job: JobRecord }).job,
        });
        expect(await store.cancelJob("no-such-job")).toEqual({ kind: "missing" });
      });
    });

    describe("listJobs", () => {
      it("lists newest first and filters by status, handler and scheduleId", async () => {
        const submitWith = (overrides: Parameters<typeof jobSpec>[0]) =>
          submit(jobSpec(overrides), { delayMs: 0, recoverGraceMs: 60_000 });
        const a = (await submitWith({ handler: "a" })).job;
        const b = (await submitWith({ handler: "b" })).job;
        const c = (await submitWith({ handler: "a", scheduleId: "sched-x", fireAt: 1_000 })).job;
        const d = (await submitWith({ handler: "b" })).job;
        await sleep(2);
        const e = (await submitWith({ handler: "a" })).job;
        const cancelled = await store.cancelJob(b.id);
        const bNow = (cancelled as { job: JobRecord }).job;
        const dNow = (await run({ ...d })).job;

        expect(await store.listJobs({ limit: 100 })).toEqual({ items: [e, dNow, c, bNow, a] });
        expect((await store.listJobs({ limit: 100, status: "queued" })).items).toEqual([e, c, a]);
        expect((await store.listJobs({ limit: 100, status: "running" })).items).toEqual([dNow]);
        expect((await store.listJobs({ limit: 100, handler: "b" })).items).toEqual([dNow, bNow]);
        expect((await store.listJobs({ limit: 100, scheduleId: "sched-x" })).items).toEqual([c]);
        expect(
          (await store.listJobs({ limit: 100, handler: "a", status: "queued" })).items,
        ).toEqual([e, c, a]);
        expect(
          (await store.listJobs({ limit: 100, handler: "b", status: "queued" })).items,
        ).toEqual([]);
        expect(await store.listJobs({ limit: 100, status: "dead" })).toEqual({ items: [] });
      });

      it("pages with an opaque cursor: no duplicates, no omissions, none added by later writes", async () => {
        const jobs: JobRecord[] = [];
        for (let i = 0; i < 7; i++) {
          const handler = i % 2 === 0 ? "even" : "odd";
          jobs.push(
            (await submit(jobSpec({ handler }), { delayMs: 0, recoverGraceMs: 60_000 })).job,
          );
          if (i === 3) await sleep(2);
        }
        const newestFirst = [...jobs].reverse();

        const first = await store.listJobs({ limit: 3 });
        expect(first.items).toEqual(newestFirst.slice(0, 3));
        expect(typeof first.cursor).toBe("string");
        // Written after the first page: newer than the cursor, so not on later pages.
        await submit(jobSpec({ handler: "even" }), { delayMs: 0, recoverGraceMs: 60_000 });
        const second = await store.listJobs({ limit: 3, cursor: first.cursor });
        expect(second.items).toEqual(newestFirst.slice(3, 6));
        const third = await store.listJobs({ limit: 3, cursor: second.cursor });
        expect(third).toEqual({ items: newestFirst.slice(6) });

        const odd = newestFirst.filter((j) => j.handler === "odd");
        expect(odd).toHaveLength(3);
        const oddPages = await allPages((cursor) =>
          store.listJobs({ limit: 2, handler: "odd", ...(cursor ? { cursor } : {}) }),
        );
        expect(oddPages).toEqual([odd.slice(0, 2), odd.slice(2)]);

        const exact = await allPages((cursor) =>
          store.listJobs({ limit: 4, ...(cursor ? { cursor } : {}) }),
        );
        expect(exact.map((p) => p.length)).toEqual([4, 4]);
        expect(exact.flat().map((j) => j.id)).toHaveLength(
          new Set(exact.flat().map((j) => j.id)).size,
        );
      });
    });
  });
}
