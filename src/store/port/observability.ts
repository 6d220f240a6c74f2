/**
 * @module
 * The observability part of the Store port: counters, gauges, histograms, moving averages, the
 * leader and degradation state (`stats`), and the capped lifecycle event log (`events`).
 */
import type {
  DegradationLevel,
  DegradationPolicy,
  DegradationState,
} from "../../core/admission.ts";
import type { JobStore } from "./jobs.ts";

/** Upper bounds (ms) of every histogram's buckets; a last `+Inf` bucket follows. */
export const HISTOGRAM_BOUNDS_MS: readonly number[] = [
  5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000,
];

/** A histogram: `counts[i]` observations `<= bounds[i]` and `> bounds[i-1]` (NOT cumulative);
 * `counts[bounds.length]` the ones above the last bound. `sum` adds the observed values (ms),
 * `count` the observations. All start at 0. */
export interface Histogram {
  bounds: readonly number[];
  counts: number[];
  sum: number;
  count: number;
}

/** Everything the stores count, for `/metrics` and `/v1/stats`. */
export interface StoreStats {
  now: number;
  /**
   * Gauges of jobs not yet finished. `queued`: submitted, re-queued from the dead-letter list, or
   * an occurrence committed by a tick, not yet started; `running`; `failed`: waiting for a retry.
   * An occurrence counts as queued from its commit (its record is created at delivery).
   * Counters kept by the operations that change a status: leaving `queued` (start, skip, cancel,
   * dead) decrements `queued` only if the job was in `{p}:pending` (an occurrence never committed
   * was never counted); leaving `running`/`failed` decrements those; never below 0.
   */
  jobs: {
    queued: number;
    running: number;
    failed: number;
    /** Submitted with `after`, waiting for their dependencies (ADR 0014): `g:waiting`. */
    waiting: number;
  };
  /** Monotonic counters since the store was created. */
  totals: {
    submitted: number;
    /** Occurrences committed by ticks. */
    dispatched: number;
    /** Outbox messages handed back by `beginTick` for re-publishing. */
    recovered: number;
    /** Attempts begun. */
    started: number;
    succeeded: number;
    /** Attempts that failed (retryable or not). */
    failed: number;
    dead: number;
    cancelled: number;
    skipped: number;
    /**
     * Deliveries not begun because the handler's concurrency or rate limit was reached
     * (`beginRun` `limited`; each retry of the same job counts again). Not attempts.
     */
    limited: number;
    /** Deliveries a node refused for the job's placement (`refusePlacement`). Not attempts. */
    unplaced: number;
    /** Dead jobs re-queued. */
    retried: number;
    /** Ticks that took the lease (idle ticks are not counted: they write nothing). */
    ticks: number;
  };
  /** Outbox entries: accepted and not yet acknowledged by the queue, plus the watches of started
   * attempts (one per `running` or `failed` job; see {@link JobStore.beginRun}). */
  outbox: number;
  /**
   * Due backlog: jobs `queued` with `runAt <= now` (occurrences from their commit) plus jobs
   * `failed` (waiting for the queue's retry) — kept as a sorted set `{p}:pending` (job id → runAt,
   * or the failure time for failed jobs), written by the same scripts that change a job's status;
   * this is `ZCOUNT pending -inf now`.
   */
  backlog: number;
  /**
   * First attempt's `startedAt - max(runAt, createdAt)`: from when the job was both stored and
   * due (a run time before the submit counts from the submit).
   */
  dispatchLagMs: Histogram;
  /** `finishedAt - startedAt` of every finished attempt. */
  handlerDurationMs: Histogram;
  /** As reported by `endTick`. */
  tickDurationMs: Histogram;
  /** `beginTick` round trip of leader ticks, as reported by `endTick`. */
  leaseAcquisitionMs: Histogram;
  /**
   * Moving averages (α = 0.1) feeding the degradation controller: start at 0; each observation
   * `x` sets `avg = avg + 0.1 * (x - avg)`. `lagMs` is fed with every `dispatchLagMs`
   * observation, `failureRate` by `finishRun` (1 failed attempt, 0 success).
   */
  averages: { lagMs: number; failureRate: number };
  leader: {
    /** Holder of the last leader tick (`BeginTickOptions.holder`), null if never. */
    holder: string | null;
    /** Whether the tick lease is held now, and for how much longer. */
    active: boolean;
    leaseRemainingMs: number;
    /** Times a leader tick's holder differed from the previous one (the first holder included). */
    changes: number;
    /** Changes less than `FLAP_WINDOW_MS` after the previous change. */
    flaps: number;
    /** When the current holder first took the lease (0 = never). */
    acquiredAt: number;
  };
  degradation: DegradationState;
}

/** A leader change within this long of the previous one counts as a flap. */
export const FLAP_WINDOW_MS = 5 * 60_000;

export type EventType =
  | "job.created"
  | "job.dispatched"
  | "job.started"
  | "job.succeeded"
  | "job.failed"
  | "job.retried"
  | "job.dead"
  | "job.cancelled"
  | "job.skipped"
  | "leader.changed"
  | "degradation.changed";

