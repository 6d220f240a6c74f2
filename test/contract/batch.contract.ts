/**
 * @module
 * Part of the Store contract (`store.contract.ts`): batch submit (docs/adr/0020-batch-submit.md).
 * The store's `submitJobs` (one result per item, in order, each as `submitJob` answers it; the
 * quota admitted up to its limit) and the acceptance of `Broker.submitMany` on the store: 1,000
 * jobs with 3 bad ones store 997 and answer 3 item-level 422s; the same batch again (idempotency
 * keys) answers 997 replays and stores nothing new.
 */
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { MAX_BATCH_JOBS } from "../../src/core/batch.ts";
import { Broker } from "../../src/engine/broker.ts";
import { silentLogger } from "../../src/engine/logger.ts";
import { resolveOptions } from "../../src/engine/options.ts";
import { MAX_SUBMIT_CHUNK, type Store, type SubmitResult } from "../../src/store/port.ts";
import { recordingTransport } from "../support/recording-transport.ts";
import { quota } from "./admission-harness.ts";
import { CONTRACT_RETENTION, jobSpec, type MakeContractStore, uid } from "./fixtures.ts";

/** Long enough that the keys of the first batch are still known when it is sent again. */
const RETENTION = { ...CONTRACT_RETENTION, jobMs: 120_000, idempotencyMs: 120_000 };
const TIMING = { recoverGraceMs: 60_000 };

const handlers = {
  "email.send": { input: z.object({ to: z.string() }), run: () => "sent" },
  noop: { run: () => null },
};

