/**
 * @module
 * The admission contract: quotas ({@link QuotaCheck}, {@link QuotaState}), the degradation
 * controller ({@link DegradationPolicy}) and schedule holds (`ScheduleCommit.dueAt`), as
 * documented in `src/store/port.ts`. Real time (short windows and real sleeps, never more than
 * ~0.6 s in a test), because the Redis store judges time by Redis's clock; every time a test
 * reasons about comes from the store (`now()`, a record's `createdAt`, `stats().now`).
 *
 * @example
 * describeAdmissionContract("memory", async (options) => ({
 *   store: new MemoryStore({ retention: CONTRACT_RETENTION, ...options }),
 *   cleanup: async () => {},
 * }));
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JobRecord, ScheduleRecord } from "../../src/core/model.ts";
import type {
  Admission,
  BeginTickOptions,
  BeginTickResult,
  DegradationLevel,
  QuotaCheck,
  QuotaState,
  Store,
  SubmitResult,
} from "../../src/store/port.ts";
import {
  accepted,
  jobSpec,
  type MakeContractStore,
  scheduleRecord,
  sleep,
  uid,
} from "./fixtures.ts";

type Policy = NonNullable<Admission["degradation"]>;

/** Thresholds on queue depth only (lag and failure rate stay at 0 here). */
function policy(overrides: Partial<Policy> = {}): Policy {
  return {
    queueDepth: { normal: 2, degraded: 4, critical: 6 },
    lagMs: { normal: 60_000, degraded: 120_000, critical: Number.POSITIVE_INFINITY },
    failureRate: { normal: 0.25, degraded: 0.5, critical: Number.POSITIVE_INFINITY },
    debounceMs: 0,
    degradedDelayMs: 1_000,
    critical: "reject",
    criticalDelayMs: 5_000,
    retryAfterMs: 30_000,
    ...overrides,
  };
}

/** A quota on a fresh key with `[windowMs, limit]` windows. */
function quota(...windows: [number, number][]): QuotaCheck {
  return { key: uid("quota"), windows: windows.map(([windowMs, limit]) => ({ windowMs, limit })) };
}

/** The start of the bucket holding `t` in a window of `windowMs` (60 buckets, ≥ 1 ms). */
function bucketStart(t: number, windowMs: number): number {
  const width = Math.max(1, Math.floor(windowMs / 60));
  return Math.floor(t / width) * width;
}

const TIMING = { delayMs: 0, recoverGraceMs: 60_000 };

