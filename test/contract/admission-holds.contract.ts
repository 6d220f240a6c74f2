/**
 * @module
 * Part of the admission contract (`admission.contract.ts`): schedule holds
 * (`ScheduleCommit.dueAt`) — a hold moves the due score only, and any schedule write ends it.
 */
import { describe, expect, it } from "vitest";
import type { ScheduleRecord } from "../../src/core/model.ts";
import type { Store } from "../../src/store/port.ts";
import { asLeader, useAdmissionStore } from "./admission-harness.ts";
import { type MakeContractStore, scheduleRecord } from "./fixtures.ts";

/** Registers this part of the admission contract for one implementation. */
export function describeHoldsContract(name: string, make: MakeContractStore): void {
  describe(`Admission contract: ${name}`, () => {
    let store: Store;
    const { tickOpts } = useAdmissionStore(make, (made) => {
      store = made;
    });

    // ── holds ──────────────────────────────────────────────────────────────

    describe("schedule holds (ScheduleCommit.dueAt)", () => {
      it("a hold moves the due score only: nextRunAt kept, not due before dueAt, reset by a write", async () => {
        const now = await store.now();
        const put = await store.putSchedule(scheduleRecord({ nextRunAt: now - 1_000 }));
        if (put.kind !== "ok") throw new Error("put failed");
        const s: ScheduleRecord = put.schedule;
        const stats0 = await store.stats();

        const leader = asLeader(await store.beginTick(tickOpts()));
        expect(leader.due.map((d) => d.id)).toEqual([s.id]);
        const dueAt = leader.now + 60_000;
        const committed = await store.commitTick(leader.token, [
          { id: s.id, rev: s.rev, nextRunAt: s.nextRunAt, runsAdded: 0, messages: [], dueAt },
        ]);
        expect(committed).toEqual({ kind: "ok", applied: [s.id], skipped: [] });
        await store.endTick(leader.token, []);

        const held = await store.getSchedule(s.id);
        expect(held).toEqual({ ...s, rev: s.rev + 1 });
        // Not due (an idle tick), until the horizon reaches dueAt.
        expect((await store.beginTick(tickOpts())).kind).toBe("idle");
        const ahead = asLeader(await store.beginTick(tickOpts({ horizonMs: 120_000 })));
        expect(ahead.due).toEqual([held]);
        await store.endTick(ahead.token, []);

        // A hold dispatches and counts nothing.
        const stats1 = await store.stats();
        expect(stats1.totals.dispatched).toBe(stats0.totals.dispatched);
        expect(stats1.jobs).toEqual(stats0.jobs);
        expect((await store.events({ types: ["job.dispatched"], limit: 10 })).events).toEqual([]);

        // Any schedule write ends the hold: due again by nextRunAt.
        const rewritten = await store.putSchedule(held as ScheduleRecord, held?.rev);
        expect(rewritten.kind).toBe("ok");
        const due = asLeader(await store.beginTick(tickOpts()));
        expect(due.due.map((d) => d.id)).toEqual([s.id]);
        expect(due.due[0]?.nextRunAt).toBe(s.nextRunAt);
        await store.endTick(due.token, []);
      });
    });
  });
}
