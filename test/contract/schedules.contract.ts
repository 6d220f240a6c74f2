/**
 * @module
 * Part of the Store contract (`store.contract.ts`): schedules: `putSchedule` (revs, `expectRev`,
 * the due index), `getSchedule`, `listSchedules`, `deleteSchedule` and `listRuns`.
 */
import { describe, expect, it } from "vitest";
import type { ScheduleRecord } from "../../src/core/model.ts";
import type { Store } from "../../src/store/port.ts";
import { type MakeContractStore, occurrenceSpec, scheduleRecord, uid } from "./fixtures.ts";
import { FAR, putOk, useContractStore } from "./harness.ts";

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describeSchedulesContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const { tickOpts, beginLeader, putDue, run, allPages } = useContractStore(make, (made) => {
      store = made;
    });

    // ── schedules ──────────────────────────────────────────────────────────

    describe("putSchedule", () => {
      it("creates with rev 1 in an empty store, whatever rev it is given", async () => {
        const s = scheduleRecord({ rev: 42, runs: 3, lastRunAt: 1_700_000_000_000 });
        expect(await store.putSchedule(s)).toEqual({
          kind: "ok",
          created: true,
          schedule: { ...s, rev: 1 },
        });
        expect(await store.getSchedule(s.id)).toEqual({ ...s, rev: 1 });
      });

      it("replaces without expectRev, keeping runs, lastRunAt and createdAt of the stored one", async () => {
        const s = scheduleRecord({
          runs: 3,
          lastRunAt: 1_700_000_060_000,
          createdAt: 1_700_000_000_000,
        });
        await putOk(store, s);
        const { lastRunAt: _ignored, ...noLast } = s;
        const replacement: ScheduleRecord = {
          ...noLast,
          handler: "report.weekly",
          schedule: "0 9 * * 1",
          nextRunAt: 1_800_000_000_000,
          runs: 0,
          createdAt: 1_750_000_000_000,
          updatedAt: 1_750_000_000_000,
        };
        const kept = { runs: 3, lastRunAt: 1_700_000_060_000, createdAt: 1_700_000_000_000 };
        expect(await store.putSchedule(replacement)).toEqual({
          kind: "ok",
          created: false,
          schedule: { ...replacement, ...kept, rev: 2 },
        });
        expect(await store.getSchedule(s.id)).toEqual({ ...replacement, ...kept, rev: 2 });

        const fresh = scheduleRecord();
        const created = await putOk(store, fresh);
        const withLast = await putOk(store, { ...fresh, lastRunAt: 1_700_000_000_000, runs: 9 });
        expect(withLast).toEqual({ ...fresh, rev: created.rev + 1 });
        expect(withLast).not.toHaveProperty("lastRunAt", 1_700_000_000_000);
      });

      it("never repeats a rev after delete and re-create: a stale tick plan cannot commit (no ABA)", async () => {
        const now = await store.now();
        const first = await putOk(store, scheduleRecord({ nextRunAt: now - 1_000 }));
        const leader = await beginLeader();
        expect(leader.due.map((d) => d.id)).toEqual([first.id]);
        // The plan is made from `first`; meanwhile the schedule is deleted and re-created.
        expect(await store.deleteSchedule(first.id)).toBe(true);
        const again = await putOk(store, { ...first, rev: 0 });
        expect(again.rev).toBeGreaterThan(first.rev);
        const stale = { id: first.id, rev: first.rev, nextRunAt: FAR, runsAdded: 1, messages: [] };
        expect(await store.commitTick(leader.token, [stale])).toEqual({
          kind: "ok",
          applied: [],
          skipped: [first.id],
        });
        await store.endTick(leader.token, []);
        expect(await store.getSchedule(first.id)).toEqual(again);

        // Also after the old one was updated a few times (its rev ran ahead of any create).
        const other = await putOk(store, scheduleRecord());
        let last = other;
        for (let i = 0; i < 3; i++) last = await putOk(store, other);
        await store.deleteSchedule(other.id);
        expect((await putOk(store, other)).rev).toBeGreaterThan(last.rev);
      });

      it("with expectRev writes the record as given only if the stored rev matches", async () => {
        const s = await putOk(store, scheduleRecord({ runs: 1 }));
        const changed: ScheduleRecord = {
          ...s,
          status: "paused",
          runs: 5,
          lastRunAt: 1_700_000_000_000,
          updatedAt: 1_750_000_000_000,
        };
        expect(await store.putSchedule(changed, s.rev)).toEqual({
          kind: "ok",
          created: false,
          schedule: { ...changed, rev: s.rev + 1 },
        });

        const stored = (await store.getSchedule(s.id))!;
        expect(await store.putSchedule({ ...s, handler: "lost.update" }, s.rev)).toEqual({
          kind: "conflict",
          schedule: stored,
        });
        expect(await store.getSchedule(s.id)).toEqual(stored);

        const missing = scheduleRecord();
        expect(await store.putSchedule(missing, 1)).toEqual({ kind: "conflict", schedule: null });
        expect(await store.getSchedule(missing.id)).toBeNull();

        // 0: a create, only while the id is free; a second create of it is a conflict.
        const created = await store.putSchedule(missing, 0);
        expect(created).toMatchObject({ kind: "ok", created: true });
        const first = (await store.getSchedule(missing.id))!;
        expect(await store.putSchedule({ ...missing, handler: "second.create" }, 0)).toEqual({
          kind: "conflict",
          schedule: first,
        });
        expect(await store.getSchedule(missing.id)).toEqual(first);
      });

      it("keeps a schedule in the due index iff it is active with a nextRunAt", async () => {
        const now = await store.now();
        const active = await putDue();
        await putDue({ status: "paused" });
        await putOk(store, scheduleRecord({ status: "completed", nextRunAt: null }));
        await putOk(store, scheduleRecord({ status: "active", nextRunAt: null }));
        const leader = await beginLeader();
        expect(leader.due).toEqual([active]);
        await store.endTick(leader.token, []);

        const paused = await putOk(store, { ...active, status: "paused" }, active.rev);
        expect((await store.beginTick(tickOpts())).kind).toBe("idle");
        const resumed = await putOk(
          store,
          { ...paused, status: "active", nextRunAt: now - 50 },
          paused.rev,
        );
        const again = await beginLeader();
        expect(again.due).toEqual([resumed]);
        await store.endTick(again.token, []);

        await putOk(store, { ...resumed, nextRunAt: now + 60_000 });
        expect((await store.beginTick(tickOpts())).kind).toBe("idle");
      });
    });

    describe("getSchedule, listSchedules, deleteSchedule", () => {
      it("deleteSchedule removes the record, its listing and its due entry", async () => {
        expect(await store.getSchedule("no-such-schedule")).toBeNull();
        const s = await putDue();
        expect(await store.deleteSchedule(s.id)).toBe(true);
        expect(await store.getSchedule(s.id)).toBeNull();
        expect((await store.beginTick(tickOpts())).kind).toBe("idle");
        expect(await store.listSchedules({ limit: 10 })).toEqual({ items: [] });
        expect(await store.deleteSchedule(s.id)).toBe(false);
      });

      it("deleteSchedule deletes one whose input holds a lone surrogate, of any tenant, leaving no listing", async () => {
        // JSON.parse takes "\ud800"; Redis's cjson refuses it when it reads the stored definition.
        for (const tenant of ["default", "acme"]) {
          const s = await putOk(
            store,
            scheduleRecord({
              id: tenant === "default" ? uid("lone") : `${tenant}:${uid("lone")}`,
              tenant,
              input: { s: "\ud800" },
            }),
          );
          expect(await store.deleteSchedule(s.id)).toBe(true);
          expect(await store.getSchedule(s.id)).toBeNull();
          expect(await store.listSchedules({ limit: 10, tenant })).toEqual({ items: [] });
        }
      });

      it("lists newest first by createdAt, filters by status and handler, and pages", async () => {
        const at = (createdAt: number, overrides: Partial<ScheduleRecord> = {}) =>
          putOk(store, scheduleRecord({ createdAt, updatedAt: createdAt, ...overrides }));
        const s3 = await at(3_000, { handler: "a" });
        const s1 = await at(1_000, { handler: "b", status: "paused" });
        const s5 = await at(5_000, { handler: "a", status: "completed", nextRunAt: null });
        const s2 = await at(2_000, { handler: "a" });
        const s4 = await at(4_000, { handler: "b" });
        // A replace keeps createdAt, so the schedule keeps its place.
        const s2b = await putOk(store, { ...s2, tags: ["changed"], createdAt: 9_000 });

        expect(await store.listSchedules({ limit: 10 })).toEqual({ items: [s5, s4, s3, s2b, s1] });
        expect((await store.listSchedules({ limit: 10, status: "active" })).items).toEqual([
          s4,
          s3,
          s2b,
        ]);
        expect((await store.listSchedules({ limit: 10, handler: "b" })).items).toEqual([s4, s1]);
        expect(
          (await store.listSchedules({ limit: 10, handler: "a", status: "completed" })).items,
        ).toEqual([s5]);
        const pages = await allPages((cursor) =>
          store.listSchedules({ limit: 2, ...(cursor ? { cursor } : {}) }),
        );
        expect(pages).toEqual([[s5, s4], [s3, s2b], [s1]]);
      });
    });

    describe("listRuns", () => {
      it("lists a schedule's jobs newest fire time first, and pages", async () => {
        const s = scheduleRecord({ overlap: "allow" });
        const other = scheduleRecord();
        await store.putSchedule(s);
        await store.putSchedule(other);
        const base = 1_800_000_000_000;
        const f2 = await run(occurrenceSpec(s, base + 2 * 60_000));
        const f1 = await run(occurrenceSpec(s, base + 60_000));
        const f4 = await store.markDead(occurrenceSpec(s, base + 4 * 60_000), {
          name: "E",
          message: "x",
        });
        const f3 = await run(occurrenceSpec(s, base + 3 * 60_000));
        await run(occurrenceSpec(other, base + 5 * 60_000));

        const pages = await allPages((cursor) =>
          store.listRuns(s.id, { limit: 2, ...(cursor ? { cursor } : {}) }),
        );
        expect(pages).toEqual([
          [f4, f3.job],
          [f2.job, f1.job],
        ]);
        expect(await store.listRuns("no-such-schedule", { limit: 10 })).toEqual({ items: [] });
      });

      it("belong to the schedule as it exists: deleting it drops them, a late run is not listed", async () => {
        const s = scheduleRecord();
        await store.putSchedule(s);
        const base = 1_800_000_000_000;
        const first = await run(occurrenceSpec(s, base));
        expect((await store.listRuns(s.id, { limit: 10 })).items).toEqual([first.job]);
        expect(await store.deleteSchedule(s.id)).toBe(true);
        expect(await store.listRuns(s.id, { limit: 10 })).toEqual({ items: [] });
        // A delivery of the deleted schedule's occurrence arriving late is not run, nor indexed
        // as a run…
        const late = await store.beginRun(occurrenceSpec(s, base + 60_000), 5_000);
        expect(late.kind).toBe("skipped");
        // …so a schedule re-created under the id (here by another tenant's qualified twin, or the
        // same tenant) starts with none.
        await store.putSchedule(scheduleRecord({ id: s.id, tenant: s.tenant }));
        expect(await store.listRuns(s.id, { limit: 10 })).toEqual({ items: [] });
        const fresh = await run(occurrenceSpec(s, base + 120_000));
        expect((await store.listRuns(s.id, { limit: 10 })).items).toEqual([fresh.job]);
      });
    });
  });
}
