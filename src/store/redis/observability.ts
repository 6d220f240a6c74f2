/**
 * @module
 * The Redis store's observability operations (the port's `ObservabilityStore`): `stats` reads
 * the metrics hash, the leader, the degradation state and the backlog; `events` reads the
 * stream. Each one script, one round trip.
 */
import type { DegradationPolicy, EventsPage, EventsQuery, StoreStats, TickEvent } from "../port.ts";
import { TICK_LEASE } from "../port.ts";
import {
  degradationOf,
  eventIdArg,
  fromJson,
  histogramOf,
  policyArg,
  toEvents,
  typesArg,
} from "./codec.ts";
import type { RedisContext } from "./context.ts";
import { scripts } from "./scripts.generated.ts";

/** Events examined at most per `events()` call (the port's bound). */
const EVENTS_BUDGET = 1_000;

export async function stats(c: RedisContext, degradation?: DegradationPolicy): Promise<StoreStats> {
  const k = c.keys;
  const raw = await c.run(
    scripts.stats,
    [k.metrics, k.outbox, k.pending, k.lease(TICK_LEASE), k.leader, k.degrade, k.events, k.root],
    [policyArg(degradation), c.eventsMaxLen],
  );
  const r = fromJson<RawStats>(raw);
  const m = r.metrics;
  const n = (field: string) => Number(m[field] ?? 0);
  const l = r.leader;
  return {
    now: r.now,
    jobs: {
      // With the jobs a Streams submit queued outside the backlog index (`s:in` counts them as
      // submitted: src/store/redis/lua/includes/metrics.lua).
      queued: n("g:queued") + r.onStream,
      running: n("g:running"),
      failed: n("g:failed"),
      waiting: n("g:waiting"),
    },
    totals: {
      submitted: n("t:submitted") + n("s:in"),
      dispatched: n("t:dispatched"),
      recovered: n("t:recovered"),
      started: n("t:started"),
      succeeded: n("t:succeeded"),
      failed: n("t:failed"),
      dead: n("t:dead"),
      cancelled: n("t:cancelled"),
      skipped: n("t:skipped"),
      limited: n("t:limited"),
      unplaced: n("t:unplaced"),
      retried: n("t:retried"),
      ticks: n("t:ticks"),
    },
    outbox: r.outbox,
    backlog: r.backlog,
    dispatchLagMs: histogramOf(m, "lag"),
    handlerDurationMs: histogramOf(m, "dur"),
    tickDurationMs: histogramOf(m, "tick"),
    leaseAcquisitionMs: histogramOf(m, "acq"),
    averages: { lagMs: n("avg:lag"), failureRate: n("avg:fail") },
    leader: {
      holder: l.holder ?? null,
      active: r.leaseRemainingMs !== -2,
      leaseRemainingMs: Math.max(0, r.leaseRemainingMs),
      changes: Number(l.changes ?? 0),
      flaps: Number(l.flaps ?? 0),
      acquiredAt: Number(l.acquiredAt ?? 0),
    },
    degradation: degradationOf(r.degradation),
  };
}

export async function events(c: RedisContext, query: EventsQuery): Promise<EventsPage> {
  const raw = await c.run(
    scripts.events,
    [c.keys.events],
    [
      eventIdArg(query.after),
      // At least one, as the memory store reads it (a tenant's read of 0 failed in the script).
      String(Math.max(1, Math.floor(query.limit))),
      typesArg(query.types),
      String(EVENTS_BUDGET),
      query.jobId ?? "",
      // "=" first: an empty tenant still filters.
      query.tenant === undefined ? "" : `=${query.tenant}`,
    ],
  );
  const r = fromJson<{
    events: [string, Omit<TickEvent, "id">][];
    last?: string;
    more?: boolean;
    examined?: string;
  }>(raw);
  const page: EventsPage = { events: toEvents(r.events) };
  if (r.last) page.last = r.last;
  if (r.last && r.more === true) page.more = true;
  if (r.examined) page.examined = r.examined;
  return page;
}

/** What the `stats` script answers: hashes as field → text. */
interface RawStats {
  now: number;
  metrics: Record<string, string>;
  outbox: number;
  backlog: number;
  /** Jobs queued outside the backlog index (include "streams", queuedOnStream). */
  onStream: number;
  leaseRemainingMs: number;
  leader: Record<string, string>;
  degradation: Record<string, string>;
}
