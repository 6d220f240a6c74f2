/**
 * @module
 * The memory store's metrics, as include "metrics" keeps them in `{p}:metrics` on Redis: the
 * totals, the job gauges (kept with the due backlog `{p}:pending`, as the Redis scripts keep
 * them), the histograms and the moving averages. The operations change them inside the step
 * they count, so they never disagree with the records.
 */
import type { JobRecord } from "../../core/model.ts";
import type { Histogram, StoreStats } from "../port.ts";
import { HISTOGRAM_BOUNDS_MS } from "../port.ts";
import { ScoreIndex } from "./score-index.ts";

type GaugeStatus = Exclude<keyof StoreStats["jobs"], "waiting">;

/** Counters, gauges, histograms and averages of one store. */
export class Metrics {
  readonly gauges: StoreStats["jobs"] = { queued: 0, running: 0, failed: 0, waiting: 0 };
  readonly totals: StoreStats["totals"] = {
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
  readonly histograms = {
    dispatchLagMs: emptyHistogram(),
    handlerDurationMs: emptyHistogram(),
    tickDurationMs: emptyHistogram(),
    leaseAcquisitionMs: emptyHistogram(),
  };
  readonly averages = { lagMs: 0, failureRate: 0 };
  /** `{p}:pending`: queued jobs → runAt, failed jobs → failure time. */
  readonly #pending = new ScoreIndex();

  /** `ZCOUNT pending -inf now`. */
  backlog(now: number): number {
    return this.#pending.countUpTo(now);
  }

  /** A job enters a gauged status (`queued` and `failed` also enter `{p}:pending`). */
  enter(id: string, status: GaugeStatus, score: number): void {
    if (status === "running") {
      this.gauges.running += 1;
      return;
    }
    if (status === "queued" && this.#pending.has(id)) return;
    this.#pending.set(id, score);
    this.gauges[status] += 1;
  }

  /**
   * A job leaves `status`. Leaving `queued` counts only if the job was in `{p}:pending` (an
   * occurrence never committed was never counted); non-gauged statuses count nothing.
   */
  leave(id: string, status: JobRecord["status"]): void {
    if (status === "queued" || status === "failed") {
      if (this.#pending.delete(id)) this.gauges[status] = Math.max(0, this.gauges[status] - 1);
    } else if (status === "running") {
      this.gauges.running = Math.max(0, this.gauges.running - 1);
    }
  }
}

/** An empty histogram over {@link HISTOGRAM_BOUNDS_MS}. */
export function emptyHistogram(): Histogram {
  return {
    bounds: HISTOGRAM_BOUNDS_MS,
    counts: new Array<number>(HISTOGRAM_BOUNDS_MS.length + 1).fill(0),
    sum: 0,
    count: 0,
  };
}

/** Adds one observation (non-cumulative bucket: the first bound `>= value`, else `+Inf`). */
export function observe(histogram: Histogram, value: number): void {
  let i = histogram.bounds.findIndex((bound) => value <= bound);
  if (i < 0) i = histogram.bounds.length;
  histogram.counts[i] = (histogram.counts[i] ?? 0) + 1;
  histogram.sum += value;
  histogram.count += 1;
}

/** The moving-average step of the port: `avg + 0.1 * (x - avg)`. */
export function movingAverage(avg: number, x: number): number {
  return avg + 0.1 * (x - avg);
}

/** A copy of `h` (its bounds, the port's constant, shared). */
export function copyHistogram(h: Histogram): Histogram {
  return { bounds: h.bounds, counts: [...h.counts], sum: h.sum, count: h.count };
}
