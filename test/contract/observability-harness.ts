/**
 * @module
 * What the parts of the observability contract (`observability.contract.ts`) share: a fresh store
 * for every test (and more on request, each cleaned up after it), helpers that act on the current
 * store, expected histograms and totals, and assertion helpers.
 */
import { afterEach, beforeEach, expect } from "vitest";
import type { JobSpec } from "../../src/core/model.ts";
import type {
  BeginTickOptions,
  BeginTickResult,
  EventType,
  Histogram,
  Store,
  StoreStats,
  TickEvent,
} from "../../src/store/port.ts";
import { HISTOGRAM_BOUNDS_MS } from "../../src/store/port.ts";
import {
  accepted,
  type ContractStoreOptions,
  jobSpec,
  type MakeContractStore,
} from "./fixtures.ts";

export const FAR = 4_000_000_000_000;
export const ERROR = { name: "Error", message: "boom" };

/** The histogram bucket a value falls in (non-cumulative; the last is `+Inf`). */
export function bucketOf(value: number): number {
  const i = HISTOGRAM_BOUNDS_MS.findIndex((bound) => value <= bound);
  return i < 0 ? HISTOGRAM_BOUNDS_MS.length : i;
}

/** A histogram holding exactly `values`. */
export function histogramOf(...values: number[]): Histogram {
  const counts = new Array<number>(HISTOGRAM_BOUNDS_MS.length + 1).fill(0);
  for (const v of values) counts[bucketOf(v)] = (counts[bucketOf(v)] ?? 0) + 1;
  return {
    bounds: HISTOGRAM_BOUNDS_MS,
    counts,
    sum: values.reduce((a, b) => a + b, 0),
    count: values.length,
  };
}

export const ZERO_TOTALS: StoreStats["totals"] = {
  submitted: 0,
  dispatched: 0,
  recovered: 0,
  started: 0,
  succeeded: 0,
  failed: 0,
  dead: 0,
  cancelled: 0,
  skipped: 0,
  limited: 0,
  unplaced: 0,
  retried: 0,
  ticks: 0,
};

/**
 * Registers, in the calling `describe`, a fresh store for every test (handed to `use`), and
 * `fresh` for more; every store made is cleaned up after the test. Returns the helpers, which act
 * on the current store.
 */
export function useObservabilityStore(make: MakeContractStore, use: (store: Store) => void) {
  let store: Store;
  const cleanups: (() => Promise<void>)[] = [];

  async function fresh(options?: ContractStoreOptions): Promise<Store> {
    const made = await make(options);
    cleanups.push(made.cleanup);
    return made.store;
  }

  beforeEach(async () => {
    store = await fresh();
    use(store);
  });

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  const tickOpts = (overrides: Partial<BeginTickOptions> = {}): BeginTickOptions => ({
    leaseMs: 5_000,
    horizonMs: 0,
    limit: 10,
    recoverLimit: 100,
    recoverGraceMs: 60_000,
    ...overrides,
  });

  /** Submits a job due `agoMs` ago whose message is not yet recoverable; returns its spec. */
  async function submitted(overrides: Parameters<typeof jobSpec>[0] = {}, agoMs = 0) {
    const now = await store.now();
    const res = accepted(
      await store.submitJob(jobSpec(overrides), {
        runAt: now - agoMs,
        delayMs: 0,
        recoverGraceMs: 60_000,
      }),
    );
    if (!res.message) throw new Error("replayed");
    return res.message.job;
  }

  async function run(spec: JobSpec) {
    const res = await store.beginRun(spec, 5_000);
    return asKind(res, "run");
  }

  /** Every event, oldest first (reads on with `after: last`). */
  async function allEvents(s: Store = store, types?: EventType[]): Promise<TickEvent[]> {
    const all: TickEvent[] = [];
    let after: string | undefined;
    for (let i = 0; i < 100; i++) {
      const page = await s.events({
        limit: 1_000,
        ...(after ? { after } : {}),
        ...(types ? { types } : {}),
      });
      all.push(...page.events);
      if (page.last === undefined) return all;
      after = page.last;
    }
    throw new Error("events do not end");
  }

  return { fresh, tickOpts, submitted, run, allEvents };
}

export function asLeader(res: BeginTickResult): Extract<BeginTickResult, { kind: "leader" }> {
  if (res.kind !== "leader") throw new Error(`expected a leader tick, got ${res.kind}`);
  return res;
}

export function asKind<T extends { kind: string }, K extends T["kind"]>(
  res: T,
  kind: K,
): Extract<T, { kind: K }> {
  if (res.kind !== kind) throw new Error(`expected ${kind}, got ${res.kind}`);
  return res as Extract<T, { kind: K }>;
}

/** Event ids compare by ms, then seq. */
export function expectIncreasing(ids: string[]): void {
  const parsed = ids.map((id) => id.split("-").map(Number) as [number, number]);
  for (let i = 1; i < parsed.length; i++) {
    const [pm, ps] = parsed[i - 1] as [number, number];
    const [m, s] = parsed[i] as [number, number];
    expect(m > pm || (m === pm && s > ps), `${ids[i - 1]} < ${ids[i]}`).toBe(true);
  }
}
