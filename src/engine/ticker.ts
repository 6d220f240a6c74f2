/**
 * @module
 * The tick (docs/architecture.md, "The tick"): lease → recover outbox → read due (Redis time) →
 * plan in TS → fenced commit → publish → ack, in chunks while time is left → release.
 *
 * It may run twice at once, die at any line, or resume on a stale process; dispatch stays
 * correct because the commit is fenced by the lease token, every occurrence has a deterministic
 * id (`<scheduleId>@<fireAtMs>`) used as the queue's dedup id, and what was committed but not
 * yet acknowledged by the queue sits in the outbox until a later tick re-publishes it.
 *
 * Degradation (docs/architecture.md, "Admission control"): the leader tick evaluates the shared
 * controller; at `critical` it holds schedules with priority below {@link HIGH_PRIORITY} (their
 * due score moves past this tick's horizon, `nextRunAt` stays, so their misfire policy applies
 * once they run again) while high-priority schedules dispatch as usual.
 */

import { messageJson } from "../core/message-json.ts";
import type { JobSpec, OutboxMessage, ScheduleRecord } from "../core/model.ts";
import { occurrenceId } from "../core/model.ts";
import { parseSchedule, planOccurrences } from "../core/schedule/index.ts";
import type { TraceContext } from "../core/trace.ts";
import type {
  BeginTickResult,
  DegradationLevel,
  OutboxAck,
  ScheduleCommit,
  Store,
} from "../store/port.ts";
import type { Transport } from "../transport/port.ts";
import type { Logger } from "./logger.ts";
import type { ResolvedOptions } from "./options.ts";
import { publishAll } from "./publish.ts";
import { inSpan, spanFailed, startTickSpan, tickSpanDone, tickTrace } from "./tracing.ts";

/** What a tick did. */
export type TickResult =
  | {
      leader: true;
      /** Occurrences published this tick. */
      dispatched: number;
      /** Outbox messages re-published (left over by an earlier tick or submit). */
      recovered: number;
      /**
       * Schedules that were due, counted per read: one whose plan the commit size cut short is
       * read, and counted, again within the tick.
       */
      due: number;
      /**
       * Due schedules held back: low priority while the degradation level is `critical`, or one
       * this runtime could not plan (logged).
       */
      held: number;
      /** True when nothing was due: the lease was not taken. */
      idle: boolean;
      /** True when the lease was lost mid-tick: the rest is left to the next leader. */
      fenced: boolean;
      tookMs: number;
    }
  | { leader: false; leaseRemainingMs: number; tookMs: number };

/** Schedules of this priority or above keep running at degradation level `critical`. */
export const HIGH_PRIORITY = 8;

/** What the ticker needs. */
export interface TickerDeps {
  store: Store;
  transport: Transport;
  options: ResolvedOptions;
}

/**
 * Runs ticks.
 *
 * @example
 * const ticker = new Ticker({ store, transport, options: resolveOptions() });
 * const result = await ticker.tick();
 */
export class Ticker {
  constructor(private readonly deps: TickerDeps) {}

