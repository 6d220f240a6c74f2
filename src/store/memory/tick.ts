/**
 * @module
 * The memory store's lease and tick operations (`TickStore`), each one synchronous step:
 * named leases with fencing tokens from one sequence, and `beginTick`, `nextDue`, `commitTick`,
 * `ackOutbox` and `endTick`, as the Redis scripts of the same names do them.
 */
import type { ScheduleRecord } from "../../core/model.ts";
import type {
  BeginTickOptions,
  BeginTickResult,
  CommitResult,
  NextDueOptions,
  NextDueResult,
  OutboxAck,
  OutboxDefer,
  ScheduleCommit,
} from "../port.ts";
import { DEFAULT_REAP_AFTER_MS, FLAP_WINDOW_MS, TICK_LEASE } from "../port.ts";
import { evaluate } from "./degrade.ts";
import { jobFields } from "./events.ts";
import { observe } from "./metrics.ts";
import { clone, compareIds, live } from "./shared.ts";
import type { MemoryState } from "./state.ts";

// ── lease ────────────────────────────────────────────────────────────────

export function acquireLease(
  s: MemoryState,
  name: string,
  ttlMs: number,
): { acquired: true; token: number } | { acquired: false; remainingMs: number } {
  const now = s.now();
  const held = live(s.leases, name, now);
  if (held) return { acquired: false, remainingMs: held.expiresAt - now };
  return { acquired: true, token: takeLease(s, name, ttlMs, now) };
}

export function renewLease(s: MemoryState, name: string, token: number, ttlMs: number): boolean {
  const now = s.now();
  const held = live(s.leases, name, now);
  if (held?.value !== token) return false;
  held.expiresAt = now + ttlMs;
  return true;
}

export function releaseLease(s: MemoryState, name: string, token: number): boolean {
  const now = s.now();
  if (live(s.leases, name, now)?.value !== token) return false;
  s.leases.delete(name);
  return true;
}

// ── tick ─────────────────────────────────────────────────────────────────

export function beginTick(s: MemoryState, opts: BeginTickOptions): BeginTickResult {
  const now = s.now();
  const due = dueBy(s, now + opts.horizonMs);
  const recoverable = [...s.outbox.values()]
    .filter((m) => m.recoverAt <= now)
    .sort((a, b) => a.recoverAt - b.recoverAt || compareIds(a.id, b.id));
  const held = live(s.leases, TICK_LEASE, now);
  const leaseRemainingMs = held ? held.expiresAt - now : 0;
  if (due.length === 0 && recoverable.length === 0) return { kind: "idle", now, leaseRemainingMs };
  if (held) return { kind: "busy", now, leaseRemainingMs };

  const token = takeLease(s, TICK_LEASE, opts.leaseMs, now);
  const recover = recoverable.slice(0, Math.max(0, opts.recoverLimit));
  for (const message of recover) {
    if (message.attempt === undefined) message.recoverAt = now + opts.recoverGraceMs;
    else {
      message.recoverAt = now + (opts.reapAfterMs ?? DEFAULT_REAP_AFTER_MS);
      message.reaps = (message.reaps ?? 0) + 1;
    }
  }
  s.metrics.totals.ticks += 1;
  s.metrics.totals.recovered += recover.length;
  let leaderChanged: { previous: string | null } | undefined;
  if (opts.holder !== undefined && opts.holder !== s.leader.holder) {
    const previous = s.leader.holder;
    const leader = s.leader;
    if (leader.changes > 0 && now - leader.acquiredAt < FLAP_WINDOW_MS) leader.flaps += 1;
    leader.changes += 1;
    leader.holder = opts.holder;
    leader.acquiredAt = now;
    leaderChanged = { previous };
    s.events.emit(now, { type: "leader.changed", holder: opts.holder, previous });
  }
  if (opts.degradation) evaluate(s, opts.degradation, now);
  return {
    kind: "leader",
    now,
    token,
    degradation: s.degradation.level,
    ...(leaderChanged ? { leaderChanged } : {}),
    due: clone(due.slice(0, opts.limit)),
    more: due.length > opts.limit,
    recover: clone(recover),
  };
}

