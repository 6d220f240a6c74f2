/**
 * @module
 * The Redis store's lease and tick operations (the port's `TickStore`): each one script, one
 * round trip (`lua/acquireLease-2.lua` … `lua/endTick-4.lua`).
 */
import { messageJson } from "../../core/message-json.ts";
import type { OutboxMessage, ScheduleRecord } from "../../core/model.ts";
import type {
  BeginTickOptions,
  BeginTickResult,
  CommitResult,
  DegradationLevel,
  NextDueOptions,
  NextDueResult,
  OutboxAck,
  OutboxDefer,
  ScheduleCommit,
} from "../port.ts";
import { DEFAULT_REAP_AFTER_MS, FLAP_WINDOW_MS, TICK_LEASE } from "../port.ts";
import {
  ackArgs,
  errorCodeOf,
  fromJson,
  optionalArg,
  policyArg,
  retentionArg,
  toInt,
  ttlArg,
} from "./codec.ts";
import { expectNoCode, type RedisContext } from "./context.ts";
import { ErrorCode } from "./errors.ts";
import { scripts } from "./scripts.generated.ts";

type RawBeginTick =
  | { kind: "idle" | "busy"; now: number; leaseRemainingMs: number }
  | {
      kind: "leader";
      now: number;
      token: number;
      degradation: DegradationLevel;
      leaderChanged?: { previous: string | null };
      more: boolean;
      due: ScheduleRecord[];
      recover: [OutboxMessage, number][];
    };

export async function acquireLease(
  c: RedisContext,
  name: string,
  ttlMs: number,
): Promise<{ acquired: true; token: number } | { acquired: false; remainingMs: number }> {
  const k = c.keys;
  const raw = await c.run(scripts.acquireLease, [k.lease(name), k.leaseSeq], [ttlArg(ttlMs)]);
  const [acquired, value] = fromJson<[unknown, unknown]>(raw);
  return toInt(acquired) === 1
    ? { acquired: true, token: toInt(value) }
    : { acquired: false, remainingMs: toInt(value) };
}

export async function renewLease(
  c: RedisContext,
  name: string,
  token: number,
  ttlMs: number,
): Promise<boolean> {
  const raw = await c.run(scripts.renewLease, [c.keys.lease(name)], [String(token), ttlArg(ttlMs)]);
  return toInt(raw) === 1;
}

export async function releaseLease(c: RedisContext, name: string, token: number): Promise<boolean> {
  const raw = await c.run(scripts.releaseLease, [c.keys.lease(name)], [String(token)]);
  return toInt(raw) === 1;
}

export async function beginTick(c: RedisContext, opts: BeginTickOptions): Promise<BeginTickResult> {
  const k = c.keys;
  const raw = await c.run(
    scripts.beginTick,
    [
      k.root,
      k.due,
      k.outbox,
      k.outboxMsg,
      k.lease(TICK_LEASE),
      k.leaseSeq,
      k.pending,
      k.metrics,
      k.events,
      k.degrade,
      k.leader,
    ],
    [
      ttlArg(opts.leaseMs),
      String(opts.horizonMs),
      String(Math.max(0, Math.floor(opts.limit))),
      String(Math.max(0, Math.floor(opts.recoverLimit))),
      String(opts.recoverGraceMs),
      c.eventsMaxLen,
      opts.holder ?? "",
      String(FLAP_WINDOW_MS),
      policyArg(opts.degradation),
      String(opts.reapAfterMs ?? DEFAULT_REAP_AFTER_MS),
      retentionArg(c.retention),
    ],
  );
  const r = fromJson<RawBeginTick>(raw);
  if (r.kind !== "leader") return r;
  return {
    kind: "leader",
    now: r.now,
    token: r.token,
    degradation: r.degradation,
    ...(r.leaderChanged ? { leaderChanged: r.leaderChanged } : {}),
    due: r.due,
    more: r.more,
    // The outbox zset's score is the authoritative recoverAt; the stored JSON keeps the first.
    recover: r.recover.map(([message, recoverAt]) => Object.assign({}, message, { recoverAt })),
  };
}

