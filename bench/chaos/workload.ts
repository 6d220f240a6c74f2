/**
 * @module
 * The work pushed through the system, and the exact set of occurrences it must produce, computed
 * here by arithmetic (not by tickwork's own schedule code):
 *
 * - `iv-<i>`: `"1s"`, `startAt = T0 + offset_i` (the grid is anchored at `startAt`, ADR 0003),
 *   `maxRuns` R → fires at `startAt + k·1000`, k < R;
 * - `ce-<j>`: cron `*∕2 * * * * *` (even seconds), `startAt = T0 − 500`,
 *   `endAt = T0 + 2000·(C−1) + 500` → fires at `T0 + 2000·k`, k < C (T0 is an even second);
 * - `co-<j>`: cron `1-59/2 * * * * *` (odd seconds) with 250 ms jitter (the nominal fire time, and
 *   so the occurrence id, is unchanged) → fires at `T0 + 1000 + 2000·k`, k < C.
 *
 * Jobs: `n` submits with idempotency keys; one in 50 has `retries: 1` and fails its first two
 * attempts, so it is certain to die and be retried from the dead-letter list.
 */

/** Sizes of a run. */
export interface WorkloadSize {
  intervals: number;
  intervalRuns: number;
  /** Cron schedules of each parity. */
  crons: number;
  cronRuns: number;
  jobs: number;
}

/** 10,000 occurrences (5,000 + 2 × 2,500) and 2,000 jobs over 200 s (about 60 runs a second). */
export const FULL: WorkloadSize = {
  intervals: 25,
  intervalRuns: 200,
  crons: 25,
  cronRuns: 100,
  jobs: 2_000,
};

/** 1,000 occurrences (600 + 2 × 200) and 200 jobs over 40 s (about 30 runs a second). */
export const QUICK: WorkloadSize = {
  intervals: 15,
  intervalRuns: 40,
  crons: 10,
  cronRuns: 20,
  jobs: 200,
};

/** A schedule to create, and the fire times it must produce. */
export interface PlannedSchedule {
  body: Record<string, unknown>;
  fireAts: number[];
}

/** Every schedule of the run; `t0` must be a multiple of 2,000 ms. */
export function plannedSchedules(size: WorkloadSize, t0: number): PlannedSchedule[] {
  if (t0 % 2_000 !== 0) throw new RangeError("t0 must be an even second");
  const out: PlannedSchedule[] = [];
  const common = { handler: "work", retries: 3 };
  for (let i = 0; i < size.intervals; i++) {
    const startAt = t0 + ((i * 37) % 1_000);
    out.push({
      body: { ...common, id: `iv-${i}`, schedule: "1s", startAt, maxRuns: size.intervalRuns },
      fireAts: range(size.intervalRuns, (k) => startAt + k * 1_000),
    });
  }
  const span = 2_000 * (size.cronRuns - 1);
  for (let j = 0; j < size.crons; j++) {
    out.push({
      body: {
        ...common,
        id: `ce-${j}`,
        schedule: "*/2 * * * * *",
        startAt: t0 - 500,
        endAt: t0 + span + 500,
      },
      fireAts: range(size.cronRuns, (k) => t0 + 2_000 * k),
    });
    out.push({
      body: {
        ...common,
        id: `co-${j}`,
        schedule: "1-59/2 * * * * *",
        startAt: t0 + 500,
        endAt: t0 + 1_000 + span + 500,
        jitter: 250,
      },
      fireAts: range(size.cronRuns, (k) => t0 + 1_000 + 2_000 * k),
    });
  }
  return out;
}

/** When the last occurrence is due. */
export function lastFireAt(schedules: PlannedSchedule[]): number {
  return Math.max(...schedules.flatMap((s) => s.fireAts));
}

/** The body of job `i` (submitted with an idempotency key, so a client retry is safe). */
export function jobBody(seed: number, i: number): Record<string, unknown> {
  const doomed = i % 50 === 0;
  return {
    handler: "work",
    idempotencyKey: `chaos-${seed}-${i}`,
    input: { failTimes: doomed ? 2 : 0 },
    ...(doomed ? { retries: 1 } : {}),
    ...(i % 7 === 3 ? { delay: 500 + (i % 5) * 500 } : {}),
  };
}

function range(n: number, f: (k: number) => number): number[] {
  return Array.from({ length: n }, (_, k) => f(k));
}
