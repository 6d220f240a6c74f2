/**
 * @module
 * The Store contract (invariant I6, docs/architecture.md): one suite every Store implementation
 * runs, pinning the semantics documented in `src/store/port.ts`. Real time throughout (short TTLs
 * and real sleeps),
 * because the Redis store judges expiry by Redis's own clock; every time a test reasons about is
 * taken from `store.now()`.
 *
 * @example
 * describeStoreContract("memory", async () => ({
 *   store: new MemoryStore({ retention: CONTRACT_RETENTION }),
 *   cleanup: async () => {},
 * }));
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JobRecord, JobSpec, OutboxMessage, ScheduleRecord } from "../../src/core/model.ts";
import { occurrenceId } from "../../src/core/model.ts";
import type {
  BeginRunResult,
  BeginTickOptions,
  BeginTickResult,
  Page,
  ScheduleCommit,
  Store,
} from "../../src/store/port.ts";
import {
  accepted,
  CONTRACT_RETENTION,
  fullJobSpec,
  jobSpec,
  type MakeContractStore,
  occurrenceSpec,
  outboxMessage,
  scheduleRecord,
  sleep,
  uid,
} from "./fixtures.ts";

/** A far-future time: a schedule due then is never due in a test. */
const FAR = 4_000_000_000_000;

/**
 * Registers the contract suite for one Store implementation.
 *
 * `make` is called before every test and must return a fresh, empty store (its own prefix on a
 * shared Redis is fine) built with {@link CONTRACT_RETENTION}; `cleanup` runs after the test.
 */
