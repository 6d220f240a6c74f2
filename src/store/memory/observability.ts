/**
 * @module
 * The memory store's observability operations (`ObservabilityStore`): every counter, gauge
 * and histogram with the leader and degradation state (`stats`), and the event log (`events`).
 */
import type { DegradationPolicy, EventsPage, EventsQuery, StoreStats } from "../port.ts";
import { TICK_LEASE } from "../port.ts";
import { evaluate } from "./degrade.ts";
import { copyHistogram } from "./metrics.ts";
import { clone, live } from "./shared.ts";
import type { MemoryState } from "./state.ts";

export function stats(s: MemoryState, degradation: DegradationPolicy | undefined): StoreStats {
  const now = s.now();
  if (degradation) evaluate(s, degradation, now);
  const lease = live(s.leases, TICK_LEASE, now);
  const { gauges, totals, histograms: h, averages } = s.metrics;
  return clone({
    now,
    jobs: { ...gauges },
    totals: { ...totals },
    outbox: s.outbox.size,
    backlog: s.metrics.backlog(now),
    dispatchLagMs: copyHistogram(h.dispatchLagMs),
    handlerDurationMs: copyHistogram(h.handlerDurationMs),
    tickDurationMs: copyHistogram(h.tickDurationMs),
    leaseAcquisitionMs: copyHistogram(h.leaseAcquisitionMs),
    averages: { ...averages },
    leader: {
      holder: s.leader.holder,
      active: lease !== undefined,
      leaseRemainingMs: lease ? lease.expiresAt - now : 0,
      changes: s.leader.changes,
      flaps: s.leader.flaps,
      acquiredAt: s.leader.acquiredAt,
    },
    degradation: s.degradation,
  });
}

export function events(s: MemoryState, query: EventsQuery): EventsPage {
  return s.events.read(query, s.now());
}
