/**
 * @module
 * What the parts of the admission contract (`admission.contract.ts`) share: a fresh store for
 * every test (made before it, cleaned up after it), helpers that act on the current store,
 * policies and quotas, and assertion helpers.
 */
import { afterEach, beforeEach, expect } from "vitest";
import type { JobRecord } from "../../src/core/model.ts";
import type {
  Admission,
  BeginTickOptions,
  BeginTickResult,
  QuotaCheck,
  QuotaState,
  Store,
  SubmitResult,
} from "../../src/store/port.ts";
import { accepted, jobSpec, type MakeContractStore, uid } from "./fixtures.ts";

export type Policy = NonNullable<Admission["degradation"]>;

/** Thresholds on queue depth only (lag and failure rate stay at 0 here). */
export function policy(overrides: Partial<Policy> = {}): Policy {
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
export function quota(...windows: [number, number][]): QuotaCheck {
  return { key: uid("quota"), windows: windows.map(([windowMs, limit]) => ({ windowMs, limit })) };
}

/** The start of the bucket holding `t` in a window of `windowMs` (60 buckets, ≥ 1 ms). */
export function bucketStart(t: number, windowMs: number): number {
  const width = Math.max(1, Math.floor(windowMs / 60));
  return Math.floor(t / width) * width;
}

export const TIMING = { delayMs: 0, recoverGraceMs: 60_000 };

/**
 * Registers, in the calling `describe`, a fresh store for every test: `make()` before it (the
 * store is handed to `use`), its cleanup after it. Returns the helpers, which act on the current
 * store.
 */
export function useAdmissionStore(make: MakeContractStore, use: (store: Store) => void) {
  let store: Store;
  let cleanup: (() => Promise<void>) | undefined;

  beforeEach(async () => {
    const made = await make();
    store = made.store;
    cleanup = made.cleanup;
    use(store);
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

  return { dueJobs, cancel, submitWith, tickOpts };
}

export function deniedQuota(result: SubmitResult | { denied: unknown }): QuotaState {
  if (!("denied" in result)) throw new Error("expected a denied submit");
  const denied = result.denied as { kind: string; quota?: QuotaState };
  if (denied.kind !== "quota" || !denied.quota) throw new Error(`denied by ${denied.kind}`);
  return denied.quota;
}

export function asLeader(res: BeginTickResult): Extract<BeginTickResult, { kind: "leader" }> {
  if (res.kind !== "leader") throw new Error(`expected a leader tick, got ${res.kind}`);
  return res;
}

export function expectBetween(value: number, lo: number, hi: number): void {
  expect(value).toBeGreaterThanOrEqual(lo);
  expect(value).toBeLessThanOrEqual(hi);
}
