/**
 * @module
 * What one tick dispatches for one schedule: the due occurrences after misfire policy, `maxRuns`,
 * `endAt`, the per-call limit and jitter, and where the schedule resumes.
 */
import { MAX_INSTANT_MS } from "../instant.ts";
import type { ScheduleRecord } from "../model.ts";
import { occurrenceJitter } from "./jitter.ts";
import { countBetween, nextAfter, prevBefore } from "./occurrences.ts";
import type { ParsedSchedule } from "./types.ts";

/** The part of a schedule record the planner reads. */
export type PlanSchedule = Pick<
  ScheduleRecord,
  "id" | "nextRunAt" | "runs" | "maxRuns" | "endAt" | "misfire" | "jitterMs"
>;

/** Options of {@link planOccurrences}. */
export interface PlanOptions {
  /**
   * Look-ahead: occurrences up to `now + horizonMs` are planned now, each published to run at its
   * time. Set it to the tick period, so a once-a-minute tick still runs a `"10s"` schedule on time.
   * @example 60_000
   */
  horizonMs: number;
  /**
   * An occurrence older than `now - graceMs` is missed and subject to the misfire policy; a younger
   * one is just late and runs.
   * @example 120_000
   */
  graceMs: number;
  /**
   * With misfire `"all"`, at most this many of the most recent missed occurrences run.
   * @example 100
   */
  catchUpLimit: number;
  /**
   * At most this many fires per call; the rest are planned by a later call from `nextRunAt`.
   * @example 1_000
   */
  limit: number;
}

/** One occurrence to dispatch. */
export interface PlannedFire {
  /** Nominal fire time: the occurrence's identity (`<scheduleId>@<fireAt>`). */
  fireAt: number;
  /** When to run it: `fireAt` plus the occurrence's deterministic jitter. */
  runAt: number;
}

/** What {@link planOccurrences} decided. */
export interface Plan {
  /** Occurrences to dispatch, ascending by `fireAt`. */
  fires: PlannedFire[];
  /**
   * First occurrence not planned yet — after the horizon, or the next one when `limit` cut the plan
   * short — or `null` when the schedule is finished (`maxRuns` reached or nothing left by `endAt`).
   */
  nextRunAt: number | null;
  /** Missed occurrences the misfire policy dropped: they will never run. */
  missed: number;
}

/**
 * Plan a due schedule. `s.nextRunAt` is itself an occurrence (the first not yet dispatched).
 *
 * - Occurrences in `[s.nextRunAt, now - graceMs)` are missed: misfire `"skip"` drops them all,
 *   `"once"` keeps the latest, `"all"` keeps the latest `catchUpLimit`. They are counted, not
 *   enumerated, so a `"1s"` schedule missed for a year costs little.
 * - Occurrences in `[max(s.nextRunAt, now - graceMs), now + horizonMs]` are all kept.
 * - None after `s.endAt`; no more than `s.maxRuns - s.runs`, nor `limit`, per call.
 *
 * Calling again at the same `now` from the returned `nextRunAt` (with `runs` advanced) continues
 * exactly where a larger `limit` would have gone.
 *
 * @example
 * const plan = planOccurrences(parseSchedule("10s", "UTC"), record, now, {
 *   horizonMs: 60_000, graceMs: 120_000, catchUpLimit: 100, limit: 1_000,
 * });
 */
export function planOccurrences(
  p: ParsedSchedule,
  s: PlanSchedule,
  now: number,
  opts: PlanOptions,
): Plan {
  const first = s.nextRunAt;
  // No occurrence past year 9999: times are written with four-digit years.
  const endAt = Math.min(s.endAt ?? MAX_INSTANT_MS, MAX_INSTANT_MS);
  const runsLeft = s.maxRuns === undefined ? Number.POSITIVE_INFINITY : s.maxRuns - s.runs;
  if (first === null || runsLeft <= 0 || first > endAt)
    return { fires: [], nextRunAt: null, missed: 0 };
  const until = Math.min(now + opts.horizonMs, endAt);
  if (first > until) return { fires: [], nextRunAt: first, missed: 0 };

  const missedEnd = Math.min(now - opts.graceMs, until + 1); // exclusive
  let candidates: number[] = [];
  let missed = 0;
  if (first < missedEnd) {
    const total = 1 + countBetween(p, first + 1, missedEnd - 1);
    candidates = latestMissed(p, first, missedEnd, Math.min(total, keptMissed(s, opts)));
    missed = total - candidates.length;
  }

  const fires: PlannedFire[] = [];
  const take = (fireAt: number, following: number | null): void => {
    // Jitter delays an occurrence to before the next one fires, never later: a jitter longer
    // than the gap would otherwise keep ever more occurrences waiting at once (a `1s` schedule
    // with a day's jitter: 86,400 of them, each holding its input). Nor past year 9999.
    const jitterMs = following === null ? s.jitterMs : Math.min(s.jitterMs, following - fireAt - 1);
    const runAt = Math.min(fireAt + occurrenceJitter(s.id, fireAt, jitterMs), MAX_INSTANT_MS);
    fires.push({ fireAt, runAt });
  };
  let next: number | null = first < missedEnd ? nextAfter(p, missedEnd - 1) : first;
  for (let i = 0; ; i++) {
    const candidate = i < candidates.length ? candidates[i]! : next;
    if (candidate === null || candidate > until) break;
    if (fires.length >= runsLeft) return { fires, nextRunAt: null, missed };
    if (fires.length >= opts.limit) return { fires, nextRunAt: candidate, missed };
    // The occurrence after this one: the kept missed ones are consecutive and end just before
    // `next`; past them, the next is computed here anyway.
    if (i >= candidates.length) next = nextAfter(p, candidate);
    take(candidate, i + 1 < candidates.length ? candidates[i + 1]! : next);
  }
  const finished = fires.length >= runsLeft || next === null || next > endAt;
  return { fires, nextRunAt: finished ? null : next, missed };
}

function keptMissed(s: PlanSchedule, opts: PlanOptions): number {
  if (s.misfire === "skip") return 0;
  if (s.misfire === "all") return Math.max(0, Math.floor(opts.catchUpLimit));
  return 1;
}

/** The latest `n` occurrences in `[first, end)`, ascending; `first` counts as one. */
function latestMissed(p: ParsedSchedule, first: number, end: number, n: number): number[] {
  const out: number[] = [];
  let t = end;
  while (out.length < n) {
    const prev = prevBefore(p, t);
    if (prev === null || prev <= first) break;
    out.push(prev);
    t = prev;
  }
  if (out.length < n) out.push(first);
  return out.reverse();
}
