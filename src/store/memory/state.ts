/**
 * @module
 * The memory store's state: every table its operations read and write (what the Redis keys of
 * `redis/keys.ts` hold there) and the clock.
 *
 * Time-to-live values (leases, idempotency keys, finished-job retention, run leases, quota
 * counters) are judged lazily against the injected clock: {@link MemoryState.now} reads it and
 * sweeps what expired (`retention.ts`).
 */
import type { DegradationState } from "../../core/admission.ts";
import type { JobLogEntry, JobRecord, OutboxMessage, ScheduleRecord } from "../../core/model.ts";
import type { StoreRetention } from "../port.ts";
import { initialDegradation } from "./degrade.ts";
import { EventLog } from "./events.ts";
import { Metrics } from "./metrics.ts";
import type { StoredNode } from "./nodes.ts";
import type { QuotaCounters } from "./quota.ts";
import { sweepExpired } from "./retention.ts";
import type { Expiring } from "./shared.ts";

/** One job (`{p}:j:<id>`). */
export interface StoredJob {
  record: JobRecord;
  /** Run lease of the current attempt, while `running`. */
  leaseUntil?: number;
  /** The concurrency limit key the run holds a slot of (`{p}:limit:…`), while running under one. */
  slot?: string;
  /**
   * Begun under another overlap policy, it was handed its schedule's `skip` lease
   * (`leaseToRunning`): its end hands the lease on.
   */
  overlapHeld?: true;
  /** Retention: the record is gone from this time on (final jobs only). */
  expiresAt?: number;
  /**
   * Kept at least until then: its idempotency key lives longer than the store's (a webhook job,
   * `SubmitTiming.idempotencyMs`); retention neither expires nor drops it earlier.
   */
  keepUntil?: number;
  /**
   * When its first `limited` answer came, before its first attempt: that start's dispatch lag
   * counts up to it (a handler's own limit is not the deployment's lag). Cleared when it starts.
   */
  limitedAt?: number;
  /** While `waiting`: its dependencies not finished yet (ADR 0014). */
  waits?: number;
  /** Stored `waiting` by its submit, kept once released or cancelled: a re-sent submit says so. */
  held?: true;
  /** Dispatches from the dead-letter list so far (`retryDead`), for fresh dedup ids. */
  dispatches?: number;
  /** The job's log (`appendLog`): the last entries kept, and the position of the next one (1-based). */
  logs?: { next: number; entries: JobLogEntry[] };
}

/** Everything one {@link MemoryStore} holds. */
export class MemoryState {
  readonly jobs = new Map<string, StoredJob>();
  readonly schedules = new Map<string, ScheduleRecord>();
  readonly outbox = new Map<string, OutboxMessage>();
  /** Dead-letter list: job id → time it died. */
  readonly dead = new Map<string, number>();
  /**
   * A schedule's runs index: schedule id → ids of the jobs it fired while it existed. Dropped with
   * the schedule, so a schedule re-created under the id starts with none.
   */
  readonly runs = new Map<string, Set<string>>();
  /** Job id → ids of the `waiting` jobs that wait for it (`{p}:deps:<id>`, ADR 0014). */
  readonly dependents = new Map<string, Set<string>>();
  /** Named leases → fencing token. */
  readonly leases = new Map<string, Expiring<number>>();
  /**
   * Concurrency limits' slots (`{p}:limit:<n>:<key>`): limit key → job id → its run lease's end.
   * Members whose lease ended are dropped when `beginRun` next looks at the key.
   */
  readonly limits = new Map<string, Map<string, number>>();
  /**
   * Rate limits' windows (`{p}:rate:<n>:<key>`): rate key → the start times (ms, ascending) of
   * the runs counted in it, and when it expires (`periodMs` after its newest start).
   */
  readonly rates = new Map<string, { starts: number[]; expiresAt: number }>();
  /** Overlap-`skip` schedules → id of the occurrence that holds the schedule's run lease. */
  readonly running = new Map<string, Expiring<string>>();
  /** `tenant` NUL `key` → job id. */
  readonly idempotency = new Map<string, Expiring<string>>();
  /** Delivery token ids seen, until their tokens expire: a second use is a replay. */
  readonly deliveries = new Map<string, Expiring<string>>();
  /** Jobs deleted from the dead-letter list, never re-created by a late delivery. */
  readonly gone = new Map<string, Expiring<true>>();
  /** Held schedules (degradation `critical`) → their due-index score instead of `nextRunAt`. */
  readonly held = new Map<string, number>();
  /** Quota key → its window counters and when they expire. */
  readonly quotas = new Map<string, { counters: QuotaCounters; expiresAt: number }>();
  readonly metrics = new Metrics();
  /** The node registry: node id → its record (`nodes.ts`). */
  readonly nodes = new Map<string, StoredNode>();
  readonly leader = { holder: null as string | null, changes: 0, flaps: 0, acquiredAt: 0 };
  degradation: DegradationState = initialDegradation();
  /** When the controller was last evaluated (ms; -Infinity: never). */
  degradationEvaluatedAt = Number.NEGATIVE_INFINITY;
  readonly events: EventLog;
  leaseSeq = 0;
  /** Schedule rev sequence: a created schedule's rev is above every rev a deleted one had. */
  revSeq = 0;
  /** Earliest time any retained job, idempotency key or quota counter may have expired. */
  sweepAt = Number.POSITIVE_INFINITY;

  constructor(
    readonly clock: () => number,
    readonly retention: StoreRetention,
    eventsMaxLen: number,
  ) {
    this.events = new EventLog(eventsMaxLen);
  }

  /** Reads the clock and drops whatever expired (amortised: only when something may have). */
  now(): number {
    const now = this.clock();
    if (now < this.sweepAt) return now;
    this.sweepAt = sweepExpired(this, now);
    return now;
  }

  /** Something expires at `at`: the next sweep is due then at the latest. */
  expiresAt(at: number): void {
    this.sweepAt = Math.min(this.sweepAt, at);
  }
}
