/**
 * @module
 * Part of the Store contract (`store.contract.ts`): retention: finished jobs expire after
 * `retention.jobMs`, and the caps on finished jobs and on each schedule's runs.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/port.ts";
import {
  accepted,
  CONTRACT_RETENTION,
  jobSpec,
  type MakeContractStore,
  occurrenceSpec,
  scheduleRecord,
  sleep,
} from "./fixtures.ts";
import { asRun, useContractStore } from "./harness.ts";

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describeRetentionContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const { submit, submitted, run } = useContractStore(make, (made) => {
      store = made;
    });

    describe("retention", () => {
      it("finished jobs expire after retention.jobMs; queued, running and failed ones stay", async () => {
        const cancelled = (await submit(jobSpec(), { delayMs: 0, recoverGraceMs: 60_000 })).job;
        await store.cancelJob(cancelled.id);
        const succeeded = await submitted();
        await run(succeeded);
        await store.finishRun(succeeded.id, 1, { ok: true, result: 1 });
        const dead = await submitted();
        await run(dead);
        await store.finishRun(dead.id, 1, {
          ok: false,
          error: { name: "E", message: "x" },
          final: true,
        });
        const failed = await submitted();
        await run(failed);
        await store.finishRun(failed.id, 1, {
          ok: false,
          error: { name: "E", message: "x" },
          final: false,
        });
        const queued = (await submit(jobSpec(), { delayMs: 0, recoverGraceMs: 60_000 })).job;
        const running = await submitted();
        await run(running, 60_000);
        expect((await store.listJobs({ limit: 10 })).items).toHaveLength(6);

        await sleep(CONTRACT_RETENTION.jobMs + 150);
        for (const id of [cancelled.id, succeeded.id, dead.id])
          expect(await store.getJob(id)).toBeNull();
        for (const id of [failed.id, queued.id, running.id])
          expect(await store.getJob(id)).not.toBeNull();
        const listed = (await store.listJobs({ limit: 10 })).items.map((j) => j.id).sort();
        expect(listed).toEqual([failed.id, queued.id, running.id].sort());
        expect(await store.listDead({ limit: 10 })).toEqual({ items: [] });
      });
      it("an expired job's id submitted again is a new job, listed by its own createdAt", async () => {
        const timing = { delayMs: 0, recoverGraceMs: 60_000 };
        const spec = jobSpec();
        const old = (await submit(spec, timing)).job;
        await store.cancelJob(old.id);
        const queued = (await submit(jobSpec(), timing)).job;
        await sleep(CONTRACT_RETENTION.jobMs + 150);
        expect(await store.getJob(old.id)).toBeNull();
        const renewed = (await submit(spec, timing)).job;
        expect(renewed).toMatchObject({ id: old.id, status: "queued", attempts: 0 });
        expect(renewed.createdAt).toBeGreaterThan(queued.createdAt);
        const listed = (await store.listJobs({ limit: 10 })).items;
        expect(listed.map((j) => j.id)).toEqual([renewed.id, queued.id]);
        const pages = [];
        let cursor: string | undefined;
        do {
          const page = await store.listJobs({ limit: 1, ...(cursor ? { cursor } : {}) });
          pages.push(page.items.map((j) => j.id));
          cursor = page.cursor;
        } while (cursor !== undefined);
        expect(pages).toEqual([[renewed.id], [queued.id]]);
      });
    });

    describe("retention caps", () => {
      let capped: Store;
      let cleanupCapped: () => Promise<void>;
      beforeEach(async () => {
        const made = await make({
          retention: {
            ...CONTRACT_RETENTION,
            jobMs: 60_000,
            maxFinishedJobs: 3,
            maxRunsPerSchedule: 2,
          },
        });
        capped = made.store;
        cleanupCapped = made.cleanup;
      });
      afterEach(() => cleanupCapped());

      it("keep at most maxFinishedJobs finished jobs, dropping the oldest", async () => {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          const { message } = accepted(
            await capped.submitJob(jobSpec(), { delayMs: 0, recoverGraceMs: 60_000 }),
          );
          asRun(await capped.beginRun(message!.job, 5_000));
          await capped.finishRun(message!.job.id, 1, { ok: true, result: i });
          ids.push(message!.job.id);
        }
        const kept = (await capped.listJobs({ limit: 10 })).items.map((j) => j.id);
        expect(kept).toEqual(ids.slice(2).reverse());
        for (const id of ids.slice(0, 2)) expect(await capped.getJob(id)).toBeNull();
        // A job still queued is never dropped for the cap.
        const { job } = accepted(
          await capped.submitJob(jobSpec(), { delayMs: 0, recoverGraceMs: 60_000 }),
        );
        expect(await capped.getJob(job.id)).toMatchObject({ status: "queued" });
      });

      it("keep at most maxRunsPerSchedule finished runs per schedule; a dropped run is not re-created", async () => {
        const s = scheduleRecord({ overlap: "allow" });
        await capped.putSchedule(s);
        const base = 1_800_000_000_000;
        const specs = [0, 1, 2, 3].map((i) => occurrenceSpec(s, base + i * 60_000));
        for (const spec of specs) {
          asRun(await capped.beginRun(spec, 5_000));
          await capped.finishRun(spec.id, 1, { ok: true, result: null });
        }
        const runs = (await capped.listRuns(s.id, { limit: 10 })).items.map((j) => j.id);
        expect(runs).toEqual([specs[3]!.id, specs[2]!.id]);
        for (const spec of specs.slice(0, 2)) {
          expect(await capped.getJob(spec.id)).toBeNull();
          // A late delivery of a dropped run finds its tombstone: nothing runs again.
          expect(await capped.beginRun(spec, 5_000)).toEqual({ kind: "missing" });
        }
      });

      it("unfinished oldest runs do not hold the runs cap open", async () => {
        const s = scheduleRecord({ overlap: "allow" });
        await capped.putSchedule(s);
        const base = 1_800_000_000_000;
        const specs = [0, 1, 2, 3, 4, 5].map((i) => occurrenceSpec(s, base + i * 60_000));
        // The two oldest start and stay running (a retry far away, or a slow handler).
        for (const spec of specs.slice(0, 2)) asRun(await capped.beginRun(spec, 60_000));
        for (const spec of specs.slice(2)) {
          asRun(await capped.beginRun(spec, 5_000));
          await capped.finishRun(spec.id, 1, { ok: true, result: null });
        }
        const runs = (await capped.listRuns(s.id, { limit: 10 })).items.map((j) => j.id);
        expect(runs).toEqual([specs[5]!.id, specs[1]!.id, specs[0]!.id]);
      });
    });
  });
}