function accepted(result: unknown): SubmitResult {
  if (typeof result !== "object" || result === null || !("replayed" in result)) {
    throw new Error(`not accepted: ${JSON.stringify(result)}`);
  }
  return result as SubmitResult;
}

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describeBatchContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}: batch submit`, () => {
    let store: Store;
    let cleanup: () => Promise<void> = async () => {};
    const fresh = async () => {
      await cleanup();
      const made = await make({ retention: RETENTION });
      store = made.store;
      cleanup = made.cleanup;
      return store;
    };
    const submitJobs = (...args: Parameters<NonNullable<Store["submitJobs"]>>) => {
      if (!store.submitJobs) throw new Error(`${name} has no submitJobs`);
      return store.submitJobs(...args);
    };

    it("answers each item as submitJob would, in order; a key repeated in the call is a replay", async () => {
      await fresh();
      try {
        const [a, b, c] = [jobSpec(), jobSpec({ idempotencyKey: "k1" }), jobSpec()];
        const repeat = jobSpec({ idempotencyKey: "k1" });
        const t0 = await store.now();
        const results = await submitJobs(
          [
            { job: a, delayMs: 5_000 },
            { job: b, delayMs: 0 },
            { job: repeat, delayMs: 0 },
            { job: c, runAt: t0 - 1, delayMs: 9_999 },
          ],
          TIMING,
        );
        expect(results).toHaveLength(4);
        const [ra, rb, rr, rc] = results.map(accepted);
        expect(ra!.replayed).toBe(false);
        expect(ra!.job).toMatchObject({ id: a.id, status: "queued", attempts: 0 });
        expect(ra!.job.runAt - ra!.job.createdAt).toBe(5_000);
        expect(ra!.message).toEqual({
          id: a.id,
          dedupId: a.id,
          job: { ...a, createdAt: ra!.job.createdAt, runAt: ra!.job.runAt },
          notBefore: ra!.job.runAt,
          recoverAt: ra!.job.runAt + 60_000,
        });
        expect(rb!.replayed).toBe(false);
        expect(rr).toEqual({ job: rb!.job, replayed: true });
        expect(rc!.job.runAt).toBe(t0 - 1);
        for (const r of [ra, rb, rc]) expect(await store.getJob(r!.job.id)).toEqual(r!.job);
        expect(await store.getJob(repeat.id)).toBeNull();
        expect((await store.stats()).totals.submitted).toBe(3);
      } finally {
        await cleanup();
      }
    });

    it("answers unknown dependencies per item and writes nothing for that item", async () => {
      await fresh();
      try {
        const dep = jobSpec();
        const waiting = jobSpec({ after: [dep.id] });
        const orphan = jobSpec({ after: ["job-nope"] });
        const results = await submitJobs(
          [
            { job: dep, delayMs: 0 },
            { job: orphan, delayMs: 0 },
            { job: waiting, delayMs: 0 },
          ],
          TIMING,
        );
        expect(results[1]).toEqual({ unknown: ["job-nope"] });
        expect(accepted(results[2]).job.status).toBe("waiting");
        expect(accepted(results[2]).message).toBeUndefined();
        expect(await store.getJob(orphan.id)).toBeNull();
      } finally {
        await cleanup();
      }
    });

    it("counts the quota item by item: admitted up to the limit, the rest denied and not written", async () => {
      await fresh();
      try {
        const q = quota([60_000, 3]);
        const specs = Array.from({ length: 5 }, () => jobSpec());
        const results = await submitJobs(
          specs.map((job) => ({ job, delayMs: 0 })),
          TIMING,
          { quota: q },
        );
        expect(results.slice(0, 3).map((r) => accepted(r).quota?.remaining)).toEqual([2, 1, 0]);
        for (const r of results.slice(3)) {
          expect(r).toMatchObject({ denied: { kind: "quota", quota: { limit: 3, remaining: 0 } } });
        }
        expect(await store.getJob(specs[3]!.id)).toBeNull();
        expect(await store.getJob(specs[4]!.id)).toBeNull();
        expect((await store.stats()).totals.submitted).toBe(3);
      } finally {
        await cleanup();
      }
    });

    it(`Broker.submitMany: ${MAX_BATCH_JOBS} jobs with 3 bad ones store 997; sent again, 997 replays and nothing new`, async () => {
      await fresh();
      try {
        const transport = recordingTransport();
        const broker = new Broker({
          store,
          transport,
          handlers,
          options: resolveOptions({ logger: silentLogger }),
        });
        const run = uid("batch");
        const bad = new Set([7, 500, 999]);
        const batch = Array.from({ length: MAX_BATCH_JOBS }, (_, i) =>
          bad.has(i)
            ? { handler: "email.send" as const, input: { to: i }, idempotencyKey: `${run}-${i}` }
            : {
                handler: "email.send" as const,
                input: { to: `u${i}@example.com` },
                idempotencyKey: `${run}-${i}`,
              },
        );
        // Input the schema refuses: a compile-time error too, which is the point of the test.
        const first = await broker.submitMany(batch as never);
        expect(first.items).toHaveLength(MAX_BATCH_JOBS);
        const outcomes = (items: typeof first.items) =>
          items.map((item, i) =>
            item.outcome === "failed"
              ? `${i}:${(item.error as { status?: number }).status}`
              : item.outcome,
          );
        const firstOutcomes = outcomes(first.items);
        expect(firstOutcomes.filter((o) => o === "accepted")).toHaveLength(997);
        expect(firstOutcomes.filter((o) => o !== "accepted")).toEqual([
          "7:422",
          "500:422",
          "999:422",
        ]);
        const ids = first.items.flatMap((item) =>
          item.outcome === "accepted" ? [item.job.id] : [],
        );
        expect(new Set(ids).size).toBe(997);
        expect((await store.stats()).totals.submitted).toBe(997);
        expect(new Set(transport.published.map((m) => m.id))).toEqual(new Set(ids));
        // Each a whole job as stored (spot checks across chunks).
        for (const i of [0, MAX_SUBMIT_CHUNK, 998]) {
          const item = first.items[i]!;
          if (item.outcome !== "accepted") throw new Error("unreachable");
          expect(await store.getJob(item.job.id)).toMatchObject({
            id: item.job.id,
            input: { to: `u${i}@example.com` },
            status: "queued",
          });
        }

        const again = await broker.submitMany(batch as never);
        const againOutcomes = outcomes(again.items);
        expect(againOutcomes.filter((o) => o === "replayed")).toHaveLength(997);
        expect(againOutcomes.filter((o) => o !== "replayed")).toEqual([
          "7:422",
          "500:422",
          "999:422",
        ]);
        expect(
          again.items.flatMap((item) => (item.outcome === "replayed" ? [item.job.id] : [])),
        ).toEqual(ids);
        expect((await store.stats()).totals.submitted).toBe(997);
        expect(transport.published).toHaveLength(997);
      } finally {
        await cleanup();
      }
    });

    it("Broker.submitMany with a submit quota: admits up to the limit, the rest answered 429 each", async () => {
      await fresh();
      try {
        const broker = new Broker({
          store,
          transport: recordingTransport(),
          handlers,
          options: resolveOptions({ logger: silentLogger }),
        });
        const actor = {
          tenant: uid("t"),
          scopes: ["jobs:write" as const],
          manifest: { quotas: { submit: { perMinute: 250 } } },
        };
        const jobs = Array.from({ length: 300 }, () => ({ handler: "noop" as const }));
        const { items, quota: report } = await broker.submitMany(jobs, actor);
        const statuses = items.map((item) =>
          item.outcome === "failed" ? (item.error as { status: number }).status : item.outcome,
        );
        expect(statuses.slice(0, 250).every((s) => s === "accepted")).toBe(true);
        expect(statuses.slice(250).every((s) => s === 429)).toBe(true);
        expect(report).toMatchObject({ limit: 250, remaining: 0 });
        const listed = await store.listJobs({ tenant: actor.tenant, limit: 100 });
        expect(listed.items).toHaveLength(100);
        expect((await store.stats()).totals.submitted).toBe(250);
      } finally {
        await cleanup();
      }
    });
  });
}