export async function nextDue(
  c: RedisContext,
  token: number,
  opts: NextDueOptions,
): Promise<NextDueResult> {
  const k = c.keys;
  const raw = await c.run(
    scripts.nextDue,
    [k.root, k.due, k.outbox, k.outboxMsg, k.lease(TICK_LEASE)],
    [
      String(token),
      ttlArg(opts.leaseMs),
      String(opts.horizonMs),
      String(Math.max(0, Math.floor(opts.limit))),
      String(opts.reapAfterMs ?? DEFAULT_REAP_AFTER_MS),
      ...ackArgs(opts.ackIds),
    ],
  );
  if (errorCodeOf(raw) === ErrorCode.LeaseLost) return { kind: "fenced" };
  expectNoCode("nextDue", raw);
  const r = fromJson<{ now: number; more: boolean; due: ScheduleRecord[] }>(raw);
  return { kind: "ok", now: r.now, due: r.due, more: r.more };
}

export async function commitTick(
  c: RedisContext,
  token: number,
  commits: ScheduleCommit[],
): Promise<CommitResult> {
  const k = c.keys;
  const args: string[] = [String(token), c.eventsMaxLen, String(commits.length)];
  for (const c of commits) {
    const job = c.messages[0]?.job;
    const eventMembers = job
      ? [
          `"scheduleId":${JSON.stringify(c.id)}`,
          `"handler":${JSON.stringify(job.handler)}`,
          `"tenant":${JSON.stringify(job.tenant)}`,
        ].join(",")
      : "";
    args.push(
      c.id,
      String(c.rev),
      optionalArg(c.nextRunAt),
      String(c.runsAdded),
      optionalArg(c.lastRunAt),
      optionalArg(c.dueAt),
      eventMembers,
      String(c.messages.length),
    );
    for (const m of c.messages) {
      args.push(m.id, String(m.recoverAt), String(m.job.runAt), messageJson(m));
    }
  }
  const raw = await c.run(
    scripts.commitTick,
    [k.root, k.due, k.outbox, k.outboxMsg, k.lease(TICK_LEASE), k.pending, k.metrics, k.events],
    args,
  );
  if (errorCodeOf(raw) === ErrorCode.LeaseLost) return { kind: "fenced" };
  expectNoCode("commitTick", raw);
  const flags = fromJson<unknown[]>(raw);
  const applied: string[] = [];
  const skipped: string[] = [];
  commits.forEach((c, i) => {
    (toInt(flags[i]) === 1 ? applied : skipped).push(c.id);
  });
  return { kind: "ok", applied, skipped };
}

export async function ackOutbox(
  c: RedisContext,
  acks: OutboxAck[],
  reapAfterMs = DEFAULT_REAP_AFTER_MS,
): Promise<void> {
  if (acks.length === 0) return;
  await c.run(
    scripts.ackOutbox,
    [c.keys.root, c.keys.outbox, c.keys.outboxMsg],
    [String(reapAfterMs), ...ackArgs(acks)],
  );
}

export async function deferOutbox(c: RedisContext, defers: OutboxDefer[]): Promise<void> {
  if (defers.length === 0) return;
  await c.run(
    scripts.deferOutbox,
    [c.keys.outbox, c.keys.outboxMsg],
    defers.flatMap((d) => [d.id, d.dedupId, String(Math.floor(d.recoverAt))]),
  );
}

export async function endTick(
  c: RedisContext,
  token: number,
  ackIds: OutboxAck[],
  report?: { tickMs: number; acquireMs: number },
  reapAfterMs = DEFAULT_REAP_AFTER_MS,
): Promise<void> {
  const k = c.keys;
  await c.run(
    scripts.endTick,
    [k.root, k.outbox, k.outboxMsg, k.lease(TICK_LEASE), k.metrics],
    [
      String(token),
      report ? String(Math.max(0, report.tickMs)) : "",
      report ? String(Math.max(0, report.acquireMs)) : "",
      String(reapAfterMs),
      ...ackArgs(ackIds),
    ],
  );
}
