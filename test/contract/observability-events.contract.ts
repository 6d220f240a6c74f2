/**
 * @module
 * Part of the observability contract (`observability.contract.ts`): `events()`, the capped
 * lifecycle log — reading on after an id, filtering by type, `limit` and `last`, increasing ids,
 * and the cap.
 */
import { describe, expect, it } from "vitest";
import type { JobSpec } from "../../src/core/model.ts";
import type { Store } from "../../src/store/port.ts";
import {
  accepted,
  jobSpec,
  type MakeContractStore,
  occurrenceSpec,
  outboxMessage,
  scheduleRecord,
} from "./fixtures.ts";
import { asLeader, expectIncreasing, FAR, useObservabilityStore } from "./observability-harness.ts";

/** Registers this part of the observability contract for one implementation. */
export function describeEventsContract(name: string, make: MakeContractStore): void {
  describe(`Observability contract: ${name}`, () => {
    let store: Store;
    const { fresh, tickOpts, submitted, allEvents } = useObservabilityStore(make, (made) => {
      store = made;
    });

    // ── events ─────────────────────────────────────────────────────────────

    it("reads events after an id, filtered by type, at most `limit`, with `last` to go on", async () => {
      const specs: JobSpec[] = [];
      for (let i = 0; i < 4; i++) specs.push(await submitted());
      await store.cancelJob(specs[1]!.id);
      await store.cancelJob(specs[3]!.id);
      const all = await store.events({ limit: 100 });
      expect(all.events.map((e) => [e.type, e.jobId])).toEqual([
        ["job.created", specs[0]!.id],
        ["job.created", specs[1]!.id],
        ["job.created", specs[2]!.id],
        ["job.created", specs[3]!.id],
        ["job.cancelled", specs[1]!.id],
        ["job.cancelled", specs[3]!.id],
      ]);
      const ids = all.events.map((e) => e.id);
      expectIncreasing(ids);
      expect(all.last).toBe(ids[5]);

      const page = await store.events({ after: ids[1], limit: 2 });
      expect(page).toEqual({ events: all.events.slice(2, 4), last: ids[3], more: true });
      expect(await store.events({ after: ids[3], limit: 10 })).toEqual({
        events: all.events.slice(4),
        last: ids[5],
      });
      expect(await store.events({ after: ids[5], limit: 10 })).toEqual({ events: [] });

      const cancelled = await store.events({ types: ["job.cancelled"], limit: 1 });
      expect(cancelled).toEqual({ events: [all.events[4]], last: ids[4], more: true });
      const rest = await store.events({
        types: ["job.cancelled"],
        after: cancelled.last,
        limit: 5,
      });
      expect(rest).toEqual({ events: [all.events[5]], last: ids[5] });
      // Nothing matches: `last` still moves past what was examined.
      expect(await store.events({ types: ["job.dead"], limit: 5 })).toEqual({
        events: [],
        last: ids[5],
      });
      expect(
        (await store.events({ types: ["job.created", "job.cancelled"], limit: 100 })).events,
      ).toEqual(all.events);
      expect((await store.events({ types: [], limit: 100 })).events).toEqual(all.events);
    });

    it("gives events of one operation strictly increasing ids", async () => {
      const now = await store.now();
      const put = await store.putSchedule(scheduleRecord({ nextRunAt: now - 1_000 }));
      if (put.kind !== "ok") throw new Error("put failed");
      const leader = asLeader(await store.beginTick(tickOpts({ holder: "solo" })));
      const messages = Array.from({ length: 25 }, (_, i) =>
        outboxMessage(occurrenceSpec(put.schedule, now - 60_000 + i * 1_000)),
      );
      await store.commitTick(leader.token, [
        { id: put.schedule.id, rev: put.schedule.rev, nextRunAt: FAR, runsAdded: 25, messages },
      ]);
      await store.endTick(leader.token, []);
      const events = await allEvents();
      expect(events).toHaveLength(26);
      expectIncreasing(events.map((e) => e.id));
      expect(events.slice(1).map((e) => e.jobId)).toEqual(messages.map((m) => m.id));
    });

    it("caps the log at eventsMaxLen (newest kept); 0 writes none but still counts", async () => {
      const capped = await fresh({ eventsMaxLen: 3 });
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const res = accepted(
          await capped.submitJob(jobSpec(), { delayMs: 0, recoverGraceMs: 60_000 }),
        );
        ids.push(res.job.id);
      }
      const kept = await allEvents(capped);
      expect(kept.map((e) => e.jobId)).toEqual(ids.slice(2));

      const silent = await fresh({ eventsMaxLen: 0 });
      accepted(await silent.submitJob(jobSpec(), { delayMs: 0, recoverGraceMs: 60_000 }));
      expect(await silent.events({ limit: 10 })).toEqual({ events: [] });
      expect((await silent.stats()).totals.submitted).toBe(1);
    });
  });
}
