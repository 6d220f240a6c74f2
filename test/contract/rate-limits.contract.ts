/**
 * @module
 * Part of the Store contract (`store.contract.ts`): rate limits in `beginRun` — at most `limit`
 * runs of one key BEGIN in any sliding `periodMs`, a `limited` answer that is not an attempt, a
 * window that slides by the store's clock, every begun attempt counted, keys independent of each
 * other, and a concurrency limit judged together with it (one refused by either takes nothing
 * from the other).
 */
import { describe, expect, it } from "vitest";
import type { JobSpec } from "../../src/core/model.ts";
import {
  type BeginRunResult,
  LIMITED_MIN_RETRY_MS,
  type RateLimit,
  type RunLimit,
  type Store,
} from "../../src/store/port.ts";
import { jobSpec, type MakeContractStore } from "./fixtures.ts";
import { asRun, useContractStore } from "./harness.ts";
import { until } from "./limits.contract.ts";

const LEASE = 5_000;
const MINUTE = 60_000;
const RETRY = { ok: false as const, error: { name: "E", message: "x" }, final: false };

function asLimited(res: BeginRunResult): Extract<BeginRunResult, { kind: "limited" }> {
  if (res.kind !== "limited") throw new Error(`expected limited, got ${JSON.stringify(res)}`);
  return res;
}

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describeRateLimitsContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const { submitted, submitRecoverable, recoverable } = useContractStore(make, (made) => {
      store = made;
    });

    const begin = (spec: JobSpec, rate: RateLimit, limit?: RunLimit) =>
      store.beginRun(spec, LEASE, 60_000, undefined, limit, rate);
    const specs = async (n: number): Promise<JobSpec[]> => {
      const out: JobSpec[] = [];
      for (let i = 0; i < n; i++) out.push(await submitted(jobSpec({ handler: "rated.work" })));
      return out;
    };

    describe("beginRun with a rate limit", () => {
      it("begins at most `limit` runs of a key in a period; the next is limited, not an attempt", async () => {
        const [a, b, c] = (await specs(3)) as [JobSpec, JobSpec, JobSpec];
        const rate = { key: "rated.work", limit: 2, periodMs: MINUTE };
        const { job: first } = asRun(await begin(a, rate));
        asRun(await begin(b, rate));
        const before = await store.getJob(c.id);
        const stats = await store.stats();
        const { events: seen } = await store.events({ limit: 1_000 });

        const limited = asLimited(await begin(c, rate));
        const now = await store.now();
        // Until a's start leaves the window, at least the minimum.
        expect(limited.retryAfterMs).toBeGreaterThanOrEqual(
          Math.max(LIMITED_MIN_RETRY_MS, (first.startedAt as number) + MINUTE - now - 1),
        );
        expect(limited.retryAfterMs).toBeLessThanOrEqual(MINUTE);

        // Nothing about the job changed: no attempt, no start, no event; only `limited` counted.
        expect(await store.getJob(c.id)).toEqual(before);
        expect(before).toMatchObject({ status: "queued", attempts: 0 });
        const after = await store.stats();
        expect(after.totals).toEqual({ ...stats.totals, limited: stats.totals.limited + 1 });
        expect(after.jobs).toEqual(stats.jobs);
        expect((await store.events({ limit: 1_000 })).events).toEqual(seen);

        // A rate counts begins, not running jobs: finishing both frees nothing.
        await store.finishRun(a.id, 1, { ok: true, result: null });
        await store.finishRun(b.id, 1, { ok: true, result: null });
        asLimited(await begin(c, rate));
        expect(await store.getJob(c.id)).toMatchObject({ status: "queued", attempts: 0 });
      });

      it("a rate-limited job is alive: its outbox entry is not recovered (nor reaped) for reapAfterMs", async () => {
        const [a] = (await specs(1)) as [JobSpec];
        const rate = { key: "rated.work", limit: 1, periodMs: MINUTE };
        asRun(await begin(a, rate));
        const { message } = await submitRecoverable({ handler: "rated.work" });
        const waiting = message?.job as JobSpec;
        asLimited(await begin(waiting, rate));
        expect((await recoverable()).map((m) => m.id)).not.toContain(waiting.id);
      });

      it("the window slides: a start counts for periodMs by the store's clock, then no more", async () => {
        const [a, b, c] = (await specs(3)) as [JobSpec, JobSpec, JobSpec];
        const periodMs = 400;
        const rate = { key: "rated.work", limit: 1, periodMs };
        const { job } = asRun(await begin(a, rate));
        const leaves = (job.startedAt as number) + periodMs;
        const limited = asLimited(await begin(b, rate));
        expect(limited.retryAfterMs).toBeGreaterThanOrEqual(LIMITED_MIN_RETRY_MS);
        expect(limited.retryAfterMs).toBeLessThanOrEqual(periodMs);
        let begun: BeginRunResult = limited;
        await until(async () => {
          begun = await begin(b, rate);
          // Limited only while a's start is in the window.
          if (begun.kind === "limited") expect(await store.now()).toBeLessThan(leaves + 1_000);
          return begun.kind === "run";
        }, "a's start to leave the window");
        const { job: second } = asRun(begun);
        expect(second.startedAt as number).toBeGreaterThanOrEqual(leaves);
        // b's start is in the window now: c waits for it.
        const next = asLimited(await begin(c, rate));
        expect(next.retryAfterMs).toBeLessThanOrEqual(periodMs);
      });

      it("every begun attempt counts: a retry is a begin like any other", async () => {
        const [a, b] = (await specs(2)) as [JobSpec, JobSpec];
        const rate = { key: "rated.work", limit: 2, periodMs: MINUTE };
        asRun(await begin(a, rate));
        expect((await store.finishRun(a.id, 1, RETRY)).kind).toBe("ok");
        expect(asRun(await begin(a, rate)).attempt).toBe(2);
        // a's two attempts fill the window.
        asLimited(await begin(b, rate));
        expect((await store.finishRun(a.id, 2, RETRY)).kind).toBe("ok");
        asLimited(await begin(a, rate));
        expect(await store.getJob(a.id)).toMatchObject({ status: "failed", attempts: 2 });
      });

      it("keys are independent, each with its own limit and period; a job without one is not counted", async () => {
        const [a1, a2, a3, b1, b2, free1, free2] = (await specs(7)) as [
          JobSpec,
          JobSpec,
          JobSpec,
          JobSpec,
          JobSpec,
          JobSpec,
          JobSpec,
        ];
        const keyA = { key: "rated.work=7:default:a", limit: 2, periodMs: MINUTE };
        const keyB = { key: "rated.work=7:default:b", limit: 1, periodMs: MINUTE };
        asRun(await begin(a1, keyA));
        asRun(await begin(b1, keyB));
        asRun(await begin(a2, keyA));
        asLimited(await begin(b2, keyB));
        asLimited(await begin(a3, keyA));
        asRun(await store.beginRun(free1, LEASE));
        asRun(await store.beginRun(free2, LEASE));
        // The same key text under a concurrency limit is a different thing: no slot is held.
        asRun(await store.beginRun(b2, LEASE, 60_000, undefined, { key: keyB.key, limit: 1 }));
      });

      it("with a concurrency limit: a begin refused by either takes nothing from the other", async () => {
        const [a, b, c, w, x, y] = (await specs(6)) as [
          JobSpec,
          JobSpec,
          JobSpec,
          JobSpec,
          JobSpec,
          JobSpec,
        ];
        // Concurrency refuses, rate would admit: b takes no start from the window.
        const slot = { key: "rated.work", limit: 1 };
        const rate = { key: "rated.work", limit: 2, periodMs: MINUTE };
        asRun(await begin(a, rate, slot));
        asLimited(await begin(b, rate, slot));
        asLimited(await begin(b, rate, slot));
        await store.finishRun(a.id, 1, { ok: true, result: null });
        asRun(await begin(b, rate, slot)); // the window's second start, not its fourth
        await store.finishRun(b.id, 1, { ok: true, result: null });
        asLimited(await begin(c, rate, slot)); // the window is full; the slot is free

        // Rate refuses, concurrency would admit: x takes no slot.
        const full = { key: "rated.other", limit: 1, periodMs: MINUTE };
        const open = { key: "rated.open", limit: 5, periodMs: MINUTE };
        const shared = { key: "rated.shared", limit: 1 };
        asRun(await begin(w, full));
        asLimited(await begin(x, full, shared));
        asRun(await begin(y, open, shared)); // the shared slot was free
      });

      it("both refusing: the answer waits for the later of the two", async () => {
        const [a, b] = (await specs(2)) as [JobSpec, JobSpec];
        const slot = { key: "rated.work", limit: 1 };
        const rate = { key: "rated.work", limit: 1, periodMs: MINUTE };
        asRun(await begin(a, rate, slot)); // holds the slot for LEASE, the window for a minute
        const limited = asLimited(await begin(b, rate, slot));
        expect(limited.retryAfterMs).toBeGreaterThan(LEASE);
        expect(limited.retryAfterMs).toBeLessThanOrEqual(MINUTE);
      });

      it("refuses a rate limit it cannot honour, writing nothing", async () => {
        const [a] = (await specs(1)) as [JobSpec];
        const bad: RateLimit[] = [
          { key: "k", limit: 0, periodMs: MINUTE },
          { key: "k", limit: 1.5, periodMs: MINUTE },
          { key: "k", limit: 100_001, periodMs: MINUTE },
          { key: "k", limit: Number.NaN, periodMs: MINUTE },
          { key: "k", limit: 1, periodMs: 0 },
          { key: "k", limit: 1, periodMs: -1 },
          { key: "k", limit: 1, periodMs: 1.5 },
          { key: "k", limit: 1, periodMs: 86_400_001 },
          { key: "k", limit: 1, periodMs: 1e300 },
          { key: "k", limit: 1, periodMs: Number.POSITIVE_INFINITY },
          { key: "", limit: 1, periodMs: MINUTE },
        ];
        for (const rate of bad) await expect(begin(a, rate)).rejects.toThrow(RangeError);
        expect(await store.getJob(a.id)).toMatchObject({ status: "queued", attempts: 0 });
        expect((await store.stats()).totals).toMatchObject({ started: 0, limited: 0 });
        // `__proto__` is a key like any other.
        const proto = { key: "__proto__", limit: 1, periodMs: MINUTE };
        asRun(await begin(a, proto));
        const [b] = (await specs(1)) as [JobSpec];
        asLimited(await begin(b, proto));
      });
    });
  });
}
