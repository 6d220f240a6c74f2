/**
 * @module
 * Part of the Store contract (`store.contract.ts`): concurrency limits in `beginRun` — at most
 * `limit` runs of one key at once, a `limited` answer that is not an attempt, slots freed by
 * finishing, dying, cancelling and by a lapsed run lease, keys independent of each other.
 */
import { describe, expect, it } from "vitest";
import type { JobSpec } from "../../src/core/model.ts";
import {
  type BeginRunResult,
  LIMITED_MIN_RETRY_MS,
  type RunLimit,
  type Store,
} from "../../src/store/port.ts";
import {
  jobSpec,
  type MakeContractStore,
  occurrenceSpec,
  scheduleRecord,
  sleep,
} from "./fixtures.ts";
import { asRun, useContractStore } from "./harness.ts";

const LEASE = 5_000;
const FAILED = { ok: false as const, error: { name: "E", message: "x" } };

/** Resolves once `check` holds (re-checked every 10 ms), or fails naming `what`. */
export async function until(
  check: () => Promise<boolean> | boolean,
  what: string,
  ms = 10_000,
): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function asLimited(res: BeginRunResult): Extract<BeginRunResult, { kind: "limited" }> {
  if (res.kind !== "limited") throw new Error(`expected limited, got ${JSON.stringify(res)}`);
  return res;
}

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describeLimitsContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const { submitted, submitRecoverable, recoverable } = useContractStore(make, (made) => {
      store = made;
    });

    const begin = (spec: JobSpec, limit: RunLimit, leaseMs = LEASE) =>
      store.beginRun(spec, leaseMs, 60_000, undefined, limit);
    const specs = async (n: number): Promise<JobSpec[]> => {
      const out: JobSpec[] = [];
      for (let i = 0; i < n; i++) out.push(await submitted(jobSpec({ handler: "limited.work" })));
      return out;
    };

    describe("beginRun with a concurrency limit", () => {
      it("runs at most `limit` jobs of a key; the next is limited, which is not an attempt", async () => {
        const [a, b, c] = (await specs(3)) as [JobSpec, JobSpec, JobSpec];
        const limit = { key: "limited.work", limit: 2 };
        const { job: first } = asRun(await begin(a, limit));
        asRun(await begin(b, limit));
        const before = await store.getJob(c.id);
        const stats = await store.stats();
        const { events: seen } = await store.events({ limit: 1_000 });

        const limited = asLimited(await begin(c, limit));
        const now = await store.now();
        // Until the earliest lease ends (a's), at least the minimum.
        expect(limited.retryAfterMs).toBeGreaterThanOrEqual(
          Math.max(LIMITED_MIN_RETRY_MS, (first.startedAt as number) + LEASE - now - 1),
        );
        expect(limited.retryAfterMs).toBeLessThanOrEqual(LEASE);

        // Nothing about the job changed: no attempt, no start, no event; only `limited` counted.
        expect(await store.getJob(c.id)).toEqual(before);
        expect(before).toMatchObject({ status: "queued", attempts: 0 });
        const after = await store.stats();
        expect(after.totals).toEqual({ ...stats.totals, limited: stats.totals.limited + 1 });
        expect(after.jobs).toEqual(stats.jobs);
        expect((await store.events({ limit: 1_000 })).events).toEqual(seen);
        // Asked again, still limited; the running ones are not (they are busy, as always).
        expect((await begin(c, limit)).kind).toBe("limited");
        expect((await begin(a, limit)).kind).toBe("busy");
      });

      it("a job its limit held counts dispatch lag only up to its first limited answer", async () => {
        // The wait a handler's own limit imposes is not the deployment's lag, which the
        // degradation controller reads: one job of a handler limited to one an hour would
        // otherwise add an hour to it.
        const [a, b] = (await specs(2)) as [JobSpec, JobSpec];
        const limit = { key: "limited.work", limit: 1 };
        asRun(await begin(a, limit));
        const before = (await store.stats()).dispatchLagMs;
        asLimited(await begin(b, limit));
        const limitedBy = await store.now();
        await until(async () => (await store.now()) > limitedBy + 300, "300 ms to pass");
        asLimited(await begin(b, limit));
        expect((await store.finishRun(a.id, 1, { ok: true, result: null })).kind).toBe("ok");
        asRun(await begin(b, limit));
        const after = (await store.stats()).dispatchLagMs;
        expect(after.count).toBe(before.count + 1);
        expect(after.sum - before.sum).toBeLessThanOrEqual(limitedBy - b.createdAt);
        // Started as any job is: the hold shows nowhere in its record.
        expect(await store.getJob(b.id)).toMatchObject({ status: "running", attempts: 1 });
      });

      it("a limited job is alive: its outbox entry is not recovered (nor reaped) for reapAfterMs", async () => {
        const [a] = (await specs(1)) as [JobSpec];
        const limit = { key: "limited.work", limit: 1 };
        asRun(await begin(a, limit));
        // Published and due for recovery now (grace 0)…
        const { message } = await submitRecoverable({ handler: "limited.work" });
        const waiting = message?.job as JobSpec;
        // …but a delivery of it arrived and was held back: it waits, it is not lost.
        asLimited(await begin(waiting, limit));
        expect((await recoverable()).map((m) => m.id)).not.toContain(waiting.id);
      });

      it("a limited job's watch waits for its retryAfterMs, then reapAfterMs", async () => {
        const [a] = (await specs(1)) as [JobSpec];
        const limit = { key: "limited.work", limit: 1 };
        // The slot is held for 2 s: the held-back delivery is told to come back then.
        asRun(await begin(a, limit, 2_000));
        const { message } = await submitRecoverable({ handler: "limited.work" });
        const waiting = message?.job as JobSpec;
        const reapAfterMs = 100;
        const limited = asLimited(
          await store.beginRun(waiting, LEASE, reapAfterMs, undefined, limit),
        );
        expect(limited.retryAfterMs).toBeGreaterThan(1_000);
        // Counted from the answer alone, the watch would be due by now.
        await sleep(reapAfterMs + 50);
        expect((await recoverable()).map((m) => m.id)).not.toContain(waiting.id);
      });

      it("a finished job frees its slot: success, a failure to retry, a final failure", async () => {
        const [a, b, c, d] = (await specs(4)) as [JobSpec, JobSpec, JobSpec, JobSpec];
        const limit = { key: "limited.work", limit: 1 };
        asRun(await begin(a, limit));
        asLimited(await begin(b, limit));
        expect((await store.finishRun(a.id, 1, { ok: true, result: null })).kind).toBe("ok");

        asRun(await begin(b, limit));
        asLimited(await begin(c, limit));
        expect((await store.finishRun(b.id, 1, { ...FAILED, final: false })).kind).toBe("ok");

        asRun(await begin(c, limit));
        asLimited(await begin(b, limit)); // the failed job waits for its retry like any other
        expect((await store.finishRun(c.id, 1, { ...FAILED, final: true })).kind).toBe("ok");
        expect(await store.getJob(c.id)).toMatchObject({ status: "dead" });

        // The failed job's retry is its attempt 2: the limited answers in between counted none.
        expect(asRun(await begin(b, limit)).attempt).toBe(2);
        asLimited(await begin(d, limit));
      });

      it("a slot whose run lease ran out is free again without anyone releasing it", async () => {
        const [a, b, c] = (await specs(3)) as [JobSpec, JobSpec, JobSpec];
        const limit = { key: "limited.work", limit: 1 };
        const leaseMs = 400;
        const { job } = asRun(await begin(a, limit, leaseMs));
        const leaseEnd = (job.startedAt as number) + leaseMs;
        const limited = asLimited(await begin(b, limit));
        expect(limited.retryAfterMs).toBeLessThanOrEqual(leaseMs);
        // Limited until the lease ends, by the store's clock; then b runs.
        let begun: BeginRunResult = limited;
        await until(async () => {
          const now = await store.now();
          begun = await begin(b, limit);
          if (begun.kind === "limited") expect(now).toBeLessThan(leaseEnd + 1_000);
          return begun.kind === "run";
        }, "the lapsed slot to free");
        expect(await store.now()).toBeGreaterThanOrEqual(leaseEnd);
        expect(begun).toMatchObject({ kind: "run", attempt: 1 });
        // a's late finish records a's outcome and does not free b's slot.
        expect((await store.finishRun(a.id, 1, { ok: true, result: null })).kind).toBe("ok");
        asLimited(await begin(c, limit));
      });

      it("a job dead-lettered by the queue or cancelled holds no slot", async () => {
        const [a, b, c] = (await specs(3)) as [JobSpec, JobSpec, JobSpec];
        const limit = { key: "limited.work", limit: 1 };
        const leaseMs = 300;
        const { job } = asRun(await begin(a, limit, leaseMs));
        // A waiting (limited) job can be cancelled: it never held a slot.
        asLimited(await begin(b, limit));
        expect((await store.cancelJob(b.id)).kind).toBe("ok");
        expect((await begin(b, limit)).kind).toBe("final");
        // The queue gives up on a (its worker died): once the lease has run out, markDead kills it.
        await until(
          async () => (await store.now()) >= (job.startedAt as number) + leaseMs,
          "a's lease to run out",
        );
        expect(await store.markDead(a, { name: "E", message: "gone" })).toMatchObject({
          status: "dead",
        });
        expect(asRun(await begin(c, limit)).attempt).toBe(1);
      });

      it("keys are independent, each with its own limit; a job without a limit is not counted", async () => {
        const jobs = await specs(7);
        const [a1, a2, a3, b1, b2, free1, free2] = jobs as [
          JobSpec,
          JobSpec,
          JobSpec,
          JobSpec,
          JobSpec,
          JobSpec,
          JobSpec,
        ];
        const keyA = { key: "limited.work=7:default:a", limit: 2 };
        const keyB = { key: "limited.work=7:default:b", limit: 1 };
        asRun(await begin(a1, keyA));
        asRun(await begin(b1, keyB));
        asRun(await begin(a2, keyA));
        asLimited(await begin(b2, keyB));
        asLimited(await begin(a3, keyA));
        asRun(await store.beginRun(free1, LEASE));
        asRun(await store.beginRun(free2, LEASE));
        await store.finishRun(b1.id, 1, { ok: true, result: null });
        asRun(await begin(b2, keyB));
        asLimited(await begin(a3, keyA));
        await store.finishRun(a2.id, 1, { ok: true, result: null });
        asRun(await begin(a3, keyA));
      });

      it("a job that runs again under another key leaves its old slot", async () => {
        const [a, b, c] = (await specs(3)) as [JobSpec, JobSpec, JobSpec];
        const old = { key: "limited.work=7:default:old", limit: 1 };
        const next = { key: "limited.work=7:default:new", limit: 1 };
        const leaseMs = 300;
        const { job } = asRun(await begin(a, old, leaseMs));
        await until(
          async () => (await store.now()) >= (job.startedAt as number) + leaseMs,
          "a's lease to run out",
        );
        // a's worker died; its next attempt runs under the new key (the definition changed).
        expect(asRun(await begin(a, next)).attempt).toBe(2);
        asRun(await begin(b, old));
        asLimited(await begin(c, next));
      });

      it("an occurrence skipped for overlap takes no slot", async () => {
        const s = scheduleRecord({ overlap: "skip", handler: "limited.work" });
        await store.putSchedule(s);
        const o1 = occurrenceSpec(s, 1_800_000_000_000);
        const o2 = occurrenceSpec(s, 1_800_000_060_000);
        const limit = { key: "limited.work", limit: 2 };
        asRun(await begin(o1, limit));
        expect((await begin(o2, limit)).kind).toBe("skipped");
        const [other] = (await specs(1)) as [JobSpec];
        asRun(await begin(other, limit));
      });

      it("refuses a limit it cannot honour", async () => {
        const [a] = (await specs(1)) as [JobSpec];
        for (const limit of [0, 1.5, 10_001]) {
          await expect(begin(a, { key: "k", limit })).rejects.toThrow(RangeError);
        }
        await expect(begin(a, { key: "", limit: 1 })).rejects.toThrow(RangeError);
        expect(await store.getJob(a.id)).toMatchObject({ status: "queued", attempts: 0 });
      });
    });
  });
}
