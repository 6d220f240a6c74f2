/**
 * @module
 * The tick's part of the Store port: named leases with fencing tokens, and the tick's steps
 * (`beginTick`, `nextDue`, `commitTick`, `ackOutbox`, `endTick`) with their options and results.
 */
import type { DegradationLevel, DegradationPolicy } from "../../core/admission.ts";
import type { OutboxMessage, ScheduleRecord } from "../../core/model.ts";
import type { JobStore } from "./jobs.ts";
import type { FLAP_WINDOW_MS } from "./observability.ts";
import type { DEFAULT_REAP_AFTER_MS } from "./retention.ts";

/** Result of {@link TickStore.beginTick}. */
export type BeginTickResult =
  /** Nothing due and nothing to recover; the lease was not touched. */
  | { kind: "idle"; now: number; leaseRemainingMs: number }
  /** There is work but another tick holds the lease. */
  | { kind: "busy"; now: number; leaseRemainingMs: number }
  /** This tick took the lease with a fresh fencing `token`. */
  | {
      kind: "leader";
      now: number;
      token: number;
      /**
       * The degradation level after this tick's evaluation (`opts.degradation`), else the stored
       * one. At `critical` the ticker holds schedules with priority < 8 (see {@link ScheduleCommit.dueAt}).
       */
      degradation: DegradationLevel;
      /** Set when `opts.holder` differs from the previous leader tick's holder (a `leader.changed` event was written). */
      leaderChanged?: { previous: string | null };
      /** Active schedules with `nextRunAt <= now + horizonMs`, earliest first, at most `limit`. */
      due: ScheduleRecord[];
      /** True when more schedules are due than were returned. */
      more: boolean;
      /** Outbox messages whose `recoverAt <= now` (at most `recoverLimit`, oldest `recoverAt`
       * first); their `recoverAt` was pushed to `now + recoverGraceMs` (an attempt's watch, a
       * message with `attempt`: `now + reapAfterMs`, and its `reaps` count + 1) so a concurrent
       * or later tick does not re-take them at once. They are returned as pushed. */
      recover: OutboxMessage[];
    };

/** Options of {@link TickStore.beginTick}. */
export interface BeginTickOptions {
  /** Lease time to live. */
  leaseMs: number;
  /** Look-ahead: schedules due within this many ms are returned now. */
  horizonMs: number;
  /** Max schedules returned. */
  limit: number;
  /** Max outbox messages returned for recovery. */
  recoverLimit: number;
  /** How far recovered messages' `recoverAt` is pushed. */
  recoverGraceMs: number;
  /** How far recovered watches' (messages with `attempt`) `recoverAt` is pushed.
   * @default {@link DEFAULT_REAP_AFTER_MS} */
  reapAfterMs?: number | undefined;
  /**
   * Who ticks (an instance id). Leader path only: if it differs from the stored holder, count a
   * leader change (a flap if within {@link FLAP_WINDOW_MS} of the previous change), write a
   * `leader.changed` event and set `acquiredAt = now`. Not read or written by an idle tick.
   * The first holder ever is a change too (`previous: null`; never a flap: no previous change).
   * Absent: the stored holder is left alone and nothing is counted.
   *
   * Every leader path (with or without `holder`) also counts `totals.ticks` += 1 and
   * `totals.recovered` += the number of messages returned in `recover`. Idle and busy ticks count
   * nothing and evaluate nothing.
   */
  holder?: string;
  /**
   * Evaluate the degradation controller (leader path only; an idle tick stays 5 commands), after
   * taking the lease and before reading the due schedules.
   */
  degradation?: DegradationPolicy | undefined;
}

/** One schedule's change in a tick commit, planned in TS from the record read by the tick. */
export interface ScheduleCommit {
  id: string;
  /** The `rev` the plan was made from; a different stored rev means the schedule changed: skip it. */
  rev: number;
  /** New nominal next run, or `null` when the schedule is completed. */
  nextRunAt: number | null;
  /** Occurrences dispatched by this commit (added to `runs`). */
  runsAdded: number;
  /** Nominal fire time of the latest dispatched occurrence, if any. */
  lastRunAt?: number;
  /** Occurrence messages to put in the outbox (one per dispatched occurrence). */
  messages: OutboxMessage[];
  /**
   * Hold the schedule (degradation `critical`, low priority): its due-index score becomes `dueAt`
   * instead of `nextRunAt` (which is stored unchanged, so misfire rules apply when it is due
   * again). Given with `runsAdded: 0` and no messages. Any later `putSchedule` resets the score.
   * The hold is an applied commit like any other (rev bumped, listed in `applied`); it writes no
   * event and counts nothing. Due-ness (`beginTick`'s idle check, `due`, `nextDue`) is judged by
   * the due-index score, so a held schedule is not due (and does not wake a tick) before `dueAt`.
   */
  dueAt?: number;
}

/** Result of {@link TickStore.commitTick}. */
export type CommitResult =
  | {
      kind: "ok";
      /** Ids of schedules whose commit was applied (their messages are in the outbox). */
      applied: string[];
      /** Ids skipped because the schedule was deleted, paused or its rev changed. */
      skipped: string[];
    }
  /** The lease token no longer matches: nothing was written (I3 in docs/architecture.md). */
  | { kind: "fenced" };

/**
 * An outbox acknowledgement: applies to the message `id` only if it still carries `dedupId`
 * (compare-and-set), so a late ack of an earlier dispatch cannot touch a newer message of the
 * same job (e.g. one put there by `retryDead`, or an attempt's watch put there by `beginRun`).
 */
