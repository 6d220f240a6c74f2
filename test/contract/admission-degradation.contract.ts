/**
 * @module
 * Part of the admission contract (`admission.contract.ts`): the degradation controller
 * (`DegradationPolicy`) — levels with hysteresis and debounce, acting on submits, evaluated
 * by leader ticks only.
 */
import { describe, expect, it } from "vitest";
import type { DegradationLevel, Store } from "../../src/store/port.ts";
import { asLeader, policy, quota, TIMING, useAdmissionStore } from "./admission-harness.ts";
import {
  accepted,
  jobSpec,
  type MakeContractStore,
  scheduleRecord,
  sleep,
  uid,
} from "./fixtures.ts";

/** Registers this part of the admission contract for one implementation. */
export function describeDegradationContract(name: string, make: MakeContractStore): void {
  describe(`Admission contract: ${name}`, () => {
    let store: Store;
    const { dueJobs, cancel, submitWith, tickOpts } = useAdmissionStore(make, (made) => {
      store = made;
    });

    // ── degradation ────────────────────────────────────────────────────────

    describe("degradation", () => {
      it("starts normal with zero signals, and an unevaluated store stays so", async () => {
        await dueJobs(7);
        const stats = await store.stats();
        expect(stats.backlog).toBe(7);
        expect(stats.degradation).toEqual({
          level: "normal",
          since: 0,
          signals: { queueDepth: 0, lagMs: 0, failureRate: 0 },
        });
        const evaluated = await store.stats(policy());
        expect(evaluated.degradation).toEqual({
          level: "critical",
          since: evaluated.now,
          signals: { queueDepth: 7, lagMs: 0, failureRate: 0 },
        });
      });

      it("moves with hysteresis: up at a threshold, down to normal only below `normal`", async () => {
        const p = policy();
        const level = async (): Promise<DegradationLevel> =>
          (await store.stats(p)).degradation.level;
        expect(await level()).toBe("normal");

        const jobs = await dueJobs(3);
        // Delayed jobs are not backlog until their run time.
        await store.submitJob(jobSpec(), { delayMs: 60_000, recoverGraceMs: 60_000 });
        expect(await level()).toBe("normal");
        jobs.push(...(await dueJobs(1)));
        expect((await store.stats(p)).degradation.signals.queueDepth).toBe(4);
        expect(await level()).toBe("degraded");
        await cancel(jobs.splice(0, 1));
        expect(await level()).toBe("degraded"); // 3: above `normal`
        await cancel(jobs.splice(0, 1));
        expect(await level()).toBe("degraded"); // 2: not below `normal`
        await cancel(jobs.splice(0, 1));
        expect(await level()).toBe("normal"); // 1

        jobs.push(...(await dueJobs(5)));
        expect(await level()).toBe("critical"); // 6: straight from normal
        await cancel(jobs.splice(0, 1));
        expect(await level()).toBe("critical"); // 5: not below `degraded`
        await cancel(jobs.splice(0, 2));
        expect(await level()).toBe("degraded"); // 3
        jobs.push(...(await dueJobs(3)));
        expect(await level()).toBe("critical"); // 6
        await cancel(jobs.splice(0, 5));
        const back = await store.stats(p); // 1: straight to normal
        expect(back.degradation.level).toBe("normal");

        const changes = await store.events({ types: ["degradation.changed"], limit: 100 });
        expect(changes.events.map((e) => [e.from, e.to])).toEqual([
          ["normal", "degraded"],
          ["degraded", "normal"],
          ["normal", "critical"],
          ["critical", "degraded"],
          ["degraded", "critical"],
          ["critical", "normal"],
        ]);
        expect(changes.events.at(-1)?.at).toBe(back.now);
        expect(back.degradation.since).toBe(back.now);
      });

      it("debounces: a change must still hold `debounceMs` after it was first seen", async () => {
        const p = policy({ debounceMs: 400 });
        const jobs = await dueJobs(4);
        const s1 = await store.stats(p);
        expect(s1.degradation).toMatchObject({
          level: "normal",
          pending: { level: "degraded", since: s1.now },
        });
        // A spike shorter than the debounce changes nothing and clears the pending change.
        await cancel(jobs.splice(0, 3));
        const s2 = await store.stats(p);
        expect(s2.degradation.level).toBe("normal");
        expect(s2.degradation.pending).toBeUndefined();
        await sleep(450);
        expect((await store.stats(p)).degradation).toMatchObject({ level: "normal", since: 0 });

        jobs.push(...(await dueJobs(3)));
        const s3 = await store.stats(p);
        expect(s3.degradation.pending).toEqual({ level: "degraded", since: s3.now });
        const s4 = await store.stats(p);
        if (s4.now - s3.now < 400) {
          expect(s4.degradation.level).toBe("normal");
          expect(s4.degradation.pending).toEqual({ level: "degraded", since: s3.now });
        }
        // A different target restarts the wait.
        jobs.push(...(await dueJobs(2)));
        const s5 = await store.stats(p);
        if (s5.now - s3.now < 400) {
          expect(s5.degradation.pending).toEqual({ level: "critical", since: s5.now });
        }
        await cancel(jobs.splice(0, 2));
        const s6 = await store.stats(p);
        expect(s6.degradation.pending?.level ?? s6.degradation.level).toBe("degraded");

        await sleep(450);
        const s7 = await store.stats(p);
        expect(s7.degradation).toEqual({
          level: "degraded",
          since: s7.now,
          signals: { queueDepth: 4, lagMs: 0, failureRate: 0 },
        });

        // Back to normal only below `normal`, and only after the debounce.
        await cancel(jobs.splice(0, 1));
        expect((await store.stats(p)).degradation.pending).toBeUndefined(); // 3: stays
        await cancel(jobs.splice(0, 2));
        const s8 = await store.stats(p); // 1
        expect(s8.degradation).toMatchObject({
          level: "degraded",
          pending: { level: "normal", since: s8.now },
        });
        await sleep(450);
        const s9 = await store.stats(p);
        expect(s9.degradation.level).toBe("normal");

        const changes = await store.events({ types: ["degradation.changed"], limit: 100 });
        expect(changes.events.map((e) => [e.from, e.to, e.at])).toEqual([
          ["normal", "degraded", s7.now],
          ["degraded", "normal", s9.now],
        ]);
      });

      it("counts no lag before a submit, and with nothing due or running lag and failures hold no level", async () => {
        const p = policy({
          queueDepth: { normal: 50, degraded: 100, critical: 500 },
          lagMs: { normal: 10_000, degraded: 30_000, critical: 300_000 },
          failureRate: { normal: 0.25, degraded: 0.5, critical: 0.8 },
        });
        // A run time ten days before the submit: the job was not waiting then.
        const now = await store.now();
        const past = accepted(
          await store.submitJob(jobSpec(), { ...TIMING, runAt: now - 864_000_000 }),
        );
        expect((await store.beginRun(past.message!.job, 5_000)).kind).toBe("run");
        const afterPast = await store.stats(p);
        expect(afterPast.averages.lagMs).toBeLessThan(10_000);
        expect(afterPast.degradation.level).toBe("normal");
        const pastDone = await store.finishRun(past.job.id, 1, { ok: true, result: null });
        expect(pastDone.kind).toBe("ok");

        // Failed attempts raise the failure rate to critical while a job is due…
        for (let i = 0; i < 20; i++) {
          const failing = accepted(await store.submitJob(jobSpec(), TIMING));
          expect((await store.beginRun(failing.message!.job, 5_000)).kind).toBe("run");
          const error = { name: "Error", message: "down" };
          const done = await store.finishRun(failing.job.id, 1, { ok: false, error, final: true });
          expect(done.kind).toBe("ok");
        }
        const due = await dueJobs(1);
        const busy = await store.stats(p);
        expect(busy.averages.failureRate).toBeGreaterThan(0.8);
        expect(busy.degradation.level).toBe("critical");
        expect(busy.degradation.signals.failureRate).toBe(busy.averages.failureRate);
        // …and while one runs, with nothing due (workers keep up, handlers fail)…
        await cancel(due);
        const running = accepted(await store.submitJob(jobSpec(), TIMING));
        expect((await store.beginRun(running.message!.job, 5_000)).kind).toBe("run");
        const working = await store.stats(p);
        expect(working.backlog).toBe(0);
        expect(working.degradation.level).toBe("critical");
        // …and with nothing due or running no attempt can lower it: judged 0, the level ends.
        const ok = await store.finishRun(running.job.id, 1, { ok: true, result: null });
        expect(ok.kind).toBe("ok");
        const idle = await store.stats(p);
        expect(idle.averages.failureRate).toBeCloseTo(0.9 * busy.averages.failureRate, 9);
        expect(idle.degradation).toEqual({
          level: "normal",
          since: idle.now,
          signals: { queueDepth: 0, lagMs: 0, failureRate: 0 },
        });
      });

      it("acts on submit: degraded delays, critical rejects or delays as configured", async () => {
        const p = policy();
        const normal = await submitWith(
          { degradation: p },
          { delayMs: 60_000, recoverGraceMs: 1_000 },
        );
        expect(normal.degradation).toEqual({ level: "normal", delayedMs: 0 });
        expect(normal.job.runAt).toBe(normal.job.createdAt + 60_000);

        const backlog = await dueJobs(4);
        const degraded = await submitWith(
          { degradation: p },
          { delayMs: 500, recoverGraceMs: 1_000 },
        );
        expect(degraded.degradation).toEqual({ level: "degraded", delayedMs: 1_000 });
        const runAt = degraded.job.createdAt + 1_500;
        expect(degraded.job.runAt).toBe(runAt);
        expect(degraded.message).toMatchObject({ notBefore: runAt, recoverAt: runAt + 1_000 });
        const at = await submitWith({ degradation: p }, { ...TIMING, runAt: 5_000_000_000_000 });
        expect(at.job.runAt).toBe(5_000_000_000_000 + 1_000);

        backlog.push(...(await dueJobs(2)));
        const before = await store.stats();
        const spec = jobSpec();
        const rejected = await store.submitJob(spec, TIMING, { degradation: p });
        expect(rejected).toEqual({
          denied: { kind: "overloaded", level: "critical", retryAfterMs: 30_000 },
        });
        expect(await store.getJob(spec.id)).toBeNull();
        const after = await store.stats();
        expect(after.totals).toEqual(before.totals);
        expect(after.outbox).toBe(before.outbox);

        const delayed = await submitWith(
          { degradation: policy({ critical: "delay" }) },
          { delayMs: 0, recoverGraceMs: 1_000 },
        );
        expect(delayed.degradation).toEqual({ level: "critical", delayedMs: 5_000 });
        expect(delayed.job.runAt).toBe(delayed.job.createdAt + 5_000);
      });

      it("a refused submit counts no quota; a replay is answered before the controller", async () => {
        const p = policy();
        const q = quota([60_000, 2]);
        const keyed = jobSpec({ idempotencyKey: uid("order") });
        const original = accepted(
          await store.submitJob(
            keyed,
            { delayMs: 60_000, recoverGraceMs: 1_000 },
            {
              degradation: p,
              quota: q,
            },
          ),
        );
        expect(original.quota?.remaining).toBe(1);

        const backlog = await dueJobs(6);
        const replay = accepted(
          await store.submitJob({ ...keyed, id: uid("job") }, TIMING, { degradation: p, quota: q }),
        );
        expect(replay).toEqual({ job: original.job, replayed: true });

        const refused = await store.submitJob(jobSpec(), TIMING, { degradation: p, quota: q });
        expect(refused).toMatchObject({ denied: { kind: "overloaded" } });

        await cancel(backlog);
        const admitted = await submitWith({ degradation: p, quota: q });
        expect(admitted.degradation).toEqual({ level: "normal", delayedMs: 0 });
        expect(admitted.quota?.remaining).toBe(0);
      });

      it("is evaluated by a leader tick, never by an idle one", async () => {
        const p = policy();
        await dueJobs(4);
        const idle = await store.beginTick(tickOpts({ degradation: p }));
        expect(idle.kind).toBe("idle");
        expect((await store.stats()).degradation.level).toBe("normal");

        await store.putSchedule(scheduleRecord({ nextRunAt: (await store.now()) - 1_000 }));
        const leader = asLeader(await store.beginTick(tickOpts({ degradation: p })));
        expect(leader.degradation).toBe("degraded");
        await store.endTick(leader.token, []);
        const stats = await store.stats();
        expect(stats.degradation).toMatchObject({ level: "degraded", since: leader.now });

        // Without a policy the tick reports the stored level.
        const again = asLeader(await store.beginTick(tickOpts()));
        expect(again.degradation).toBe("degraded");
        await store.endTick(again.token, []);
      });
    });
  });
}