export function nextDue(s: MemoryState, token: number, opts: NextDueOptions): NextDueResult {
  const now = s.now();
  const held = live(s.leases, TICK_LEASE, now);
  if (held?.value !== token) return { kind: "fenced" };
  ack(s, opts.ackIds, now, opts.reapAfterMs ?? DEFAULT_REAP_AFTER_MS);
  held.expiresAt = now + opts.leaseMs;
  const due = dueBy(s, now + opts.horizonMs);
  return { kind: "ok", now, due: clone(due.slice(0, opts.limit)), more: due.length > opts.limit };
}

export function commitTick(s: MemoryState, token: number, commits: ScheduleCommit[]): CommitResult {
  const now = s.now();
  if (live(s.leases, TICK_LEASE, now)?.value !== token) return { kind: "fenced" };
  const applied: string[] = [];
  const skipped: string[] = [];
  for (const commit of commits) {
    const schedule = s.schedules.get(commit.id);
    if (!schedule || schedule.rev !== commit.rev || schedule.status !== "active") {
      skipped.push(commit.id);
      continue;
    }
    schedule.nextRunAt = commit.nextRunAt;
    if (commit.nextRunAt === null) schedule.status = "completed";
    schedule.runs += commit.runsAdded;
    if (commit.lastRunAt !== undefined) schedule.lastRunAt = commit.lastRunAt;
    schedule.rev += 1;
    if (commit.dueAt !== undefined && commit.nextRunAt !== null) {
      s.held.set(commit.id, commit.dueAt);
    } else s.held.delete(commit.id);
    for (const message of commit.messages) {
      s.outbox.set(message.id, clone(message));
      s.metrics.totals.dispatched += 1;
      s.metrics.enter(message.id, "queued", message.job.runAt);
      s.events.emit(now, { type: "job.dispatched", ...jobFields(message.job) });
    }
    applied.push(commit.id);
  }
  return { kind: "ok", applied, skipped };
}

export function ackOutbox(s: MemoryState, acks: OutboxAck[], reapAfterMs: number): void {
  ack(s, acks, s.now(), reapAfterMs);
}

export function deferOutbox(s: MemoryState, defers: OutboxDefer[]): void {
  for (const d of defers) {
    const message = s.outbox.get(d.id);
    if (message?.dedupId === d.dedupId) message.recoverAt = Math.floor(d.recoverAt);
  }
}

export function endTick(
  s: MemoryState,
  token: number,
  ackIds: OutboxAck[],
  report: { tickMs: number; acquireMs: number } | undefined,
  reapAfterMs: number,
): void {
  const now = s.now();
  ack(s, ackIds, now, reapAfterMs);
  if (live(s.leases, TICK_LEASE, now)?.value === token) s.leases.delete(TICK_LEASE);
  if (report) {
    observe(s.metrics.histograms.tickDurationMs, report.tickMs);
    observe(s.metrics.histograms.leaseAcquisitionMs, report.acquireMs);
  }
}

// ── internals ────────────────────────────────────────────────────────────

/**
 * Accepted by the queue: each message still carrying `dedupId` becomes its attempt-0 watch,
 * `reapAfterMs` after the later of `now` and the ack's not-before time (as the Redis scripts do).
 */
function ack(s: MemoryState, acks: OutboxAck[], now: number, reapAfterMs: number): void {
  for (const { id, dedupId, notBefore } of acks) {
    const message = s.outbox.get(id);
    if (message?.dedupId !== dedupId) continue;
    const recoverAt = Math.floor(Math.max(now, notBefore ?? now) + reapAfterMs);
    s.outbox.set(id, Object.assign({}, message, { dedupId: `${id}~a0`, recoverAt, attempt: 0 }));
  }
}

function takeLease(s: MemoryState, name: string, ttlMs: number, now: number): number {
  const token = ++s.leaseSeq;
  s.leases.set(name, { value: token, expiresAt: now + ttlMs });
  return token;
}

/**
 * Active schedules due by `until`, earliest first (ties by id, like a sorted set), judged by
 * the due-index score: `nextRunAt`, or the `dueAt` of a hold.
 */
function dueBy(s: MemoryState, until: number): ScheduleRecord[] {
  const scored: [number, ScheduleRecord][] = [];
  for (const schedule of s.schedules.values()) {
    if (schedule.status !== "active" || schedule.nextRunAt === null) continue;
    const score = s.held.get(schedule.id) ?? schedule.nextRunAt;
    if (score <= until) scored.push([score, schedule]);
  }
  return scored.sort((a, b) => a[0] - b[0] || compareIds(a[1].id, b[1].id)).map(([, x]) => x);
}