/**
 * A lifecycle event, written by the store inside the operation it records (capped stream).
 * `id` is `<ms>-<seq>` (a Redis stream id): strictly increasing, usable as `after`; ids compare
 * by `ms`, then `seq`, as numbers. `at` is the store's `now` of the operation.
 *
 * Which operation writes which event: `job.created` submitJob (not a replay); `job.dispatched`
 * commitTick, per message of an applied commit; `job.started` beginRun `run`; `job.skipped`
 * beginRun `skipped`; `job.succeeded` finishRun; `job.failed` finishRun, failure not final;
 * `job.dead` finishRun final failure or markDead; `job.cancelled` cancelJob; `job.retried`
 * retryDead; `leader.changed` beginTick (leader, new holder); `degradation.changed` any
 * evaluation that changes the level (submitJob, beginTick, stats).
 * Job events carry `jobId`, `handler`, `tenant` and, for occurrences, `scheduleId`; the other
 * fields only where noted below. Fields that do not apply are absent (never null, except
 * `previous`).
 *
 * The stream keeps the newest `eventsMaxLen` events (a store option: default 10_000, exact trim;
 * `0` writes no events at all).
 */
export interface TickEvent {
  id: string;
  type: EventType;
  at: number;
  jobId?: string;
  scheduleId?: string;
  handler?: string;
  tenant?: string;
  /** job.started: the attempt number; job.failed/job.dead: the attempt that ended. */
  attempt?: number;
  error?: { name: string; message: string };
  /** leader.changed: new and previous holder. */
  holder?: string;
  previous?: string | null;
  /**
   * job.created of a job its dependencies hold (ADR 0014): the status it was stored with,
   * `waiting`, or `cancelled` when one had failed already. Absent: the job was stored `queued`.
   */
  status?: "waiting" | "cancelled";
  /** job.created of a webhook delivery: the endpoint and the sender's event id (docs/webhooks.md). */
  webhook?: { endpoint: string; eventId?: string };
  /** degradation.changed: the levels. */
  from?: DegradationLevel;
  to?: DegradationLevel;
}

export interface EventsQuery {
  /**
   * Only events with id greater than this: an event id, `<ms>-<seq>` (anything else is a
   * `ValidationError`, 400).
   */
  after?: string | undefined;
  /** Absent or empty: every type. */
  types?: readonly EventType[] | undefined;
  /**
   * Only the events of this job (`TickEvent.jobId`, exactly); absent or empty: every event.
   * Bounded like `types`: a call still examines at most 1,000 events, so a job's events are read
   * cheaply by starting `after` its creation (e.g. `GET /v1/events?jobId=&since=<createdAt>`).
   */
  jobId?: string | undefined;
  /**
   * Only the events this tenant may see: its jobs' (and its schedules') events, and the
   * deployment's own, which concern no job (`leader.changed`, `degradation.changed`); a job's
   * event without a tenant (written by an older version) is the default tenant's. Applied while
   * scanning, like the other filters: another tenant's event never matches, and neither `last`
   * nor `more` tells of one (see {@link EventsPage.examined}). Absent: every tenant's (auth off).
   */
  tenant?: string | undefined;
  /** Oldest first, at most this many (1–1,000). */
  limit: number;
}

/**
 * Oldest first; `last` is where to read on from (pass it as `after` to continue). A call
 * examines the events after `after`, oldest first, until it holds `limit` matching ones or has
 * examined 1,000 events; `last` is then the id of the last one examined (the last match when it
 * stopped at `limit`), absent when there was nothing after `after`. With `tenant` it may instead
 * be a position that names no event (see {@link EventsPage.examined}). A page may hold fewer
 * than `limit` events while more match later: read on with `after: last` while `more` is set
 * (or until `last` is absent).
 */
export interface EventsPage {
  events: TickEvent[];
  last?: string;
  /**
   * Present when the call stopped before the end of the log — at `limit` matches, or after
   * examining its 1,000 events (a filtered scan stopped early) — and events follow `last`: read on
   * with `after: last`. Absent: nothing followed `last` when the log was read. With `tenant`, a
   * call that stopped at `limit` sets it without looking on (what follows may be another
   * tenant's): the next read may find nothing.
   */
  more?: true;
  /**
   * With `tenant`, when `last` stops short of it: the id of the last event examined, for a reader
   * on the server that shows it to no one (a realtime stream reads on from here, and sends
   * `last`). A tenant's `last` never names another tenant's event: at the end of the log it is
   * the latest of `after`, the last match and a position one second before the store's clock
   * (past others' events whether there were any); read from `last`, a call examines that second's
   * events again. The second is the room left for a clock set back: a store whose clock steps
   * back by more (or a failover to a server whose clock is that far behind, with a quiet log) can
   * write an event below a position already given, and a reader from there misses it. Only a
   * call that examined its 1,000 events without reaching the end names where it stopped,
   * whoever's event that is.
   */
  examined?: string;
}

/** What the stores count and record, each written inside the operation it describes. */
export interface ObservabilityStore {
  /**
   * Every counter, gauge and histogram, the leader and the degradation state, in one round trip.
   * With `degradation`, evaluates the controller first (may change the level).
   */
  stats(degradation?: DegradationPolicy): Promise<StoreStats>;
  /** Events after `after`, oldest first, filtered by type and job. One round trip. */
  events(query: EventsQuery): Promise<EventsPage>;
}