/** Registers the admission contract for one Store implementation. */
export function describeAdmissionContract(name: string, make: MakeContractStore): void {
  describe(`Admission contract: ${name}`, () => {
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

    /** `n` plain submits due 1 s ago: the backlog grows by `n`. */
    async function dueJobs(n: number): Promise<JobRecord[]> {
      const now = await store.now();
      const jobs: JobRecord[] = [];
      for (let i = 0; i < n; i++) {
        const res = accepted(await store.submitJob(jobSpec(), { runAt: now - 1_000, ...TIMING }));
        jobs.push(res.job);
      }
      return jobs;
    }

    async function cancel(jobs: JobRecord[]): Promise<void> {
      for (const job of jobs) expect((await store.cancelJob(job.id)).kind).toBe("ok");
    }

    async function submitWith(
      admission: Admission,
      timing: { runAt?: number; delayMs: number; recoverGraceMs: number } = TIMING,
    ): Promise<SubmitResult> {
      return accepted(await store.submitJob(jobSpec(), timing, admission));
    }

    const tickOpts = (overrides: Partial<BeginTickOptions> = {}): BeginTickOptions => ({
      leaseMs: 5_000,
      horizonMs: 0,
      limit: 10,
      recoverLimit: 100,
      recoverGraceMs: 0,
      ...overrides,
    });

    // ── quotas ─────────────────────────────────────────────────────────────

    describe("quotas", () => {
      it("admit up to the limit, refuse the next with nothing written, and slide by buckets", async () => {
        const q = quota([1_200, 3]);
        const admitted: SubmitResult[] = [];
        for (let i = 0; i < 3; i++) admitted.push(await submitWith({ quota: q }));
        const first = bucketStart(admitted[0]!.job.createdAt, 1_200);
        admitted.forEach((res, i) => {
          // The oldest counted bucket (the first write's) leaves at first + windowMs.
          expect(res.quota).toEqual({
            limit: 3,
            remaining: 2 - i,
            windowMs: 1_200,
            resetMs: first + 1_200 - res.job.createdAt,
          });
        });

        const statsBefore = await store.stats();
        const spec = jobSpec();
        const t0 = await store.now();
        const denied = await store.submitJob(spec, TIMING, { quota: q });
        const t1 = await store.now();
        expect(denied).toEqual({
          denied: {
            kind: "quota",
            quota: { limit: 3, remaining: 0, windowMs: 1_200, resetMs: expect.any(Number) },
          },
        });
        if (!("denied" in denied) || denied.denied.kind !== "quota") throw new Error("unreachable");
        const { resetMs } = denied.denied.quota;
        // Retry-After: when the first bucket leaves, the count drops below the limit.
        expectBetween(resetMs, first + 1_200 - t1, first + 1_200 - t0);

        // Nothing written, nothing counted.
        expect(await store.getJob(spec.id)).toBeNull();
        const statsAfter = await store.stats();
        expect(statsAfter.totals).toEqual(statsBefore.totals);
        expect(statsAfter.jobs).toEqual(statsBefore.jobs);
        expect(statsAfter.outbox).toBe(statsBefore.outbox);
        const created = await store.events({ types: ["job.created"], limit: 100 });
        expect(created.events.map((e) => e.jobId)).toEqual(admitted.map((r) => r.job.id));

        // After resetMs the window has slid past the first bucket: admitted again.
        await sleep(resetMs + 5);
        const later = await submitWith({ quota: q });
        const stillCounted = admitted.filter(
          (r) => bucketStart(r.job.createdAt, 1_200) > later.job.createdAt - 1_200,
        );
        expect(stillCounted.length).toBeLessThan(3);
        expect(later.quota).toMatchObject({ limit: 3, remaining: 3 - stillCounted.length - 1 });
      });

      it("check every window; report the tightest when admitted and the longest wait when refused", async () => {
        // Admitted: the window with the fewest writes left (here the long one).
        const loose = quota([600, 5], [60_000, 2]);
        const one = await submitWith({ quota: loose });
        const c = one.job.createdAt;
        expect(one.quota).toEqual({
          limit: 2,
          remaining: 1,
          windowMs: 60_000,
          resetMs: bucketStart(c, 60_000) + 60_000 - c,
        });

        const q = quota([600, 2], [60_000, 3]);
        const a1 = await submitWith({ quota: q });
        const a2 = await submitWith({ quota: q });
        const short1 = bucketStart(a1.job.createdAt, 600);
        // Ties in `remaining` go to the shorter window.
        expect(a1.quota).toEqual({
          limit: 2,
          remaining: 1,
          windowMs: 600,
          resetMs: short1 + 600 - a1.job.createdAt,
        });
        expect(a2.quota).toEqual({
          limit: 2,
          remaining: 0,
          windowMs: 600,
          resetMs: short1 + 600 - a2.job.createdAt,
        });

        // Refused by the short window only.
        const t0 = await store.now();
        const refused = await store.submitJob(jobSpec(), TIMING, { quota: q });
        const t1 = await store.now();
        const state = deniedQuota(refused);
        expect(state).toMatchObject({ limit: 2, remaining: 0, windowMs: 600 });
        expectBetween(state.resetMs, short1 + 600 - t1, short1 + 600 - t0);

        // Once the short window slid, the long one still holds a1 and a2 (not the refused one).
        await sleep(state.resetMs + 5);
        const a3 = await submitWith({ quota: q });
        const c3 = a3.job.createdAt;
        const shortLive = [a1, a2].filter(
          (r) => bucketStart(r.job.createdAt, 600) > c3 - 600,
        ).length;
        const shortLeft = 2 - shortLive - 1;
        const long1 = bucketStart(a1.job.createdAt, 60_000);
        expect(a3.quota).toEqual(
          shortLeft <= 0
            ? {
                limit: 2,
                remaining: 0,
                windowMs: 600,
                resetMs:
                  Math.min(
                    ...[a1, a2, a3]
                      .map((r) => bucketStart(r.job.createdAt, 600))
                      .filter((b) => b > c3 - 600),
                  ) +
                  600 -
                  c3,
              }
            : { limit: 3, remaining: 0, windowMs: 60_000, resetMs: long1 + 60_000 - c3 },
        );

        // Now the long window refuses too: the answer is its (longer) wait.
        const u0 = await store.now();
        const longRefused = deniedQuota(await store.submitJob(jobSpec(), TIMING, { quota: q }));
        const u1 = await store.now();
        expect(longRefused).toMatchObject({ limit: 3, remaining: 0, windowMs: 60_000 });
        expectBetween(longRefused.resetMs, long1 + 60_000 - u1, long1 + 60_000 - u0);
      });

      it("do not count an idempotent replay; keys are independent", async () => {
        const q = quota([60_000, 2]);
        const first = await submitWith({ quota: q }, TIMING);
        expect(first.quota?.remaining).toBe(1);
        const keyed = jobSpec({ idempotencyKey: uid("order") });
        const original = accepted(await store.submitJob(keyed, TIMING, { quota: q }));
        expect(original.quota?.remaining).toBe(0);

        const replay = accepted(
          await store.submitJob({ ...keyed, id: uid("job") }, TIMING, { quota: q }),
        );
        expect(replay.replayed).toBe(true);
        expect(replay.job).toEqual(original.job);
        expect(replay.quota).toBeUndefined();
        expect(replay.message).toBeUndefined();

        expect(deniedQuota(await store.submitJob(jobSpec(), TIMING, { quota: q })).limit).toBe(2);
        const other = await submitWith({ quota: { ...quota([60_000, 2]) } });
        expect(other.quota?.remaining).toBe(1);
        expect((await store.stats()).totals.submitted).toBe(3);
      });

      it("guard schedule writes: counted only when written, a conflict is judged first", async () => {
        const q = quota([60_000, 1]);
        const s1 = scheduleRecord();
        const t0 = await store.now();
        const ok = await store.putSchedule(s1, undefined, { quota: q });
        const t1 = await store.now();
        if (ok.kind !== "ok") throw new Error(`expected ok, got ${ok.kind}`);
        expect(ok.quota).toMatchObject({ limit: 1, remaining: 0, windowMs: 60_000 });
        const b = ok.quota?.resetMs ?? 0;
        expect(b).toBeGreaterThan(0);
        expect(b).toBeLessThanOrEqual(60_000);
        expectBetween(
          b,
          bucketStart(t0, 60_000) + 60_000 - t1,
          bucketStart(t1, 60_000) + 60_000 - t0,
        );

        const s2 = scheduleRecord();
        const denied = await store.putSchedule(s2, undefined, { quota: q });
        expect(denied).toEqual({
          kind: "denied",
          denied: {
            kind: "quota",
            quota: { limit: 1, remaining: 0, windowMs: 60_000, resetMs: expect.any(Number) },
          },
        });
        expect(await store.getSchedule(s2.id)).toBeNull();
        expect((await store.listSchedules({ limit: 10 })).items.map((s) => s.id)).toEqual([s1.id]);

        // A stale rev is a conflict even when the quota is spent.
        const stale = await store.putSchedule(ok.schedule, ok.schedule.rev + 7, { quota: q });
        expect(stale.kind).toBe("conflict");

        // A conflict counts nothing.
        const q2 = quota([60_000, 1]);
        expect((await store.putSchedule(ok.schedule, 999, { quota: q2 })).kind).toBe("conflict");
        const written = await store.putSchedule(ok.schedule, ok.schedule.rev, { quota: q2 });
        expect(written.kind).toBe("ok");
        if (written.kind === "ok") expect(written.quota?.remaining).toBe(0);
      });
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

function deniedQuota(result: SubmitResult | { denied: unknown }): QuotaState {
  if (!("denied" in result)) throw new Error("expected a denied submit");
  const denied = result.denied as { kind: string; quota?: QuotaState };
  if (denied.kind !== "quota" || !denied.quota) throw new Error(`denied by ${denied.kind}`);
  return denied.quota;
}

function asLeader(res: BeginTickResult): Extract<BeginTickResult, { kind: "leader" }> {
  if (res.kind !== "leader") throw new Error(`expected a leader tick, got ${res.kind}`);
  return res;
}

function expectBetween(value: number, lo: number, hi: number): void {
  expect(value).toBeGreaterThanOrEqual(lo);
  expect(value).toBeLessThanOrEqual(hi);
}