  /**
   * One tick. Never throws for a failed publish (the outbox keeps it); store errors propagate.
   * Its log lines go to `logger` (a request's, when a request runs it); a change of leader is one.
   */
  async tick(logger: Logger = this.deps.options.logger): Promise<TickResult> {
    const started = Date.now();
    const { store, options } = this.deps;
    const t = options.tick;
    const begin = await store.beginTick({
      leaseMs: t.leaseMs,
      horizonMs: t.horizonMs,
      limit: t.chunk,
      recoverLimit: t.recoverLimit,
      recoverGraceMs: t.recoverGraceMs,
      reapAfterMs: options.reapAfterMs,
      holder: options.instanceId,
      ...(options.degradation ? { degradation: this.policy() } : {}),
    });
    const acquireMs = Date.now() - started;
    if (begin.kind === "idle") {
      return {
        leader: true,
        dispatched: 0,
        recovered: 0,
        due: 0,
        held: 0,
        idle: true,
        fenced: false,
        tookMs: Date.now() - started,
      };
    }
    if (begin.kind === "busy") {
      return {
        leader: false,
        leaseRemainingMs: begin.leaseRemainingMs,
        tookMs: Date.now() - started,
      };
    }
    // The leader's tick has a span (src/engine/tracing.ts): its publishes are its children, and
    // the occurrences it dispatches carry its context (their runs link to it).
    const span = startTickSpan(started);
    const listed: string[] = [];
    try {
      const result = await inSpan(span, this.#lead, this, begin, started, acquireMs, logger, {
        trace: tickTrace(span),
        listed,
      });
      tickSpanDone(span, result, listed);
      return result;
    } catch (error) {
      spanFailed(span, error);
      throw error;
    } finally {
      span.end();
    }
  }

  /** The rest of a tick whose lease this process took. */
  async #lead(
    begin: Extract<BeginTickResult, { kind: "leader" }>,
    started: number,
    acquireMs: number,
    logger: Logger,
    traced: { trace: TraceContext | undefined; listed: string[] },
  ): Promise<Extract<TickResult, { leader: true }>> {
    const { store, transport, options } = this.deps;
    const t = options.tick;
    const { token } = begin;
    if (begin.leaderChanged) {
      logger.info("leader changed", {
        holder: options.instanceId,
        previous: begin.leaderChanged.previous,
        token,
      });
    }
    // With the controller off here, a level stored while it was on (or by a server that runs it)
    // holds nothing: nothing here would ever evaluate it again.
    const level = options.degradation ? begin.degradation : "normal";
    if (level !== "normal") {
      logger.warn("degradation level is not normal", {
        level,
        holding: level === "critical" ? `schedules with priority < ${HIGH_PRIORITY}` : "none",
      });
    }
    let { ack, recovered } = await this.recover(begin.recover, logger);
    let dispatched = 0;
    let due = 0;
    let held = 0;
    let fenced = false;
    let chunk = { now: begin.now, due: begin.due, more: begin.more };

    // One publish stays in flight while the next chunk is read and committed; its acks go with
    // the nextDue or endTick after it settled (publishAll never rejects).
    let inflight: Promise<OutboxAck[]> | undefined;
    const settle = async () => {
      if (!inflight) return;
      const published = await inflight;
      inflight = undefined;
      dispatched += published.length;
      ack = ack.concat(published);
    };
    for (;;) {
      // Schedules whose plan the commit size cut short while more of it is due inside the
      // horizon (a large input): read again in this tick rather than left to the next one, which
      // a sub-minute schedule would then never catch up with.
      const cut = new Set<string>();
      if (chunk.due.length > 0) {
        due += chunk.due.length;
        const now = chunk.now;
        const commits = chunk.due.map((s) => this.planOrHold(s, now, level, traced.trace, cut));
        held += commits.filter((c) => c.dueAt !== undefined).length;
        // Commits go in groups of at most maxCommitBytes of messages (one request each).
        for (const group of byBytes(commits, t.maxCommitBytes)) {
          const committed = await store.commitTick(token, group);
          if (committed.kind === "fenced") {
            fenced = true;
            break;
          }
          const applied = new Set(committed.applied);
          const messages = group.filter((c) => applied.has(c.id)).flatMap((c) => c.messages);
          for (const m of messages) if (traced.listed.length < 100) traced.listed.push(m.id);
          await settle();
          inflight = publishAll(transport, messages, t.publishBatch, logger, store);
        }
        if (fenced) break;
      }
      if ((!chunk.more && cut.size === 0) || Date.now() - started > t.budgetMs) break;
      const next = await store.nextDue(token, {
        leaseMs: t.leaseMs,
        horizonMs: t.horizonMs,
        limit: t.chunk,
        ackIds: ack,
        reapAfterMs: options.reapAfterMs,
      });
      if (next.kind === "fenced") {
        // A fenced nextDue acked nothing: the acks go through the unfenced ack below.
        fenced = true;
        break;
      }
      ack = [];
      chunk = next;
    }
    await settle();

    if (fenced) {
      logger.warn("tick lease lost; leaving the rest to the next leader", { token });
      if (ack.length > 0) await store.ackOutbox(ack, options.reapAfterMs);
    } else {
      await store.endTick(
        token,
        ack,
        { tickMs: Date.now() - started, acquireMs },
        options.reapAfterMs,
      );
    }
    return {
      leader: true,
      dispatched,
      recovered,
      due,
      held,
      idle: false,
      fenced,
      tookMs: Date.now() - started,
    };
  }

  /**
   * Re-publish what the outbox holds past its `recoverAt` (docs/architecture.md, "The tick",
   * step 3): messages a submit or tick never got accepted (acked once accepted), and the reaper's
   * part — watches (see
   * {@link Store.ackOutbox} and {@link Store.beginRun}) of jobs that saw no progress for
   * `reapAfterMs`: the queue gave up and its failure callback never came. A watch is
   * re-dispatched while the job has retries left (with a dedup id of its own, so no dedup window
   * swallows it), else the job is dead-lettered, as the lost callback would have done. Watches are
   * not acked: the job's next attempt or final state replaces or removes them.
   */
  private async recover(
    messages: OutboxMessage[],
    logger: Logger,
  ): Promise<{ ack: OutboxAck[]; recovered: number }> {
    const { store, transport, options } = this.deps;
    const fresh: OutboxMessage[] = [];
    const reaped: OutboxMessage[] = [];
    for (const m of messages) {
      if (m.attempt === undefined) fresh.push(m);
      else if (m.attempt <= m.job.retries && (m.reaps ?? 1) <= options.maxReaps) {
        reaped.push(Object.assign({}, m, { dedupId: `${m.dedupId}-${m.recoverAt}` }));
      } else {
        const why =
          m.attempt > m.job.retries
            ? "no retries are left"
            : `it was re-dispatched ${options.maxReaps} times without progress`;
        const job = await store.markDead(
          m.job,
          {
            name: "AbandonedError",
            message: `attempt ${m.attempt} heard nothing for ${options.reapAfterMs} ms (no delivery, no failure callback) and ${why}`,
          },
          { attempts: m.attempt },
        );
        logger.warn("abandoned job dead-lettered", {
          jobId: m.id,
          attempt: m.attempt,
          status: job?.status ?? "gone",
        });
      }
    }
    const batch = options.tick.publishBatch;
    const ack = await publishAll(transport, fresh, batch, logger, store);
    const redispatched = await publishAll(transport, reaped, batch, logger, store);
    for (const { id } of redispatched) logger.warn("abandoned job re-dispatched", { jobId: id });
    const deadLettered = messages.length - fresh.length - reaped.length;
    return { ack, recovered: ack.length + redispatched.length + deadLettered };
  }

  /** The controller's policy, with the locally measured signals when there are any. */
  private policy() {
    const { degradation, localSignals } = this.deps.options;
    const local = localSignals?.();
    return local && degradation
      ? Object.assign({}, degradation, { local: { ...local } })
      : degradation;
  }

  /**
   * At `critical`, a low-priority schedule is held: its due score moves past this tick's horizon
   * and the lease (so neither this tick's next chunk nor an early next tick sees it again),
   * nothing is dispatched and `nextRunAt` stays. Otherwise the schedule is planned as usual.
   */
  private planOrHold(
    s: ScheduleRecord,
    now: number,
    level: DegradationLevel,
    trace: TraceContext | undefined,
    cut: Set<string>,
  ): ScheduleCommit {
    const t = this.deps.options.tick;
    if (level !== "critical" || s.priority >= HIGH_PRIORITY || s.nextRunAt === null) {
      try {
        return this.plan(s, now, trace, cut);
      } catch (error) {
        // One schedule this runtime cannot plan (a time zone its ICU lacks, an expression a newer
        // parser refuses) must not stop the others: it is held, and said so at every tick.
        this.deps.options.logger.error("schedule could not be planned; held", {
          scheduleId: s.id,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
    return {
      id: s.id,
      rev: s.rev,
      nextRunAt: s.nextRunAt,
      runsAdded: 0,
      messages: [],
      dueAt: now + t.horizonMs + t.leaseMs,
    };
  }

  /**
   * Plan one schedule's occurrences from the state the tick read; with `trace`, the tick's trace
   * context, carried by each occurrence (src/engine/tracing.ts).
   */
  private plan(
    s: ScheduleRecord,
    now: number,
    trace: TraceContext | undefined,
    cut: Set<string>,
  ): ScheduleCommit {
    const t = this.deps.options.tick;
    if (s.nextRunAt === null)
      return { id: s.id, rev: s.rev, nextRunAt: null, runsAdded: 0, messages: [] };
    // A schedule with a large input plans no more occurrences than fit one commit; the rest
    // stay due and follow in the next chunk or tick. One occurrence always goes, so the size is
    // only estimated for a plan of several.
    const timing = parseSchedule(s.schedule, s.tz, s.startAt);
    const planWith = (limit: number) =>
      planOccurrences(timing, s, now, {
        horizonMs: t.horizonMs,
        graceMs: t.misfireGraceMs,
        catchUpLimit: t.catchUpLimit,
        limit,
      });
    let plan = planWith(Math.max(1, t.perScheduleLimit));
    if (plan.fires.length > 1) {
      const fit = Math.floor(t.maxCommitBytes / messageBytes(s.id, s.handler, s.input, s.tags));
      if (plan.fires.length > fit) {
        plan = planWith(Math.max(1, fit));
        if (plan.nextRunAt !== null && plan.nextRunAt <= now + t.horizonMs) cut.add(s.id);
      }
    }
    const messages: OutboxMessage[] = plan.fires.map(({ fireAt, runAt }) => {
      const id = occurrenceId(s.id, fireAt);
      const job: JobSpec = {
        id,
        tenant: s.tenant,
        handler: s.handler,
        input: s.input,
        priority: s.priority,
        timeoutMs: s.timeoutMs,
        retries: s.retries,
        tags: s.tags,
        runAt,
        createdAt: now,
        scheduleId: s.id,
        fireAt,
        overlap: s.overlap,
        ...(s.placement ? { placement: s.placement } : {}),
        ...(trace ? { trace } : {}),
      };
      return { id, dedupId: id, job, notBefore: runAt, recoverAt: now + t.recoverGraceMs };
    });
    const last = plan.fires.at(-1);
    return {
      id: s.id,
      rev: s.rev,
      nextRunAt: plan.nextRunAt,
      runsAdded: plan.fires.length,
      ...(last ? { lastRunAt: last.fireAt } : {}),
      messages,
    };
  }
}

/**
 * About how many bytes one occurrence's message adds to a commit request (its JSON, the job's
 * input included, plus the fields around it): an estimate from the parts that vary, so that the
 * input is serialised once per schedule, not once per occurrence.
 */
function messageBytes(id: string, handler: string, input: unknown, tags: string[]): number {
  return 600 + 2 * id.length + handler.length + jsonLength(input) + jsonLength(tags);
}

function jsonLength(value: unknown): number {
  return value === undefined ? 4 : (JSON.stringify(value)?.length ?? 4);
}

/** Split commits, in order, into groups whose messages add up to at most `maxBytes` (a commit
 * larger than that alone forms a group of its own). */
export function byBytes(commits: ScheduleCommit[], maxBytes: number): ScheduleCommit[][] {
  const groups: ScheduleCommit[][] = [];
  let group: ScheduleCommit[] = [];
  let bytes = 0;
  for (const c of commits) {
    const first = c.messages[0];
    // The first message's text is the one the commit writes (messageJson keeps the job's).
    const size = first ? c.messages.length * (messageJson(first).length + 100) : 0;
    if (group.length > 0 && bytes + size > maxBytes) {
      groups.push(group);
      group = [];
      bytes = 0;
    }
    group.push(c);
    bytes += size;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}
