/**
 * @module
 * Part of the Store contract (`store.contract.ts`): the reaper: the outbox watch of every started
 * attempt (ADR 0010), recovered by the tick when no delivery comes.
 */
import { describe, expect, it } from "vitest";
import type { JobSpec, OutboxMessage } from "../../src/core/model.ts";
import type { Store } from "../../src/store/port.ts";
import {
  fullJobSpec,
  jobSpec,
  type MakeContractStore,
  occurrenceSpec,
  outboxMessage,
  scheduleRecord,
  sleep,
} from "./fixtures.ts";
import { asRun, FAR, useContractStore } from "./harness.ts";

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describeReaperContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const { submit, tickOpts, beginLeader, writeOutbox, submitRecoverable, ackOf, submitted } =
      useContractStore(make, (made) => {
        store = made;
      });

    describe("the reaper: watches of started attempts", () => {
      const LEASE = 150;
      const REAP = 100;
      const ERR = { name: "Error", message: "boom" };

      /**
       * A watch's wait that no real-time gap between two calls of a test reaches, however busy the
       * machine: a check that nothing is recovered right after something must not depend on
       * the two calls coming within REAP of each other.
       */
      const LONG = 60_000;

      /**
       * What a tick's recover step finds now, pushing what it recovers `reapAfterMs` (REAP) on
       * (takes and ends the tick).
       */
      async function reapable(
        reapAfterMs = REAP,
      ): Promise<{ now: number; recover: OutboxMessage[] }> {
        const begun = await store.beginTick(tickOpts({ recoverLimit: 1_000, reapAfterMs }));
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
        const found = await reapable(LONG);
        expect(found.now).toBeGreaterThanOrEqual((begun.job.startedAt ?? 0) + LEASE + REAP);
        expect(found.recover).toEqual([watchOf(spec, 1, found.now + LONG)]);
        // Its recoverAt was pushed by reapAfterMs: the next tick does not take it again.
        expect((await reapable()).recover).toEqual([]);
      });

      it("an acked message becomes its job's attempt-0 watch, recovered only after reapAfterMs", async () => {
        const { message } = await submitRecoverable();
        if (!message) throw new Error("replayed");
        // Acked with a longer wait than REAP, so that the first check below has a second to come.
        const ackWait = 1_000;
        await store.ackOutbox([ackOf(message)], ackWait);
        expect((await reapable()).recover).toEqual([]);
        await sleep(ackWait + 50);
        const found = await reapable();
        expect(found.recover).toEqual([watchOf(message.job, 0, found.now + REAP)]);
        // A delivery that begins the job replaces it with attempt 1's watch.
        await begin(message.job);
        await sleep(LEASE + REAP + 50);
        const next = await reapable();
        expect(next.recover).toEqual([watchOf(message.job, 1, next.now + REAP)]);
      });

      it("a message acked long before it is due is watched from when it is due, not from the ack", async () => {
        // A released dependent with a late runAt, or a job a queue with a short longest delay
        // took hours early: published now, not due to start before then.
        const dueIn = 2_000;
        const { message } = await submit(jobSpec(), {
          runAt: (await store.now()) + dueIn,
          delayMs: 0,
          recoverGraceMs: 0,
        });
        if (!message) throw new Error("replayed");
        await store.ackOutbox([ackOf(message)], REAP);
        // Counted from the ack, the watch would be due by now.
        await sleep(REAP + 50);
        expect((await reapable()).recover).toEqual([]);
        await sleep(dueIn + 50);
        const found = await reapable();
        expect(found.now).toBeGreaterThanOrEqual(message.notBefore + REAP);
        expect(found.recover).toEqual([watchOf(message.job, 0, found.now + REAP)]);
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
        await store.putSchedule(s);
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
        await store.putSchedule(s);
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
  });
}