export interface OutboxAck {
  id: string;
  dedupId: string;
  /**
   * The message's `notBefore` (epoch ms): its watch waits `reapAfterMs` from then when that is
   * later than now (a message published long before it is due). Left out, the watch counts from
   * now.
   */
  notBefore?: number;
}

/**
 * A message the queue could not take yet (it is due beyond the queue's longest delay): move its
 * `recoverAt` to `recoverAt`, if it still carries `dedupId` (compare-and-set, as {@link OutboxAck}).
 */
export interface OutboxDefer extends OutboxAck {
  /** When the tick's recover step should publish it again (epoch ms). */
  recoverAt: number;
}

/** Options of {@link TickStore.nextDue}. */
export interface NextDueOptions {
  /** Lease time to live, renewed. */
  leaseMs: number;
  /** Look-ahead, as in {@link BeginTickOptions.horizonMs}. */
  horizonMs: number;
  /** Max schedules returned. */
  limit: number;
  /** Published messages to ack (see {@link TickStore.ackOutbox}). */
  ackIds: OutboxAck[];
  /** @default {@link DEFAULT_REAP_AFTER_MS} */
  reapAfterMs?: number;
}

/** Result of {@link TickStore.nextDue}. */
export type NextDueResult =
  | { kind: "ok"; now: number; due: ScheduleRecord[]; more: boolean }
  | { kind: "fenced" };

/** The lease `beginTick` takes (docs/architecture.md, "Keys": `{tw}:lease:tick`). */
export const TICK_LEASE = "tick";

/** The leases and the tick: every step of a tick is one atomic store operation. */
export interface TickStore {
  // ── lease ────────────────────────────────────────────────────────────────
  /** Take the named lease if free: a fresh fencing token from a monotonically increasing sequence. */
  acquireLease(
    name: string,
    ttlMs: number,
  ): Promise<{ acquired: true; token: number } | { acquired: false; remainingMs: number }>;
  /** Extend the lease if `token` still holds it. */
  renewLease(name: string, token: number, ttlMs: number): Promise<boolean>;
  /** Release the lease if `token` still holds it (compare-and-delete). */
  releaseLease(name: string, token: number): Promise<boolean>;

  // ── tick ─────────────────────────────────────────────────────────────────
  /**
   * First step of a tick, one round trip: read the clock; if no active schedule is due within
   * `horizonMs` and no outbox message is due for recovery, answer `idle` WITHOUT taking the lease
   * (an idle tick writes nothing). Otherwise take the tick lease (or answer `busy`) and return the
   * first chunk of due schedules plus the messages to recover.
   *
   * The tick lease is the lease named `"tick"` (the lease operations see it); only `leader` draws
   * a token from the sequence.
   */
  beginTick(opts: BeginTickOptions): Promise<BeginTickResult>;
  /**
   * Next chunk, fenced: ack `ackIds` (published since; see {@link ackOutbox}), renew the lease,
   * and return due schedules as in `beginTick`. `fenced` (and nothing acked) if the token lost
   * the lease.
   */
  nextDue(token: number, opts: NextDueOptions): Promise<NextDueResult>;
  /**
   * Fenced commit: if `token` still holds the tick lease, apply each schedule commit whose stored
   * `rev` equals `commit.rev` and whose status is `active` (set `nextRunAt` and its due score or
   * complete it, add `runsAdded`, set `lastRunAt`, bump `rev`) and write its messages to the outbox.
   * `updatedAt` is left alone (it tracks changes of the definition); `applied` and `skipped` list
   * ids in commit order.
   *
   * Per message of an applied commit: `totals.dispatched` += 1, a `job.dispatched` event (the
   * occurrence's `jobId`, `scheduleId`, `handler`, `tenant`), and the occurrence enters
   * `{p}:pending` with score `message.job.runAt` (`jobs.queued` += 1 if it was not there yet).
   * Skipped commits and holds ({@link ScheduleCommit.dueAt}) write none of these.
   */
  commitTick(token: number, commits: ScheduleCommit[]): Promise<CommitResult>;
  /**
   * The queue accepted these published messages. Each one that still carries the acked `dedupId`
   * (compare-and-set, see {@link OutboxAck}) becomes its job's attempt-0 **watch**:
   * `dedupId = "<id>~a0"`, `attempt: 0`, `recoverAt = max(now, notBefore) + reapAfterMs` — no
   * longer re-published every `recoverGraceMs`, but re-dispatched by the reaper if no delivery
   * ever begins the job (the queue gave up and its failure callback was lost; see
   * {@link JobStore.beginRun}). Unfenced: harmless to repeat.
   */
  ackOutbox(acks: OutboxAck[], reapAfterMs?: number): Promise<void>;
  /**
   * The queue could not take these messages yet (a publish outcome `deferred` with a `retryAt`,
   * e.g. Cloudflare Queues beyond 12 h): each one that still carries `dedupId` (compare-and-set)
   * keeps its body and gets `recoverAt = defer.recoverAt`, so the tick does not re-publish it (and
   * is idle) until then. Unfenced: harmless to repeat. Optional for stores of your own: without
   * it a deferred message is re-published at every recover step (every `recoverGraceMs`).
   */
  deferOutbox?(defers: OutboxDefer[]): Promise<void>;
  /**
   * Last step of a tick: ack `ackIds` (as {@link ackOutbox}, even if `token` lost the lease) and
   * release the lease if `token` holds it. `report` (measured by the ticker) goes into the
   * `tickDurationMs` and `leaseAcquisitionMs` histograms, even if `token` lost the lease
   * (`totals.ticks` is counted by `beginTick`'s leader path, not here).
   */
  endTick(
    token: number,
    ackIds: OutboxAck[],
    report?: { tickMs: number; acquireMs: number },
    reapAfterMs?: number,
  ): Promise<void>;
}
