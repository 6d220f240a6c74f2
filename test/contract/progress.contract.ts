/**
 * @module
 * Part of the Store contract (`store.contract.ts`): a running attempt's progress and log, fenced
 * by its attempt number, and cancelling a running job (`cancelJob` → `requested`, then
 * `finishRun` or a lapsed lease ends it `cancelled`).
 */
import { describe, expect, it } from "vitest";
import { MAX_LOG_ENTRIES, MAX_PROGRESS_BYTES, type Store } from "../../src/store/port.ts";
import { type MakeContractStore, sleep } from "./fixtures.ts";
import { useContractStore } from "./harness.ts";

/** Resolves once `check` holds; fails the test after `ms`. */
async function eventually(check: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await sleep(20);
  }
}

const entry = (message: string, fields?: Record<string, unknown>) =>
  JSON.stringify({ level: "info", message, ...(fields ? { fields } : {}) });

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describeProgressContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const { submitted, run } = useContractStore(make, (made) => {
      store = made;
    });

    /** Waits until the store's clock is past the run lease of a run begun at `startedAt`. */
    const leaseLapsed = (startedAt: number, leaseMs: number) =>
      eventually(async () => (await store.now()) > startedAt + leaseMs);

    describe("reportProgress", () => {
      it("replaces the job's progress, only from the attempt holding the run lease", async () => {
        const spec = await submitted();
        expect(await store.reportProgress(spec.id, 1, "1")).toEqual({ kind: "stale" }); // queued
        await run(spec);
        const before = await store.now();
        expect(await store.reportProgress(spec.id, 1, '{"done":1,"total":3}')).toEqual({
          kind: "ok",
          cancelRequested: false,
        });
        const after = await store.now();
        let job = await store.getJob(spec.id);
        expect(job?.progress?.value).toEqual({ done: 1, total: 3 });
        expect(job?.progress?.at).toBeGreaterThanOrEqual(before);
        expect(job?.progress?.at).toBeLessThanOrEqual(after);
        await store.reportProgress(spec.id, 1, "0.5");
        job = await store.getJob(spec.id);
        expect(job?.progress?.value).toBe(0.5);

        // Another attempt's write is refused; nothing changes.
        expect(await store.reportProgress(spec.id, 2, "9")).toEqual({ kind: "stale" });
        expect(await store.reportProgress("no-such-job", 1, "9")).toEqual({ kind: "stale" });
        // Kept after the job finishes; a finished attempt writes no more.
        await store.finishRun(spec.id, 1, { ok: true, result: null });
        expect(await store.reportProgress(spec.id, 1, "9")).toEqual({ kind: "stale" });
        job = await store.getJob(spec.id);
        expect(job).toMatchObject({ status: "succeeded", progress: { value: 0.5 } });
      });

      it("refuses an attempt whose run lease ran out, and a value over 4 KiB", async () => {
        const spec = await submitted();
        const { job } = await run(spec, 300);
        const big = JSON.stringify("x".repeat(MAX_PROGRESS_BYTES));
        await expect(store.reportProgress(spec.id, 1, big)).rejects.toThrow(RangeError);
        expect((await store.getJob(spec.id))?.progress).toBeUndefined();
        await leaseLapsed(job.startedAt ?? 0, 300);
        expect(await store.reportProgress(spec.id, 1, "1")).toEqual({ kind: "stale" });
        expect((await store.getJob(spec.id))?.progress).toBeUndefined();
      });
    });

    describe("appendLog and readLogs", () => {
      it("stamps entries, pages them oldest first, and refuses a stale attempt", async () => {
        const spec = await submitted();
        expect(await store.readLogs(spec.id, { limit: 10 })).toEqual({ items: [] });
        expect(await store.readLogs("no-such-job", { limit: 10 })).toBeNull();
        await run(spec);
        const before = await store.now();
        for (const [i, fields] of [[1, { n: 1 }], [2], [3]] as const) {
          expect(await store.appendLog(spec.id, 1, entry(`line ${i}`, fields))).toEqual({
            kind: "ok",
            cancelRequested: false,
          });
        }
        expect(await store.appendLog(spec.id, 2, entry("stale"))).toEqual({ kind: "stale" });
        const first = await store.readLogs(spec.id, { limit: 2 });
        expect(first?.items).toMatchObject([
          { attempt: 1, level: "info", message: "line 1", fields: { n: 1 } },
          { attempt: 1, level: "info", message: "line 2" },
        ]);
        expect(first?.items[1]).not.toHaveProperty("fields");
        expect(first?.items[0]?.at).toBeGreaterThanOrEqual(before);
        expect(first?.cursor).toEqual(expect.any(String));
        const second = await store.readLogs(spec.id, { limit: 2, cursor: first?.cursor });
        expect(second).toEqual({ items: [expect.objectContaining({ message: "line 3" })] });
        const big = entry("y".repeat(3_000));
        await expect(store.appendLog(spec.id, 1, big)).rejects.toThrow(RangeError);
        expect((await store.readLogs(spec.id, { limit: 100 }))?.items).toHaveLength(3);
      });

      it(`keeps the last ${MAX_LOG_ENTRIES} entries`, async () => {
        const spec = await submitted();
        await run(spec, 60_000);
        for (let i = 1; i <= MAX_LOG_ENTRIES + 1; i++) {
          await store.appendLog(spec.id, 1, entry(`line ${i}`));
        }
        const page = await store.readLogs(spec.id, { limit: 100 });
        expect(page?.items).toHaveLength(MAX_LOG_ENTRIES);
        expect(page?.items[0]?.message).toBe("line 2");
        expect(page?.items.at(-1)?.message).toBe(`line ${MAX_LOG_ENTRIES + 1}`);
        expect(page?.cursor).toBeUndefined();
        const tail = await store.readLogs(spec.id, { limit: 60, cursor: "1" });
        expect(tail?.items[0]?.message).toBe("line 2");
        expect(tail?.cursor).toEqual(expect.any(String));
      });

      it("expires with the job", async () => {
        const spec = await submitted();
        await run(spec);
        await store.appendLog(spec.id, 1, entry("bye"));
        await store.reportProgress(spec.id, 1, "1");
        await store.finishRun(spec.id, 1, { ok: true, result: null });
        // CONTRACT_RETENTION keeps a finished job 1.5 s.
        await eventually(async () => (await store.getJob(spec.id)) === null);
        expect(await store.readLogs(spec.id, { limit: 10 })).toBeNull();
      });
    });

    describe("cancelling a running job", () => {
      it("is requested, seen by the attempt, and recorded cancelled by its finishRun", async () => {
        const spec = await submitted({ retries: 3 });
        await run(spec);
        expect(await store.cancelRequested(spec.id, 1)).toBe(false);
        const asked = await store.cancelJob(spec.id);
        expect(asked).toMatchObject({
          kind: "requested",
          job: { status: "running", cancelRequested: true },
        });
        expect(await store.cancelRequested(spec.id, 1)).toBe(true);
        expect(await store.cancelRequested(spec.id, 2)).toBe(false);
        expect(await store.reportProgress(spec.id, 1, "1")).toEqual({
          kind: "ok",
          cancelRequested: true,
        });
        expect(await store.appendLog(spec.id, 1, entry("x"))).toEqual({
          kind: "ok",
          cancelRequested: true,
        });
        const totals = (await store.stats()).totals;
        // A stale attempt cannot end it; the attempt's failure does, final and not a failure.
        const error = { name: "CancelledError", message: "cancelled" };
        const stale = await store.finishRun(spec.id, 2, { ok: false, error, final: false });
        expect(stale.kind).toBe("stale");
        const done = await store.finishRun(spec.id, 1, { ok: false, error, final: false });
        expect(done).toMatchObject({
          kind: "ok",
          job: { status: "cancelled", error, cancelRequested: true },
        });
        const stats = await store.stats();
        expect(stats.totals.cancelled).toBe(totals.cancelled + 1);
        expect(stats.totals.failed).toBe(totals.failed);
        expect(stats.jobs.running).toBe(0);
        expect(stats.jobs.failed).toBe(0);
        // Not retried: a redelivery finds it final.
        expect((await store.beginRun(spec, 5_000)).kind).toBe("final");
        expect(await store.cancelRequested(spec.id, 1)).toBe(false);
      });

      it("ends cancelled once the attempt's run lease lapses", async () => {
        const spec = await submitted();
        const { job } = await run(spec, 300);
        expect((await store.cancelJob(spec.id)).kind).toBe("requested");
        await leaseLapsed(job.startedAt ?? 0, 300);
        const begun = await store.beginRun(spec, 5_000);
        expect(begun).toMatchObject({ kind: "final", job: { status: "cancelled" } });
        expect((await store.stats()).jobs.running).toBe(0);
        // The lapsed attempt's late answer changes nothing.
        const late = await store.finishRun(spec.id, 1, { ok: true, result: 1 });
        expect(late.kind).toBe("stale");
      });

      it("cancels at once a running job whose lease nobody holds", async () => {
        const spec = await submitted();
        const { job } = await run(spec, 300);
        await leaseLapsed(job.startedAt ?? 0, 300);
        const cancelled = await store.cancelJob(spec.id);
        expect(cancelled).toMatchObject({ kind: "ok", job: { status: "cancelled" } });
        expect((await store.stats()).jobs.running).toBe(0);
      });
    });
  });
}
