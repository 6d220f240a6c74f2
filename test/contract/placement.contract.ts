/**
 * @module
 * Part of the Store contract (`store.contract.ts`): placement (docs/adr/0017-placement.md). A
 * node's refusal is recorded on a waiting job and counted, never on a running or finished one;
 * the job's placement travels with its spec; the node that begins a run is recorded on the job.
 */
import { describe, expect, it } from "vitest";
import type { JobSpec } from "../../src/core/model.ts";
import type { Store } from "../../src/store/port.ts";
import { fullJobSpec, type MakeContractStore, occurrenceSpec, scheduleRecord } from "./fixtures.ts";
import { asRun, useContractStore } from "./harness.ts";

const gpu = { capabilities: { gpu: "nvidia" } };
const refusal = { node: "cpu-1", reason: "job needs capability gpu=nvidia" };

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describePlacementContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const { submitted, submitRecoverable, recoverable } = useContractStore(make, (made) => {
      store = made;
    });
    const refuse = (spec: JobSpec) => {
      if (!store.refusePlacement) throw new Error("the store has no refusePlacement");
      return store.refusePlacement(spec, refusal, 60_000);
    };
    const unplaced = async () => (await store.stats()).totals.unplaced;

    describe("placement", () => {
      it("a job's placement is stored with it and carried by its message", async () => {
        const spec = await submitted({ placement: { group: "gpu", ...gpu, notNodes: ["n-2"] } });
        expect(spec.placement).toEqual({ group: "gpu", ...gpu, notNodes: ["n-2"] });
        expect((await store.getJob(spec.id))?.placement).toEqual(spec.placement);
      });

      it("a refusal of a waiting job is recorded on it (the last wins) and counted; nothing else changes", async () => {
        const spec = await submitted({ placement: gpu });
        const before = await store.getJob(spec.id);
        const t0 = await store.now();
        expect(await refuse(spec)).toBe("queued");
        await store.refusePlacement?.(spec, { node: "cpu-2", reason: "again" }, 60_000);
        const after = await store.getJob(spec.id);
        expect(after?.refused).toEqual({ node: "cpu-2", reason: "again", at: expect.any(Number) });
        expect(after?.refused?.at).toBeGreaterThanOrEqual(t0);
        const { refused: _r, ...rest } = after as NonNullable<typeof after>;
        expect(rest).toEqual(before);
        expect(await unplaced()).toBe(2);
      });

      it("a refused job is alive: its outbox entry is not recovered for reapAfterMs", async () => {
        const { message } = await submitRecoverable({ placement: gpu });
        const job = message?.job as JobSpec;
        expect(await refuse(job)).toBe("queued");
        expect((await recoverable()).map((m) => m.id)).not.toContain(job.id);
      });

      it("a running or finished job is left as it is; an expired one is not brought back", async () => {
        const spec = await submitted({ placement: gpu });
        asRun(await store.beginRun(spec, 5_000));
        expect(await refuse(spec)).toBe("running");
        expect((await store.getJob(spec.id))?.refused).toBeUndefined();
        await store.finishRun(spec.id, 1, { ok: true, result: 1 });
        expect(await refuse(spec)).toBe("succeeded");
        expect((await store.getJob(spec.id))?.refused).toBeUndefined();
        // A submitted job that expired is not brought back, and nothing is counted.
        const gone = fullJobSpec({ id: `j_${"7".repeat(21)}` });
        expect(await refuse(gone)).toBeNull();
        expect(await store.getJob(gone.id)).toBeNull();
        expect(await unplaced()).toBe(0);
      });

      it("a missing occurrence is created by the refusal, so the refusal shows on it", async () => {
        const schedule = {
          id: "acme:reports",
          tenant: "acme",
          handler: "report",
          overlap: "allow" as const,
        };
        await store.putSchedule(scheduleRecord(schedule));
        const spec = occurrenceSpec(schedule, 1_700_000_060_000, { placement: gpu });
        expect(await refuse(spec)).toBe("queued");
        expect(await store.getJob(spec.id)).toMatchObject({
          status: "queued",
          attempts: 0,
          scheduleId: schedule.id,
          placement: gpu,
          refused: { node: "cpu-1", reason: refusal.reason },
        });
        expect(await unplaced()).toBe(1);
        // …and its first run begins as any occurrence's would.
        expect(asRun(await store.beginRun(spec, 5_000)).attempt).toBe(1);
      });

      it("an occurrence not begun when its schedule is paused or deleted ends skipped at its refusal, as at its begin", async () => {
        const s = scheduleRecord({ overlap: "allow" });
        const put = await store.putSchedule(s);
        if (put.kind !== "ok") throw new Error("put refused");
        const waiting = occurrenceSpec(s, 1_800_000_000_000, { placement: gpu });
        const retried = occurrenceSpec(s, 1_800_000_060_000, { placement: gpu });
        expect(await refuse(waiting)).toBe("queued");
        // An occurrence whose attempt began before the pause keeps its retries.
        asRun(await store.beginRun(retried, 5_000));
        await store.finishRun(retried.id, 1, {
          ok: false,
          final: false,
          error: { name: "E", message: "x" },
        });
        const paused = await store.putSchedule(
          { ...put.schedule, status: "paused" },
          put.schedule.rev,
        );
        if (paused.kind !== "ok") throw new Error("pause refused");
        const before = (await store.stats()).totals;

        const t0 = await store.now();
        expect(await refuse(waiting)).toBe("skipped");
        const t1 = await store.now();
        const skipped = await store.getJob(waiting.id);
        expect(skipped).toMatchObject({ status: "skipped", attempts: 0 });
        expect(skipped?.finishedAt).toBeGreaterThanOrEqual(t0);
        expect(skipped?.finishedAt).toBeLessThanOrEqual(t1);
        expect(await refuse(retried)).toBe("failed");
        const after = (await store.stats()).totals;
        expect(after.skipped).toBe(before.skipped + 1);
        expect(after.unplaced).toBe(before.unplaced + 1);
        // Refused again, or begun: it stays skipped.
        expect(await refuse(waiting)).toBe("skipped");
        expect((await store.beginRun(waiting, 5_000)).kind).toBe("final");
        expect((await store.stats()).totals.skipped).toBe(before.skipped + 1);

        // Deleted: an occurrence it dispatched and no node took is created skipped.
        expect(await store.deleteSchedule(s.id)).toBe(true);
        const later = occurrenceSpec(s, 1_800_000_120_000, { placement: gpu });
        expect(await refuse(later)).toBe("skipped");
        expect(await store.getJob(later.id)).toMatchObject({ status: "skipped", attempts: 0 });
        expect((await store.stats()).totals.skipped).toBe(before.skipped + 2);
      });

      it("an oversized reason is cut to 200 characters", async () => {
        const spec = await submitted();
        await store.refusePlacement?.(spec, { node: "n", reason: "x".repeat(5_000) }, 60_000);
        expect((await store.getJob(spec.id))?.refused?.reason).toHaveLength(200);
        // Never inside a surrogate pair.
        await store.refusePlacement?.(spec, { node: "n", reason: `${"x".repeat(199)}😀` }, 60_000);
        expect((await store.getJob(spec.id))?.refused?.reason).toBe("x".repeat(199));
      });

      it("the node that begins a run is recorded; a later attempt by an unnamed caller drops it", async () => {
        const spec = await submitted({ retries: 3 });
        const first = asRun(
          await store.beginRun(spec, 5_000, undefined, undefined, undefined, undefined, "gpu-1"),
        );
        expect(first.job.node).toBe("gpu-1");
        expect((await store.getJob(spec.id))?.node).toBe("gpu-1");
        await store.finishRun(spec.id, 1, {
          ok: false,
          final: false,
          error: { name: "E", message: "m" },
        });
        const second = asRun(
          await store.beginRun(spec, 5_000, undefined, undefined, undefined, undefined, "gpu-2"),
        );
        expect(second.job.node).toBe("gpu-2");
        await store.finishRun(spec.id, 2, {
          ok: false,
          final: false,
          error: { name: "E", message: "m" },
        });
        const third = asRun(await store.beginRun(spec, 5_000));
        expect(third.job.node).toBeUndefined();
        expect((await store.getJob(spec.id))?.node).toBeUndefined();
      });
    });
  });
}
