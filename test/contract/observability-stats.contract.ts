/**
 * @module
 * Part of the observability contract (`observability.contract.ts`): `stats()` — gauges, totals,
 * histograms, moving averages, backlog, outbox and the leader — followed through jobs, dead
 * letters, tick commits and recovery, tick reports and leader changes.
 */
import { describe, expect, it } from "vitest";
import type { ScheduleRecord } from "../../src/core/model.ts";
import type { Store } from "../../src/store/port.ts";
import { FLAP_WINDOW_MS, HISTOGRAM_BOUNDS_MS } from "../../src/store/port.ts";
import {
  accepted,
  jobSpec,
  type MakeContractStore,
  occurrenceSpec,
  outboxMessage,
  scheduleRecord,
} from "./fixtures.ts";
import {
  asKind,
  asLeader,
  ERROR,
  expectIncreasing,
  FAR,
  histogramOf,
  useObservabilityStore,
  ZERO_TOTALS,
} from "./observability-harness.ts";

/** Registers this part of the observability contract for one implementation. */
export function describeStatsContract(name: string, make: MakeContractStore): void {
  describe(`Observability contract: ${name}`, () => {
    let store: Store;
    const { tickOpts, submitted, run, allEvents } = useObservabilityStore(make, (made) => {
      store = made;
    });

    // ── stats ──────────────────────────────────────────────────────────────

    it("a new store reports zeros, empty histograms and no leader", async () => {
      const stats = await store.stats();
      const now = await store.now();
      expect(stats).toEqual({
        now: stats.now,
        jobs: { queued: 0, running: 0, failed: 0, waiting: 0 },
        totals: ZERO_TOTALS,
        outbox: 0,
        backlog: 0,
        dispatchLagMs: histogramOf(),
        handlerDurationMs: histogramOf(),
        tickDurationMs: histogramOf(),
        leaseAcquisitionMs: histogramOf(),
        averages: { lagMs: 0, failureRate: 0 },
        leader: {
          holder: null,
          active: false,
          leaseRemainingMs: 0,
          changes: 0,
          flaps: 0,
          acquiredAt: 0,
        },
        degradation: {
          level: "normal",
          since: 0,
          signals: { queueDepth: 0, lagMs: 0, failureRate: 0 },
        },
      });
      expect(stats.now).toBeLessThanOrEqual(now);
      expect(await store.events({ limit: 10 })).toEqual({ events: [] });
    });

    it("follows a job through submit, a failed attempt, a retry and success", async () => {
      // Due an hour before its submit: the lag counts from the submit, not from its run time.
      const spec = await submitted({ tenant: "acme", handler: "mail.send" }, 3_600_000);
      let stats = await store.stats();
      expect(stats.jobs).toEqual({ queued: 1, running: 0, failed: 0, waiting: 0 });
      expect(stats.totals).toEqual({ ...ZERO_TOTALS, submitted: 1 });
      expect(stats.outbox).toBe(1);
      expect(stats.backlog).toBe(1);

      const first = await run(spec);
      const lag = Math.max(0, (first.job.startedAt ?? 0) - first.job.createdAt);
      expect(first.job.createdAt - spec.runAt).toBeGreaterThanOrEqual(3_600_000);
      expect(lag).toBeLessThan(60_000);
      stats = await store.stats();
      expect(stats.jobs).toEqual({ queued: 0, running: 1, failed: 0, waiting: 0 });
      expect(stats.totals.started).toBe(1);
      expect(stats.outbox).toBe(1); // the submit's message became the attempt's watch
      expect(stats.backlog).toBe(0);
      expect(stats.dispatchLagMs).toEqual(histogramOf(lag));
      expect(stats.averages.lagMs).toBeCloseTo(0.1 * lag, 6);

      const failed = asKind(
        await store.finishRun(spec.id, 1, { ok: false, error: ERROR, final: false }),
        "ok",
      );
      const d1 = (failed.job.finishedAt ?? 0) - (first.job.startedAt ?? 0);
      stats = await store.stats();
      expect(stats.jobs).toEqual({ queued: 0, running: 0, failed: 1, waiting: 0 });
      expect(stats.totals.failed).toBe(1);
      expect(stats.backlog).toBe(1); // a failed job waits for the queue's retry
      expect(stats.outbox).toBe(1); // watched until it runs again
      expect(stats.handlerDurationMs).toEqual(histogramOf(d1));
      expect(stats.averages.failureRate).toBeCloseTo(0.1, 9);

      const second = await run(spec);
      expect(second.attempt).toBe(2);
      stats = await store.stats();
      expect(stats.jobs).toEqual({ queued: 0, running: 1, failed: 0, waiting: 0 });
      expect(stats.backlog).toBe(0);
      expect(stats.totals.started).toBe(2);
      expect(stats.dispatchLagMs.count).toBe(1); // only first attempts measure lag

      const done = asKind(await store.finishRun(spec.id, 2, { ok: true, result: 1 }), "ok");
      const d2 = (done.job.finishedAt ?? 0) - (second.job.startedAt ?? 0);
      stats = await store.stats();
      expect(stats.jobs).toEqual({ queued: 0, running: 0, failed: 0, waiting: 0 });
      expect(stats.outbox).toBe(0);
      expect(stats.totals).toEqual({
        ...ZERO_TOTALS,
        submitted: 1,
        started: 2,
        failed: 1,
        succeeded: 1,
      });
      expect(stats.handlerDurationMs).toEqual(histogramOf(d1, d2));
      expect(stats.averages.failureRate).toBeCloseTo(0.1 + 0.1 * (0 - 0.1), 9);

      const job = { jobId: spec.id, handler: "mail.send", tenant: "acme" };
      const events = await allEvents();
      expect(events).toEqual([
        { id: expect.any(String), type: "job.created", at: spec.createdAt, ...job },
        {
          id: expect.any(String),
          type: "job.started",
          at: first.job.startedAt,
          ...job,
          attempt: 1,
        },
        {
          id: expect.any(String),
          type: "job.failed",
          at: failed.job.finishedAt,
          ...job,
          attempt: 1,
          error: ERROR,
        },
        {
          id: expect.any(String),
          type: "job.started",
          at: second.job.startedAt,
          ...job,
          attempt: 2,
        },
        { id: expect.any(String), type: "job.succeeded", at: done.job.finishedAt, ...job },
      ]);
      expectIncreasing(events.map((e) => e.id));
    });

    it("counts dead jobs, re-queues from the dead-letter list, and cancels", async () => {
      const spec = await submitted();
      await run(spec);
      await store.finishRun(spec.id, 1, { ok: false, error: ERROR, final: true });
      let stats = await store.stats();
      expect(stats.jobs).toEqual({ queued: 0, running: 0, failed: 0, waiting: 0 });
      expect(stats.totals).toMatchObject({ started: 1, failed: 1, dead: 1 });
      expect(stats.averages.failureRate).toBeCloseTo(0.1, 9);

      const retried = await store.retryDead(spec.id, { recoverGraceMs: 60_000 });
      if (!retried) throw new Error("retryDead failed");
      stats = await store.stats();
      expect(stats.jobs).toEqual({ queued: 1, running: 0, failed: 0, waiting: 0 });
      expect(stats.totals.retried).toBe(1);
      expect(stats.backlog).toBe(1);
      expect(stats.outbox).toBe(1);

      // The queue gives up on the re-dispatch: dead again, without a new attempt.
      await store.markDead(retried.message.job, { name: "DeliveryFailed", message: "gone" });
      stats = await store.stats();
      expect(stats.jobs).toEqual({ queued: 0, running: 0, failed: 0, waiting: 0 });
      expect(stats.totals).toMatchObject({ dead: 2, failed: 1, started: 1 });
      expect(stats.backlog).toBe(0);
      expect(stats.outbox).toBe(0);

      // A job dead before it ever started reports attempt 0.
      const never = await submitted();
      await store.markDead(never, ERROR);

      const cancelled = await submitted();
      expect((await store.cancelJob(cancelled.id)).kind).toBe("ok");
      stats = await store.stats();
      expect(stats.jobs).toEqual({ queued: 0, running: 0, failed: 0, waiting: 0 });
      expect(stats.totals).toMatchObject({ submitted: 3, dead: 3, cancelled: 1 });
      expect(stats.backlog).toBe(0);

      const events = (await allEvents()).map((e) => [e.type, e.jobId, e.attempt, e.error]);
      expect(events).toEqual([
        ["job.created", spec.id, undefined, undefined],
        ["job.started", spec.id, 1, undefined],
        ["job.dead", spec.id, 1, ERROR],
        ["job.retried", spec.id, undefined, undefined],
        ["job.dead", spec.id, 1, { name: "DeliveryFailed", message: "gone" }],
        ["job.created", never.id, undefined, undefined],
        ["job.dead", never.id, 0, ERROR],
        ["job.created", cancelled.id, undefined, undefined],
        ["job.cancelled", cancelled.id, undefined, undefined],
      ]);
    });

    it("counts occurrences from their tick commit, overlap skips, and recovered messages", async () => {
      const now = await store.now();
      const put = await store.putSchedule(
        scheduleRecord({ nextRunAt: now - 1_000, overlap: "skip", handler: "sync" }),
      );
      if (put.kind !== "ok") throw new Error("put failed");
      const s: ScheduleRecord = put.schedule;
      const o1 = occurrenceSpec(s, now - 2_000);
      const o2 = occurrenceSpec(s, now - 1_000);
      const o3 = occurrenceSpec(s, now + 60_000); // not due yet: queued, not backlog

      const leader = asLeader(await store.beginTick(tickOpts()));
      const committed = await store.commitTick(leader.token, [
        {
          id: s.id,
          rev: s.rev,
          nextRunAt: FAR,
          runsAdded: 3,
          lastRunAt: now + 60_000,
          messages: [o1, o2, o3].map((o) => outboxMessage(o)),
        },
      ]);
      expect(committed).toMatchObject({ kind: "ok", applied: [s.id] });
      await store.endTick(leader.token, []);

      let stats = await store.stats();
      expect(stats.totals).toMatchObject({ dispatched: 3, ticks: 1, submitted: 0 });
      expect(stats.jobs).toEqual({ queued: 3, running: 0, failed: 0, waiting: 0 });
      expect(stats.backlog).toBe(2);
      expect(stats.outbox).toBe(3);

      await run(o1);
      const skipped = await store.beginRun(o2, 5_000);
      expect(skipped.kind).toBe("skipped");
      stats = await store.stats();
      expect(stats.jobs).toEqual({ queued: 1, running: 1, failed: 0, waiting: 0 });
      expect(stats.totals).toMatchObject({ started: 1, skipped: 1 });
      expect(stats.backlog).toBe(0);

      // An occurrence that no commit counted does not drive `queued` below zero.
      const straySchedule = scheduleRecord();
      await store.putSchedule(straySchedule);
      const stray = occurrenceSpec(straySchedule, now - 500);
      await run(stray);
      stats = await store.stats();
      expect(stats.jobs).toEqual({ queued: 1, running: 2, failed: 0, waiting: 0 });

      const events = await allEvents();
      const dispatched = events.filter((e) => e.type === "job.dispatched");
      expect(dispatched).toEqual(
        [o1, o2, o3].map((o) => ({
          id: expect.any(String),
          type: "job.dispatched",
          at: dispatched[0]?.at,
          jobId: o.id,
          scheduleId: s.id,
          handler: "sync",
          tenant: s.tenant,
        })),
      );
      expect(dispatched[0]?.at).toBeGreaterThanOrEqual(leader.now);
      expect(events.find((e) => e.type === "job.skipped")).toMatchObject({
        jobId: o2.id,
        scheduleId: s.id,
      });

      // Recovery: a message whose recoverAt passed is handed back and counted.
      const late = accepted(
        await store.submitJob(jobSpec(), { runAt: now - 5_000, delayMs: 0, recoverGraceMs: 0 }),
      );
      const recovering = asLeader(await store.beginTick(tickOpts()));
      expect(recovering.recover.map((m) => m.id)).toContain(late.job.id);
      await store.endTick(recovering.token, []);
      stats = await store.stats();
      expect(stats.totals.recovered).toBe(recovering.recover.length);
      expect(stats.totals.ticks).toBe(2);
    });

    it("records tick reports in histograms, with bounds inclusive and a +Inf bucket", async () => {
      await store.putSchedule(scheduleRecord({ nextRunAt: (await store.now()) - 1_000 }));
      const reports = [
        { tickMs: 12, acquireMs: 5 },
        { tickMs: 5, acquireMs: 0 },
        { tickMs: 400_000, acquireMs: 300_000 },
      ];
      for (const report of reports) {
        const leader = asLeader(await store.beginTick(tickOpts()));
        await store.endTick(leader.token, [], report);
      }
      const stats = await store.stats();
      expect(stats.tickDurationMs).toEqual(histogramOf(12, 5, 400_000));
      expect(stats.leaseAcquisitionMs).toEqual(histogramOf(5, 0, 300_000));
      expect(stats.tickDurationMs.counts[0]).toBe(1); // 5 <= 5
      expect(stats.tickDurationMs.counts[HISTOGRAM_BOUNDS_MS.length]).toBe(1);
      expect(stats.leaseAcquisitionMs.counts[HISTOGRAM_BOUNDS_MS.length - 1]).toBe(1); // 300_000
      expect(stats.totals.ticks).toBe(3);
    });

    it("tracks the leader: changes, flaps, acquiredAt, and the live lease", async () => {
      // An idle tick neither counts nor records its holder.
      expect((await store.beginTick(tickOpts({ holder: "idle-one" }))).kind).toBe("idle");
      await store.putSchedule(scheduleRecord({ nextRunAt: (await store.now()) - 1_000 }));

      const a = asLeader(await store.beginTick(tickOpts({ holder: "a" })));
      expect(a.leaderChanged).toEqual({ previous: null });
      let stats = await store.stats();
      expect(stats.leader).toMatchObject({
        holder: "a",
        active: true,
        changes: 1,
        flaps: 0,
        acquiredAt: a.now,
      });
      expect(stats.leader.leaseRemainingMs).toBeGreaterThan(0);
      expect(stats.leader.leaseRemainingMs).toBeLessThanOrEqual(5_000);
      const busy = await store.beginTick(tickOpts({ holder: "b" }));
      expect(busy.kind).toBe("busy");
      await store.endTick(a.token, []);

      const again = asLeader(await store.beginTick(tickOpts({ holder: "a" })));
      expect(again.leaderChanged).toBeUndefined();
      await store.endTick(again.token, []);
      const anonymous = asLeader(await store.beginTick(tickOpts()));
      expect(anonymous.leaderChanged).toBeUndefined();
      await store.endTick(anonymous.token, []);

      const b = asLeader(await store.beginTick(tickOpts({ holder: "b" })));
      expect(b.leaderChanged).toEqual({ previous: "a" });
      await store.endTick(b.token, []);
      const back = asLeader(await store.beginTick(tickOpts({ holder: "a" })));
      expect(back.leaderChanged).toEqual({ previous: "b" });
      await store.endTick(back.token, []);

      stats = await store.stats();
      expect(back.now - a.now).toBeLessThan(FLAP_WINDOW_MS);
      expect(stats.leader).toEqual({
        holder: "a",
        active: false,
        leaseRemainingMs: 0,
        changes: 3,
        flaps: 2,
        acquiredAt: back.now,
      });
      expect(stats.totals.ticks).toBe(5);

      const changes = await allEvents(store, ["leader.changed"]);
      expect(changes).toEqual([
        { id: expect.any(String), type: "leader.changed", at: a.now, holder: "a", previous: null },
        { id: expect.any(String), type: "leader.changed", at: b.now, holder: "b", previous: "a" },
        {
          id: expect.any(String),
          type: "leader.changed",
          at: back.now,
          holder: "a",
          previous: "b",
        },
      ]);
    });
  });
}
