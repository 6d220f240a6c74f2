/**
 * @module
 * What the parts of the Store contract share: a fresh store for every test (made before it,
 * cleaned up after it), helpers that act on the current store, and assertion helpers.
 */
import { afterEach, beforeEach, expect } from "vitest";
import type { JobSpec, OutboxMessage, ScheduleRecord } from "../../src/core/model.ts";
import type {
  BeginRunResult,
  BeginTickOptions,
  BeginTickResult,
  Page,
  Store,
} from "../../src/store/port.ts";
import { accepted, jobSpec, type MakeContractStore, scheduleRecord } from "./fixtures.ts";

/** A far-future time: a schedule due then is never due in a test. */
export const FAR = 4_000_000_000_000;

/**
 * Registers, in the calling `describe`, a fresh store for every test: `make()` before it (the
 * store is handed to `use`), its cleanup after it. Returns the helpers, which act on the current
 * store.
 */
export function useContractStore(make: MakeContractStore, use: (store: Store) => void) {
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

  // ── helpers (closures over the current store) ──────────────────────────

  /** `store.submitJob` without admission control, which never refuses. */
  const submit = async (...args: Parameters<Store["submitJob"]>) =>
    accepted(await store.submitJob(...args));

  const tickOpts = (overrides: Partial<BeginTickOptions> = {}): BeginTickOptions => ({
    leaseMs: 5_000,
    horizonMs: 0,
    limit: 10,
    recoverLimit: 100,
    recoverGraceMs: 0,
    ...overrides,
  });

  async function beginLeader(overrides: Partial<BeginTickOptions> = {}) {
    return asLeader(await store.beginTick(tickOpts(overrides)));
  }

  /** A schedule stored as active and due 1 s ago (or as `overrides` say). */
  async function putDue(overrides: Partial<ScheduleRecord> = {}): Promise<ScheduleRecord> {
    const now = await store.now();
    return putOk(store, scheduleRecord({ nextRunAt: now - 1_000, ...overrides }));
  }

  /**
   * The outbox as the recover step sees it: messages with `recoverAt <= now`, sorted by id.
   * Takes and releases the tick lease; pushes their `recoverAt` to now (grace 0).
   */
  async function recoverable(): Promise<OutboxMessage[]> {
    const begun = await store.beginTick(tickOpts({ recoverLimit: 1_000 }));
    if (begun.kind === "busy") throw new Error("recoverable(): the tick lease is held");
    if (begun.kind === "idle") return [];
    await store.endTick(begun.token, []);
    return [...begun.recover].sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  /** Puts `messages` in the outbox through a (fenced) tick commit. */
  async function writeOutbox(messages: OutboxMessage[]): Promise<void> {
    const carrier = await putDue();
    const leader = await beginLeader();
    const committed = await store.commitTick(leader.token, [
      { id: carrier.id, rev: carrier.rev, nextRunAt: FAR, runsAdded: 0, messages },
    ]);
    expect(committed).toEqual({ kind: "ok", applied: [carrier.id], skipped: [] });
    await store.endTick(leader.token, []);
  }

  /** Submits a job whose outbox message is already due for recovery. */
  async function submitRecoverable(overrides: Parameters<typeof jobSpec>[0] = {}) {
    const now = await store.now();
    return submit(jobSpec(overrides), {
      runAt: now - 1_000,
      delayMs: 0,
      recoverGraceMs: 0,
    });
  }

  /** The ack of a published message (compare-and-delete on id and dedupId), as the engine sends it. */
  const ackOf = (m: OutboxMessage) => ({ id: m.id, dedupId: m.dedupId, notBefore: m.notBefore });

  /**
   * The spec of a freshly submitted job (as its message carries it). A job without `scheduleId`
   * must exist before beginRun / markDead: they do not re-create it.
   */
  async function submitted(
    overrides: Parameters<typeof jobSpec>[0] = {},
    runAt?: number,
  ): Promise<JobSpec> {
    const timing = {
      delayMs: 0,
      recoverGraceMs: 60_000,
      ...(runAt === undefined ? {} : { runAt }),
    };
    const res = await submit(jobSpec(overrides), timing);
    if (!res.message) throw new Error("submitted(): replayed");
    return res.message.job;
  }

  async function run(spec: JobSpec, leaseMs = 5_000) {
    return asRun(await store.beginRun(spec, leaseMs));
  }

  async function allPages<T>(list: (cursor?: string) => Promise<Page<T>>): Promise<T[][]> {
    const pages: T[][] = [];
    let cursor: string | undefined;
    do {
      const page = await list(cursor);
      pages.push(page.items);
      cursor = page.cursor;
      if (pages.length > 100) throw new Error("paging does not end");
    } while (cursor !== undefined);
    return pages;
  }

  return {
    submit,
    tickOpts,
    beginLeader,
    putDue,
    recoverable,
    writeOutbox,
    submitRecoverable,
    ackOf,
    submitted,
    run,
    allPages,
  };
}

// ── assertion helpers ──────────────────────────────────────────────────────

export async function putOk(
  store: Store,
  schedule: ScheduleRecord,
  expectRev?: number,
): Promise<ScheduleRecord> {
  const res = await store.putSchedule(schedule, expectRev);
  if (res.kind !== "ok") throw new Error(`putSchedule(${schedule.id}) conflicted`);
  return res.schedule;
}

export function asLeader(res: BeginTickResult): Extract<BeginTickResult, { kind: "leader" }> {
  if (res.kind !== "leader") throw new Error(`expected a leader tick, got ${JSON.stringify(res)}`);
  return res;
}

export function asRun(res: BeginRunResult): Extract<BeginRunResult, { kind: "run" }> {
  if (res.kind !== "run") throw new Error(`expected to run, got ${JSON.stringify(res)}`);
  return res;
}

export function asAcquired<T extends { acquired: boolean }>(
  res: T,
): Extract<T, { acquired: true }> {
  if (!res.acquired) throw new Error(`expected the lease, got ${JSON.stringify(res)}`);
  return res as Extract<T, { acquired: true }>;
}

export function expectBetween(value: number | undefined, lo: number, hi: number): void {
  expect(value).toBeTypeOf("number");
  expect(value).toBeGreaterThanOrEqual(lo);
  expect(value).toBeLessThanOrEqual(hi);
}