export function describeStoreContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    let cleanup: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      const made = await make();
      store = made.store;
      cleanup = made.cleanup;
    });

    afterEach(async () => {
      await cleanup?.();
      cleanup = undefined;
    });

    // ── helpers (closures over the current store) ──────────────────────────

    /** `store.submitJob` without admission control, which never refuses. */
    const submit = async (...args: Parameters<Store["submitJob"]>) =>
      accepted(await store.submitJob(...args));

    const tickOpts = (overrides: Partial<BeginTickOptions> = {}): BeginTickOptions => ({
      leaseMs: 5_000,
      horizonMs: 0,
      limit: 10,
      recoverLimit: 100,
      recoverGraceMs: 0,
      ...overrides,
    });

    async function beginLeader(overrides: Partial<BeginTickOptions> = {}) {
      return asLeader(await store.beginTick(tickOpts(overrides)));
    }

    /** A schedule stored as active and due 1 s ago (or as `overrides` say). */
    async function putDue(overrides: Partial<ScheduleRecord> = {}): Promise<ScheduleRecord> {
      const now = await store.now();
      return putOk(store, scheduleRecord({ nextRunAt: now - 1_000, ...overrides }));
    }

    /**
     * The outbox as the recover step sees it: messages with `recoverAt <= now`, sorted by id.
     * Takes and releases the tick lease; pushes their `recoverAt` to now (grace 0).
     */
    async function recoverable(): Promise<OutboxMessage[]> {
      const begun = await store.beginTick(tickOpts({ recoverLimit: 1_000 }));
      if (begun.kind === "busy") throw new Error("recoverable(): the tick lease is held");
      if (begun.kind === "idle") return [];
      await store.endTick(begun.token, []);
      return [...begun.recover].sort((a, b) => (a.id < b.id ? -1 : 1));
    }

    /** Puts `messages` in the outbox through a (fenced) tick commit. */
    async function writeOutbox(messages: OutboxMessage[]): Promise<void> {
      const carrier = await putDue();
      const leader = await beginLeader();
      const committed = await store.commitTick(leader.token, [
        { id: carrier.id, rev: carrier.rev, nextRunAt: FAR, runsAdded: 0, messages },
      ]);
      expect(committed).toEqual({ kind: "ok", applied: [carrier.id], skipped: [] });
      await store.endTick(leader.token, []);
    }

    /** Submits a job whose outbox message is already due for recovery. */
    async function submitRecoverable(overrides: Parameters<typeof jobSpec>[0] = {}) {
      const now = await store.now();
      return submit(jobSpec(overrides), {
        runAt: now - 1_000,
        delayMs: 0,
        recoverGraceMs: 0,
      });
    }

    /** The ack of a published message (compare-and-delete on id and dedupId). */
    const ackOf = (m: OutboxMessage) => ({ id: m.id, dedupId: m.dedupId });

    /**
     * The spec of a freshly submitted job (as its message carries it). A job without `scheduleId`
     * must exist before beginRun / markDead: they do not re-create it.
     */
    async function submitted(
      overrides: Parameters<typeof jobSpec>[0] = {},
      runAt?: number,
    ): Promise<JobSpec> {
      const timing = {
        delayMs: 0,
        recoverGraceMs: 60_000,
        ...(runAt === undefined ? {} : { runAt }),
      };
      const res = await submit(jobSpec(overrides), timing);
      if (!res.message) throw new Error("submitted(): replayed");
      return res.message.job;
    }

    async function run(spec: JobSpec, leaseMs = 5_000) {
      return asRun(await store.beginRun(spec, leaseMs));
    }

    async function allPages<T>(list: (cursor?: string) => Promise<Page<T>>): Promise<T[][]> {
      const pages: T[][] = [];
      let cursor: string | undefined;
      do {
        const page = await list(cursor);
        pages.push(page.items);
        cursor = page.cursor;
        if (pages.length > 100) throw new Error("paging does not end");
      } while (cursor !== undefined);
      return pages;
    }

    // ── clock ──────────────────────────────────────────────────────────────

    describe("now", () => {
      it("is the store's clock in epoch milliseconds and does not go back", async () => {
        const a = await store.now();
        const b = await store.now();
        expect(Number.isInteger(a)).toBe(true);
        expect(Math.abs(a - Date.now())).toBeLessThan(60_000);
        expect(b).toBeGreaterThanOrEqual(a);
      });
    });

    // ── leases ─────────────────────────────────────────────────────────────

    describe("leases", () => {
      it("acquire hands out increasing tokens from one sequence; a held lease is refused", async () => {
        const a = asAcquired(await store.acquireLease("alpha", 1_000));
        const b = asAcquired(await store.acquireLease("beta", 1_000));
        expect(b.token).toBeGreaterThan(a.token);

        const refused = await store.acquireLease("alpha", 1_000);
        expect(refused.acquired).toBe(false);
        if (refused.acquired) return;
        expect(refused.remainingMs).toBeGreaterThan(0);
        expect(refused.remainingMs).toBeLessThanOrEqual(1_000);

        expect(await store.releaseLease("alpha", a.token)).toBe(true);
        const c = asAcquired(await store.acquireLease("alpha", 1_000));
        expect(c.token).toBeGreaterThan(b.token);

        // The tick lease draws from the same sequence.
        let last = c.token;
        for (let i = 0; i < 6; i++) {
          const name = i % 2 === 0 ? "gamma" : "delta";
          const next = asAcquired(await store.acquireLease(name, 1_000));
          expect(next.token).toBeGreaterThan(last);
          expect(await store.releaseLease(name, next.token)).toBe(true);
          await putDue();
          const tick = await beginLeader();
          expect(tick.token).toBeGreaterThan(next.token);
          await store.endTick(tick.token, []);
          last = tick.token;
        }
        expect(await store.releaseLease("alpha", c.token)).toBe(true);
      });

      it("renew extends the lease for its holder only", async () => {
        const a = asAcquired(await store.acquireLease("l", 400));
        expect(await store.renewLease("l", a.token + 1_000, 2_000)).toBe(false);
        expect(await store.renewLease("l", a.token, 2_000)).toBe(true);
        await sleep(500); // past the first 400 ms: only the renewal keeps it
        const refused = await store.acquireLease("l", 2_000);
        expect(refused.acquired).toBe(false);
        if (!refused.acquired) expect(refused.remainingMs).toBeLessThanOrEqual(2_000 - 490);
        expect(await store.renewLease("l", a.token, 2_000)).toBe(true);
      });

      it("release is compare-and-delete", async () => {
        const a = asAcquired(await store.acquireLease("l", 1_000));
        expect(await store.releaseLease("l", a.token + 1)).toBe(false);
        expect((await store.acquireLease("l", 1_000)).acquired).toBe(false);
        expect(await store.releaseLease("l", a.token)).toBe(true);
        expect(await store.releaseLease("l", a.token)).toBe(false);
        expect(await store.releaseLease("never-held", a.token)).toBe(false);
        expect(await store.renewLease("never-held", a.token, 1_000)).toBe(false);
      });

      it("an expired lease is free; its old token can neither renew nor release the next holder's", async () => {
        const a = asAcquired(await store.acquireLease("l", 40));
        await sleep(80);
        expect(await store.renewLease("l", a.token, 1_000)).toBe(false);
        expect(await store.releaseLease("l", a.token)).toBe(false);
        const b = asAcquired(await store.acquireLease("l", 1_000));
        expect(b.token).toBeGreaterThan(a.token);
        expect(await store.releaseLease("l", a.token)).toBe(false);
        expect(await store.renewLease("l", a.token, 1_000)).toBe(false);
        expect(await store.releaseLease("l", b.token)).toBe(true);
      });
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

      it("refuses to cancel a running or finished job, and reports a missing one", async () => {
        const { job } = await submit(jobSpec(), { delayMs: 0, recoverGraceMs: 60_000 });
        const running = await run({ ...job });
        expect(await store.cancelJob(job.id)).toEqual({ kind: "conflict", job: running.job });
        const done = await store.finishRun(job.id, 1, { ok: true, result: 1 });
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
        // The same token again — after the attempt finished, and while it runs — changes nothing.
        expect(await store.beginRun(spec, 5_000, undefined, token)).toEqual({ kind: "replayed" });
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

      it("overlap skip: the schedule's run lease expires with the run lease, and its holder may run again", async () => {
        const s = scheduleRecord({ overlap: "skip" });
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

      it("overlap allow: occurrences of one schedule run side by side", async () => {
        const s = scheduleRecord({ overlap: "allow" });
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

    describe("the reaper: watches of started attempts", () => {
      const LEASE = 150;
      const REAP = 100;
      const ERR = { name: "Error", message: "boom" };

      /** What a tick's recover step finds now with `reapAfterMs` REAP (takes and ends the tick). */
      async function reapable(): Promise<{ now: number; recover: OutboxMessage[] }> {
        const begun = await store.beginTick(tickOpts({ recoverLimit: 1_000, reapAfterMs: REAP }));
        if (begun.kind === "busy") throw new Error("reapable(): the tick lease is held");
        if (begun.kind === "idle") return { now: begun.now, recover: [] };
        await store.endTick(begun.token, []);
        return {
          now: begun.now,
          recover: [...begun.recover].sort((a, b) => (a.id < b.id ? -1 : 1)),
        };
      }

      /** A watch as a tick recovers it (its `reaps` count already raised by that recovery). */
      const watchOf = (
        spec: JobSpec,
        attempt: number,
        recoverAt: number,
        reaps = 1,
      ): OutboxMessage => ({
        id: spec.id,
        dedupId: `${spec.id}~a${attempt}`,
        job: spec,
        notBefore: spec.runAt,
        recoverAt,
        attempt,
        reaps,
      });

      const begin = async (spec: JobSpec) => asRun(await store.beginRun(spec, LEASE, REAP));

      it("a run makes the job's message the attempt's watch, recovered reapAfterMs after the lease ends", async () => {
        const spec = await submitted();
        const begun = await begin(spec);
        expect((await reapable()).recover).toEqual([]);
        await sleep(LEASE + REAP + 50);
        const found = await reapable();
        expect(found.now).toBeGreaterThanOrEqual((begun.job.startedAt ?? 0) + LEASE + REAP);
        expect(found.recover).toEqual([watchOf(spec, 1, found.now + REAP)]);
        // Its recoverAt was pushed by reapAfterMs: the next tick does not take it again.
        expect((await reapable()).recover).toEqual([]);
      });

      it("an acked message becomes its job's attempt-0 watch, recovered only after reapAfterMs", async () => {
        const { message } = await submitRecoverable();
        if (!message) throw new Error("replayed");
        await store.ackOutbox([ackOf(message)], REAP);
        expect((await reapable()).recover).toEqual([]);
        await sleep(REAP + 50);
        const found = await reapable();
        expect(found.recover).toEqual([watchOf(message.job, 0, found.now + REAP)]);
        // A delivery that begins the job replaces it with attempt 1's watch.
        await begin(message.job);
        await sleep(LEASE + REAP + 50);
        const next = await reapable();
        expect(next.recover).toEqual([watchOf(message.job, 1, next.now + REAP)]);
      });

      it("endTick and nextDue ack the same way", async () => {
        const a = (await submitRecoverable()).message!;
        const b = (await submitRecoverable()).message!;
        const leader = await beginLeader({ recoverGraceMs: 60_000 });
        const next = await store.nextDue(leader.token, {
          leaseMs: 5_000,
          horizonMs: 0,
          limit: 10,
          ackIds: [ackOf(a)],
          reapAfterMs: REAP,
        });
        expect(next.kind).toBe("ok");
        await store.endTick(leader.token, [ackOf(b)], undefined, REAP);
        await sleep(REAP + 50);
        const found = await reapable();
        expect(found.recover).toEqual(
          [watchOf(a.job, 0, found.now + REAP), watchOf(b.job, 0, found.now + REAP)].sort((x, y) =>
            x.id < y.id ? -1 : 1,
          ),
        );
      });

      it("each recovery of a watch counts a reap; the next attempt starts the count again", async () => {
        const spec = await submitted();
        await begin(spec);
        await sleep(LEASE + REAP + 50);
        for (const reaps of [1, 2, 3]) {
          const found = await reapable();
          expect(found.recover).toEqual([watchOf(spec, 1, found.now + REAP, reaps)]);
          await sleep(REAP + 50);
        }
        await begin(spec);
        await sleep(LEASE + REAP + 50);
        const next = await reapable();
        expect(next.recover).toEqual([watchOf(spec, 2, next.now + REAP, 1)]);
      });

      it("a job input JSON.parse accepts but Lua's cjson refuses (a lone surrogate) is recovered like any other", async () => {
        const { message } = await submitRecoverable({ input: { text: "\ud800 and \udfff" } });
        if (!message) throw new Error("replayed");
        const found = await reapable();
        expect(found.recover).toEqual([{ ...message, recoverAt: found.now }]);
        await store.ackOutbox([ackOf(message)], REAP);
        await sleep(REAP + 50);
        const watch = await reapable();
        expect(watch.recover).toEqual([watchOf(message.job, 0, watch.now + REAP)]);
        expect(watch.recover[0]?.job.input).toEqual({ text: "\ud800 and \udfff" });
      });

      it("a leftover message of a job that is gone is removed by beginRun (missing) and by markDead (null)", async () => {
        const now = await store.now();
        const gone = fullJobSpec({ runAt: now - 1_000, createdAt: now - 1_000 });
        const alsoGone = fullJobSpec({ runAt: now - 1_000, createdAt: now - 1_000 });
        await writeOutbox([
          outboxMessage(gone, { recoverAt: FAR }),
          outboxMessage(alsoGone, { recoverAt: FAR }),
        ]);
        await store.ackOutbox([ackOf(outboxMessage(gone)), ackOf(outboxMessage(alsoGone))], REAP);
        expect(await store.beginRun(gone, LEASE, REAP)).toEqual({ kind: "missing" });
        expect(await store.markDead(alsoGone, ERR, { attempts: 0 })).toBeNull();
        await sleep(REAP + 50);
        expect((await reapable()).recover).toEqual([]);
      });

      it("cancelling a queued job removes its attempt-0 watch", async () => {
        const { message } = await submitRecoverable();
        if (!message) throw new Error("replayed");
        await store.ackOutbox([ackOf(message)], REAP);
        expect((await store.cancelJob(message.id)).kind).toBe("ok");
        await sleep(REAP + 50);
        expect((await reapable()).recover).toEqual([]);
      });

      it("markDead with expected attempts leaves a job that has moved on", async () => {
        const spec = await submitted();
        await begin(spec);
        await store.finishRun(spec.id, 1, { ok: false, error: ERR, final: false }, REAP);
        const moved = await store.markDead(spec, ERR, { attempts: 0 });
        expect(moved).toMatchObject({ status: "failed", attempts: 1 });
        const dead = await store.markDead(spec, ERR, { attempts: 1 });
        expect(dead).toMatchObject({ status: "dead", attempts: 1 });
      });

      it("a busy delivery leaves the watch; the next attempt replaces it", async () => {
        const spec = await submitted();
        await begin(spec);
        expect((await store.beginRun(spec, LEASE, 60_000)).kind).toBe("busy");
        await sleep(LEASE + REAP + 50);
        const first = await reapable();
        expect(first.recover).toEqual([watchOf(spec, 1, first.now + REAP)]);
        expect((await begin(spec)).attempt).toBe(2);
        await sleep(LEASE + REAP + 50);
        const second = await reapable();
        expect(second.recover).toEqual([watchOf(spec, 2, second.now + REAP)]);
      });

      it("success and a final failure remove the watch; a failure to be retried moves it to now + reapAfterMs", async () => {
        const [ok, dead, later, soon] = [
          await submitted(),
          await submitted(),
          await submitted(),
          await submitted(),
        ];
        for (const spec of [ok, dead, later, soon]) await begin(spec);
        await store.finishRun(ok.id, 1, { ok: true, result: 1 }, REAP);
        await store.finishRun(dead.id, 1, { ok: false, error: ERR, final: true }, REAP);
        await store.finishRun(later.id, 1, { ok: false, error: ERR, final: false }, 60_000);
        await store.finishRun(soon.id, 1, { ok: false, error: ERR, final: false }, REAP);
        await sleep(LEASE + REAP + 50);
        const found = await reapable();
        expect(found.recover).toEqual([watchOf(soon, 1, found.now + REAP)]);
      });

      it("markDead and a skipped occurrence leave no watch", async () => {
        const spec = await submitted();
        await begin(spec);
        await sleep(LEASE + 20);
        expect((await store.markDead(spec, ERR))?.status).toBe("dead");
        const s = scheduleRecord({ overlap: "skip" });
        const occ1 = occurrenceSpec(s, 1_800_000_000_000);
        const occ2 = occurrenceSpec(s, 1_800_000_060_000);
        await begin(occ1);
        expect((await store.beginRun(occ2, 60_000, REAP)).kind).toBe("skipped");
        await store.finishRun(occ1.id, 1, { ok: true, result: null }, REAP);
        await sleep(LEASE + REAP + 50);
        expect((await reapable()).recover).toEqual([]);
      });

      it("a late ack of the message a tick published does not remove the watch that replaced it", async () => {
        const s = scheduleRecord();
        const occ = occurrenceSpec(s, 1_800_000_000_000);
        const published = outboxMessage(occ, { recoverAt: FAR });
        await writeOutbox([published]);
        await begin(occ);
        await store.ackOutbox([ackOf(published)]);
        await sleep(LEASE + REAP + 50);
        const found = await reapable();
        expect(found.recover).toEqual([watchOf(occ, 1, found.now + REAP)]);
      });

      it("the watch carries the job as it is now: after retryDead, its new runAt", async () => {
        const spec = await submitted();
        await begin(spec);
        await store.finishRun(spec.id, 1, { ok: false, error: ERR, final: true }, REAP);
        await sleep(5); // a later runAt than the submit's, on any clock
        const retried = await store.retryDead(spec.id, { recoverGraceMs: 60_000 });
        if (!retried) throw new Error("not retried");
        expect(retried.message.job.runAt).not.toBe(spec.runAt);
        await begin(retried.message.job);
        await sleep(LEASE + REAP + 50);
        const found = await reapable();
        expect(found.recover).toEqual([watchOf(retried.message.job, 2, found.now + REAP)]);
      });
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
        await run(occurrenceSpec(s, 1_800_000_000_000));
        const occ2 = occurrenceSpec(s, 1_800_000_060_000);
        const skipped = (await store.beginRun(occ2, 5_000)) as { job: JobRecord };
        expect(await store.markDead(occ2, error)).toEqual(skipped.job);

        expect(await store.listDead({ limit: 10 })).toEqual({ items: [] });
      });

      it("releases the schedule's overlap lease", async () => {
        const s = scheduleRecord({ overlap: "skip" });
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
        // A delivery of the deleted schedule's occurrence arriving late is not indexed as a run…
        const late = await store.beginRun(occurrenceSpec(s, base + 60_000), 5_000);
        expect(late.kind).toBe("run");
        // …so a schedule re-created under the id (here by another tenant's qualified twin, or the
        // same tenant) starts with none.
        await store.putSchedule(scheduleRecord({ id: s.id, tenant: s.tenant }));
        expect(await store.listRuns(s.id, { limit: 10 })).toEqual({ items: [] });
        const fresh = await run(occurrenceSpec(s, base + 120_000));
        expect((await store.listRuns(s.id, { limit: 10 })).items).toEqual([fresh.job]);
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

    describe("listings are per tenant", () => {
      it("jobs, dead letters and schedules of one tenant never appear in another's pages or cursors", async () => {
        const mine = "tenant-a";
        const theirs = "tenant-b";
        const own: string[] = [];
        const foreign: string[] = [];
        for (let i = 0; i < 5; i++) {
          for (const [tenant, ids] of [
            [mine, own],
            [theirs, foreign],
          ] as const) {
            const { job } = accepted(
              await store.submitJob(jobSpec({ tenant, handler: `h${i % 2}` }), {
                delayMs: 0,
                recoverGraceMs: 60_000,
              }),
            );
            ids.push(job.id);
          }
        }
        const sA = scheduleRecord({ tenant: mine });
        const sB = scheduleRecord({ tenant: theirs });
        await store.putSchedule(sA);
        await store.putSchedule(sB);
        const deadA = await store.markDead(occurrenceSpec(sA, 1_800_000_000_000), {
          name: "E",
          message: "x",
        });
        const deadB = await store.markDead(occurrenceSpec(sB, 1_800_000_000_000), {
          name: "E",
          message: "x",
        });
        own.push(deadA!.id);
        foreign.push(deadB!.id);

        const seen = (page: { items: { id: string }[]; cursor?: string }) => JSON.stringify(page);
        const pages: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await store.listJobs({ tenant: mine, limit: 1, cursor });
          expect(page.items.length).toBe(1); // a page is full until the last
          pages.push(seen(page));
          cursor = page.cursor;
        } while (cursor);
        expect(pages).toHaveLength(own.length);
        for (const handler of ["h0", "h1"]) {
          cursor = undefined;
          do {
            const page = await store.listJobs({ tenant: mine, handler, limit: 1, cursor });
            pages.push(seen(page));
            cursor = page.cursor;
          } while (cursor);
        }
        pages.push(seen(await store.listDead({ tenant: mine, limit: 10 })));
        pages.push(seen(await store.listSchedules({ tenant: mine, limit: 10 })));
        const text = pages.join("\n");
        for (const id of own) expect(text).toContain(id);
        for (const id of [...foreign, sB.id]) {
          expect(text).not.toContain(id);
          // Cursors too: decoded, none names the other tenant's records.
          for (const page of pages) {
            const c = (JSON.parse(page) as { cursor?: string }).cursor;
            if (c) expect(Buffer.from(c, "base64url").toString()).not.toContain(id);
          }
        }
        expect(
          (await store.listDead({ tenant: theirs, limit: 10 })).items.map((j) => j.id),
        ).toEqual([deadB!.id]);
        expect((await store.listSchedules({ tenant: theirs, limit: 10 })).items).toEqual([
          expect.objectContaining({ id: sB.id }),
        ]);
      });
    });
  });
}

// ── assertion helpers ──────────────────────────────────────────────────────

async function putOk(
  store: Store,
  schedule: ScheduleRecord,
  expectRev?: number,
): Promise<ScheduleRecord> {
  const res = await store.putSchedule(schedule, expectRev);
  if (res.kind !== "ok") throw new Error(`putSchedule(${schedule.id}) conflicted`);
  return res.schedule;
}

function asLeader(res: BeginTickResult): Extract<BeginTickResult, { kind: "leader" }> {
  if (res.kind !== "leader") throw new Error(`expected a leader tick, got ${JSON.stringify(res)}`);
  return res;
}

function asRun(res: BeginRunResult): Extract<BeginRunResult, { kind: "run" }> {
  if (res.kind !== "run") throw new Error(`expected to run, got ${JSON.stringify(res)}`);
  return res;
}

function asAcquired<T extends { acquired: boolean }>(res: T): Extract<T, { acquired: true }> {
  if (!res.acquired) throw new Error(`expected the lease, got ${JSON.stringify(res)}`);
  return res as Extract<T, { acquired: true }>;
}

function expectBetween(value: number | undefined, lo: number, hi: number): void {
  expect(value).toBeTypeOf("number");
  expect(value).toBeGreaterThanOrEqual(lo);
  expect(value).toBeLessThanOrEqual(hi);
}
