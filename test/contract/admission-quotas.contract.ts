/**
 * @module
 * Part of the admission contract (`admission.contract.ts`): quotas (`QuotaCheck`,
 * `QuotaState`) — admitted up to the limit, sliding by buckets, every window checked,
 * replays not counted, schedule writes guarded.
 */
import { describe, expect, it } from "vitest";
import type { Store, SubmitResult } from "../../src/store/port.ts";
import {
  bucketStart,
  deniedQuota,
  expectBetween,
  quota,
  TIMING,
  useAdmissionStore,
} from "./admission-harness.ts";
import {
  accepted,
  jobSpec,
  type MakeContractStore,
  scheduleRecord,
  sleep,
  uid,
} from "./fixtures.ts";

/** Registers this part of the admission contract for one implementation. */
export function describeQuotaContract(name: string, make: MakeContractStore): void {
  describe(`Admission contract: ${name}`, () => {
    let store: Store;
    const { submitWith } = useAdmissionStore(make, (made) => {
      store = made;
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
  });
}
