/**
 * @module
 * Part of the Store contract (`store.contract.ts`): the tick's steps: `beginTick` (idle, busy,
 * leader, recovery), `nextDue`, `commitTick` (fenced, rev-checked) and the outbox acks of
 * `ackOutbox` and `endTick`.
 */
import { describe, expect, it } from "vitest";
import type { OutboxMessage, ScheduleRecord } from "../../src/core/model.ts";
import { occurrenceId } from "../../src/core/model.ts";
import type { ScheduleCommit, Store } from "../../src/store/port.ts";
import {
  jobSpec,
  type MakeContractStore,
  occurrenceSpec,
  outboxMessage,
  scheduleRecord,
  sleep,
} from "./fixtures.ts";
import { asAcquired, expectBetween, FAR, putOk, useContractStore } from "./harness.ts";

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describeTickContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const { submit, tickOpts, beginLeader, putDue, recoverable, submitRecoverable, ackOf } =
      useContractStore(make, (made) => {
        store = made;
      });

    // ── tick ───────────────────────────────────────────────────────────────

    describe("beginTick", () => {
      it("is idle when nothing is due: it writes nothing, takes no lease and uses no token", async () => {
        const now = await store.now();
        await putOk(store, scheduleRecord({ nextRunAt: now + 60_000 }));
        await putOk(store, scheduleRecord({ nextRunAt: now - 1_000, status: "paused" }));
        await putOk(store, scheduleRecord({ nextRunAt: null, status: "completed" }));
        await submit(jobSpec(), { delayMs: 60_000, recoverGraceMs: 0 });
        const before = asAcquired(await store.acquireLease("other", 1_000));

        const t0 = await store.now();
        const idle = await store.beginTick(tickOpts({ horizonMs: 1_000 }));
        const t1 = await store.now();
        expect(idle).toEqual({ kind: "idle", now: expect.any(Number), leaseRemainingMs: 0 });
        expectBetween(idle.now, t0, t1);

        await putDue();
        const leader = await beginLeader();
        expect(leader.token).toBe(before.token + 1);
      });

      it("the tick lease is the lease named 'tick': idle leaves it untouched, busy reports it", async () => {
        const held = asAcquired(await store.acquireLease("tick", 1_000));
        const idle = await store.beginTick(tickOpts());
        expect(idle.kind).toBe("idle");
        if (idle.kind !== "idle") return;
        expect(idle.leaseRemainingMs).toBeGreaterThan(0);
        expect(idle.leaseRemainingMs).toBeLessThanOrEqual(1_000);
        expect(await store.renewLease("tick", held.token, 1_000)).toBe(true);

        await putDue();
        const busy = await store.beginTick(tickOpts());
        expect(busy).toEqual({
          kind: "busy",
          now: expect.any(Number),
          leaseRemainingMs: expect.any(Number),
        });
        if (busy.kind !== "busy") return;
        expect(busy.leaseRemainingMs).toBeGreaterThan(0);
        expect(busy.leaseRemainingMs).toBeLessThanOrEqual(1_000);

        expect(await store.releaseLease("tick", held.token)).toBe(true);
        const leader = await beginLeader();
        expect(leader.token).toBeGreaterThan(held.token);
        expect(await store.renewLease("tick", leader.token, 1_000)).toBe(true);
      });

      it("is busy while another tick holds the lease, and a busy tick changes nothing", async () => {
        const due = await putDue();
        const first = await beginLeader({ leaseMs: 1_000 });
        const { message } = await submitRecoverable();

        const busy = await store.beginTick(tickOpts({ recoverGraceMs: 60_000 }));
        expect(busy.kind).toBe("busy");
        if (busy.kind !== "busy") return;
        expect(busy.leaseRemainingMs).toBeGreaterThan(0);
        expect(busy.leaseRemainingMs).toBeLessThanOrEqual(1_000);

        await store.endTick(first.token, []);
        const next = await beginLeader();
        expect(next.token).toBeGreaterThan(first.token);
        expect(next.due).toEqual([due]);
        // The busy tick did not push the message's recoverAt: it is still recoverable now.
        expect(next.recover).toEqual([{ ...message, recoverAt: next.now }]);
      });

      it("as leader returns the due chunk earliest first, `more`, and a fresh token", async () => {
        const now = await store.now();
        const s3 = await putOk(store, scheduleRecord({ nextRunAt: now - 100 }));
        const s1 = await putOk(store, scheduleRecord({ nextRunAt: now - 300 }));
        const s2 = await putOk(store, scheduleRecord({ nextRunAt: now - 200 }));
        await putOk(store, scheduleRecord({ nextRunAt: now + 60_000 }));
        await putOk(store, scheduleRecord({ nextRunAt: now - 500, status: "paused" }));

        const t0 = await store.now();
        const chunk = await beginLeader({ limit: 2 });
        const t1 = await store.now();
        expectBetween(chunk.now, t0, t1);
        expect(chunk).toEqual({
          kind: "leader",
          now: chunk.now,
          token: expect.any(Number),
          degradation: "normal",
          due: [s1, s2],
          more: true,
          recover: [],
        });
        await store.endTick(chunk.token, []);

        const all = await beginLeader({ limit: 3 });
        expect(all.due).toEqual([s1, s2, s3]);
        expect(all.more).toBe(false);
        expect(all.token).toBeGreaterThan(chunk.token);
      });

      it("looks ahead by the horizon", async () => {
        const now = await store.now();
        const soon = await putOk(store, scheduleRecord({ nextRunAt: now + 5_000 }));
        expect((await store.beginTick(tickOpts({ horizonMs: 1_000 }))).kind).toBe("idle");
        const leader = await beginLeader({ horizonMs: 60_000 });
        expect(leader.due).toEqual([soon]);
        expect(leader.more).toBe(false);
      });

      it("recovers outbox messages due for it, oldest first, at most recoverLimit, pushing recoverAt", async () => {
        const now = await store.now();
        const submitAt = (runAt: number) =>
          submit(jobSpec(), { runAt, delayMs: 0, recoverGraceMs: 0 });
        const m2 = (await submitAt(now - 2_000)).message!;
        const m1 = (await submitAt(now - 3_000)).message!;
        const m3 = (await submitAt(now - 1_000)).message!;
        await submitAt(now + 60_000);

        const first = await beginLeader({ recoverLimit: 2, recoverGraceMs: 30_000 });
        expect(first.due).toEqual([]);
        expect(first.more).toBe(false);
        expect(first.recover).toEqual([
          { ...m1, recoverAt: first.now + 30_000 },
          { ...m2, recoverAt: first.now + 30_000 },
        ]);
        await store.endTick(first.token, []);

        const second = await beginLeader({ recoverLimit: 2, recoverGraceMs: 30_000 });
        expect(second.recover).toEqual([{ ...m3, recoverAt: second.now + 30_000 }]);
        await store.endTick(second.token, []);

        expect((await store.beginTick(tickOpts())).kind).toBe("idle");
      });
    });

    describe("nextDue", () => {
      it("acks, renews the lease and returns the next chunk", async () => {
        const now = await store.now();
        const s1 = await putOk(store, scheduleRecord({ nextRunAt: now - 300 }));
        const s2 = await putOk(store, scheduleRecord({ nextRunAt: now - 200 }));
        const s3 = await putOk(store, scheduleRecord({ nextRunAt: now - 100 }));
        const a = (await submitRecoverable()).message!;
        const b = (await submitRecoverable()).message!;

        const first = await beginLeader({ limit: 2, leaseMs: 600 });
        expect(first.due).toEqual([s1, s2]);
        expect(first.recover.map((m) => m.id).sort()).toEqual([a.id, b.id].sort());
        const committed = await store.commitTick(first.token, [
          { id: s1.id, rev: s1.rev, nextRunAt: FAR, runsAdded: 0, messages: [] },
          { id: s2.id, rev: s2.rev, nextRunAt: FAR, runsAdded: 0, messages: [] },
        ]);
        expect(committed.kind).toBe("ok");

        await sleep(70);
        const t0 = await store.now();
        const next = await store.nextDue(first.token, {
          leaseMs: 1_000,
          horizonMs: 0,
          limit: 2,
          ackIds: [ackOf(a)],
        });
        const t1 = await store.now();
        expect(next).toEqual({ kind: "ok", now: expect.any(Number), due: [s3], more: false });
        if (next.kind === "ok") expectBetween(next.now, t0, t1);

        await sleep(600); // past the first lease's 600 ms: only the renewal keeps it
        expect(await store.commitTick(first.token, [])).toEqual({
          kind: "ok",
          applied: [],
          skipped: [],
        });
        await store.endTick(first.token, []);
        expect((await recoverable()).map((m) => m.id)).toEqual([b.id]);
      });

      it("reports `more` when more are due than the limit", async () => {
        const now = await store.now();
        const s1 = await putOk(store, scheduleRecord({ nextRunAt: now - 200 }));
        const s2 = await putOk(store, scheduleRecord({ nextRunAt: now - 100 }));
        const leader = await beginLeader({ limit: 1 });
        expect(leader.due).toEqual([s1]);
        const next = await store.nextDue(leader.token, {
          leaseMs: 1_000,
          horizonMs: 0,
          limit: 1,
          ackIds: [],
        });
        expect(next).toEqual({ kind: "ok", now: expect.any(Number), due: [s1], more: true });
        const wide = await store.nextDue(leader.token, {
          leaseMs: 1_000,
          horizonMs: 0,
          limit: 5,
          ackIds: [],
        });
        expect(wide).toEqual({ kind: "ok", now: expect.any(Number), due: [s1, s2], more: false });
      });

      it("is fenced, removing nothing, once the token lost the lease", async () => {
        const { message } = await submitRecoverable();
        const stale = await beginLeader({ leaseMs: 40 });
        await sleep(80);
        const current = await beginLeader();

        const ackNothing = { leaseMs: 1_000, horizonMs: 0, limit: 10, ackIds: [ackOf(message!)] };
        expect(await store.nextDue(stale.token, ackNothing)).toEqual({ kind: "fenced" });
        expect(await store.nextDue(current.token + 1_000, ackNothing)).toEqual({ kind: "fenced" });
        await store.endTick(current.token, []);
        expect(await store.nextDue(current.token, ackNothing)).toEqual({ kind: "fenced" });
        expect((await recoverable()).map((m) => m.id)).toEqual([message!.id]);
      });
    });

    describe("commitTick", () => {
      it("applies commits: nextRunAt and due score, runs, lastRunAt, rev, outbox; null completes", async () => {
        const now = await store.now();
        const a = await putDue({ runs: 2, lastRunAt: now - 61_000 });
        const b = await putDue();
        const c = await putDue({ lastRunAt: now - 5_000 });
        const leader = await beginLeader();
        expect(leader.due.map((s) => s.id).sort()).toEqual([a.id, b.id, c.id].sort());

        const fireA1 = now - 1_000;
        const fireA2 = now;
        const msgA1 = outboxMessage(occurrenceSpec(a, fireA1), { recoverAt: now - 10 });
        const msgA2 = outboxMessage(occurrenceSpec(a, fireA2), { recoverAt: now - 10 });
        const msgB = outboxMessage(occurrenceSpec(b, now - 1_000), { recoverAt: now - 10 });
        const commits: ScheduleCommit[] = [
          {
            id: a.id,
            rev: a.rev,
            nextRunAt: now + 60_000,
            runsAdded: 2,
            lastRunAt: fireA2,
            messages: [msgA1, msgA2],
          },
          {
            id: b.id,
            rev: b.rev,
            nextRunAt: null,
            runsAdded: 1,
            lastRunAt: now - 1_000,
            messages: [msgB],
          },
          { id: c.id, rev: c.rev, nextRunAt: now + 120_000, runsAdded: 0, messages: [] },
        ];
        expect(await store.commitTick(leader.token, commits)).toEqual({
          kind: "ok",
          applied: [a.id, b.id, c.id],
          skipped: [],
        });

        expect(await store.getSchedule(a.id)).toEqual({
          ...a,
          nextRunAt: now + 60_000,
          runs: 4,
          lastRunAt: fireA2,
          rev: a.rev + 1,
        });
        expect(await store.getSchedule(b.id)).toEqual({
          ...b,
          status: "completed",
          nextRunAt: null,
          runs: 1,
          lastRunAt: now - 1_000,
          rev: b.rev + 1,
        });
        expect(await store.getSchedule(c.id)).toEqual({
          ...c,
          nextRunAt: now + 120_000,
          rev: c.rev + 1,
        });

        await store.endTick(leader.token, []);
        const after = await beginLeader({ horizonMs: 90_000 });
        // a is due again within the horizon at its new score; b completed; c beyond the horizon.
        expect(after.due.map((s) => s.id)).toEqual([a.id]);
        const byId = (m: OutboxMessage) => m.id;
        expect([...after.recover].sort((x, y) => (byId(x) < byId(y) ? -1 : 1))).toEqual(
          [msgA1, msgA2, msgB]
            .map((m) => ({ ...m, recoverAt: after.now }))
            .sort((x, y) => (byId(x) < byId(y) ? -1 : 1)),
        );
      });

      it("skips schedules whose rev changed, that were paused or deleted, and writes none of their messages", async () => {
        const now = await store.now();
        const ok = await putDue();
        const changed = await putDue();
        const paused = await putDue();
        const deleted = await putDue();
        const leader = await beginLeader();
        expect(leader.due).toHaveLength(4);

        const changedNow = await putOk(store, { ...changed, handler: "other.handler" });
        const pausedNow = await putOk(store, { ...paused, status: "paused" });
        expect(await store.deleteSchedule(deleted.id)).toBe(true);

        const message = (s: ScheduleRecord) =>
          outboxMessage(occurrenceSpec(s, now - 1_000), { recoverAt: now - 10 });
        const commit = (s: ScheduleRecord, rev = s.rev): ScheduleCommit => ({
          id: s.id,
          rev,
          nextRunAt: now + 60_000,
          runsAdded: 1,
          lastRunAt: now - 1_000,
          messages: [message(s)],
        });
        const result = await store.commitTick(leader.token, [
          commit(ok),
          commit(changed),
          commit(paused, pausedNow.rev), // rev matches, but the schedule is paused
          commit(deleted),
        ]);
        expect(result).toEqual({
          kind: "ok",
          applied: [ok.id],
          skipped: [changed.id, paused.id, deleted.id],
        });

        expect(await store.getSchedule(changed.id)).toEqual(changedNow);
        expect(await store.getSchedule(paused.id)).toEqual(pausedNow);
        expect(await store.getSchedule(deleted.id)).toBeNull();
        await store.endTick(leader.token, []);
        expect((await recoverable()).map((m) => m.id)).toEqual([occurrenceId(ok.id, now - 1_000)]);
      });

      it("refuses a fenced-out commit and writes nothing (I3)", async () => {
        const now = await store.now();
        const s = await putDue();
        const stale = await beginLeader({ leaseMs: 40 });
        await sleep(80);
        const current = await beginLeader({ leaseMs: 5_000 });
        expect(current.due).toEqual([s]);

        const staleMsg = outboxMessage(occurrenceSpec(s, now - 1_000), { recoverAt: now - 10 });
        const staleCommit: ScheduleCommit = {
          id: s.id,
          rev: s.rev,
          nextRunAt: now + 60_000,
          runsAdded: 1,
          lastRunAt: now - 1_000,
          messages: [staleMsg],
        };
        expect(await store.commitTick(stale.token, [staleCommit])).toEqual({ kind: "fenced" });
        expect(await store.getSchedule(s.id)).toEqual(s);

        const freshMsg = outboxMessage(occurrenceSpec(s, now - 999), { recoverAt: now - 10 });
        expect(
          await store.commitTick(current.token, [
            { ...staleCommit, lastRunAt: now - 999, messages: [freshMsg] },
          ]),
        ).toEqual({ kind: "ok", applied: [s.id], skipped: [] });

        // A stale endTick does not release the current holder's lease.
        await store.endTick(stale.token, []);
        expect((await store.beginTick(tickOpts())).kind).toBe("busy");

        await store.endTick(current.token, []);
        expect(await store.commitTick(current.token, [])).toEqual({ kind: "fenced" });
        expect((await recoverable()).map((m) => m.id)).toEqual([freshMsg.id]);
        expect(await store.getSchedule(s.id)).toEqual({
          ...s,
          nextRunAt: now + 60_000,
          runs: 1,
          lastRunAt: now - 999,
          rev: s.rev + 1,
        });
      });
    });

    describe("ackOutbox and endTick", () => {
      it("ackOutbox takes messages out of recovery; repeating it or naming unknown ids is harmless", async () => {
        const a = (await submitRecoverable()).message!;
        const b = (await submitRecoverable()).message!;
        await store.ackOutbox([ackOf(a), { id: "no-such-message", dedupId: "no-such-message" }]);
        await store.ackOutbox([ackOf(a)]);
        await store.ackOutbox([]);
        expect((await recoverable()).map((m) => m.id)).toEqual([b.id]);
      });

      it("acks are compare-and-set on (id, dedupId): a late ack leaves a newer message of the job", async () => {
        const { message } = await submitRecoverable();
        if (!message) throw new Error("replayed");
        const stale = ackOf(message);
        await store.markDead(message.job, { name: "Error", message: "gave up" });
        const retried = await store.retryDead(message.id, { recoverGraceMs: 0 });
        if (!retried) throw new Error("retryDead answered null");

        const leader = await beginLeader();
        expect(leader.recover.map((m) => m.dedupId)).toEqual([retried.message.dedupId]);
        const next = await store.nextDue(leader.token, {
          leaseMs: 5_000,
          horizonMs: 0,
          limit: 10,
          ackIds: [stale],
        });
        expect(next.kind).toBe("ok");
        await store.endTick(leader.token, [stale]);
        await store.ackOutbox([stale]);
        expect((await recoverable()).map((m) => m.dedupId)).toEqual([retried.message.dedupId]);

        await store.ackOutbox([ackOf(retried.message)]);
        expect(await recoverable()).toEqual([]);
      });

      it("deferOutbox moves recoverAt (either way) of messages still carrying dedupId; keeps the body", async () => {
        const now = await store.now();
        const a = (await submitRecoverable()).message!;
        const b = (await submitRecoverable()).message!;
        const later = (await submit(jobSpec(), { runAt: now, delayMs: 0, recoverGraceMs: FAR }))
          .message!;
        expect(store.deferOutbox).toBeTypeOf("function");
        await store.deferOutbox!([
          { ...ackOf(a), recoverAt: now + 3_600_000 },
          { id: b.id, dedupId: "stale", recoverAt: now + 3_600_000 },
          { ...ackOf(later), recoverAt: now - 1_000 },
          { id: "no-such-message", dedupId: "no-such-message", recoverAt: now - 1_000 },
        ]);
        await store.deferOutbox!([]);
        const back = await recoverable();
        expect(back.map((m) => m.id)).toEqual([b.id, later.id].sort());
        expect(back.find((m) => m.id === later.id)).toMatchObject({
          dedupId: later.dedupId,
          job: later.job,
          notBefore: later.notBefore,
        });
        expect(await store.getJob(a.id)).toMatchObject({ status: "queued" });
      });

      it("endTick acks and releases the lease", async () => {
        const a = (await submitRecoverable()).message!;
        const b = (await submitRecoverable()).message!;
        const leader = await beginLeader({ leaseMs: 5_000 });
        await store.endTick(leader.token, [ackOf(a)]);
        const next = await beginLeader();
        expect(next.recover.map((m) => m.id)).toEqual([b.id]);
        expect(next.token).toBeGreaterThan(leader.token);
      });

      it("endTick with a token that lost the lease still acks, and leaves the holder's lease", async () => {
        const a = (await submitRecoverable()).message!;
        const b = (await submitRecoverable()).message!;
        const stale = await beginLeader({ leaseMs: 40 });
        await sleep(80);
        const current = await beginLeader({ leaseMs: 5_000 });
        await store.endTick(stale.token, [ackOf(a)]);
        expect((await store.beginTick(tickOpts())).kind).toBe("busy");
        expect(await store.renewLease("tick", current.token, 5_000)).toBe(true);
        await store.endTick(current.token, []);
        expect((await recoverable()).map((m) => m.id)).toEqual([b.id]);
      });
    });
  });
}
