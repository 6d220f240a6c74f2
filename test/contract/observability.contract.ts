/**
 * @module
 * The observability contract: `stats()` (gauges, totals, histograms, moving averages, leader,
 * backlog, outbox) and `events()` (the capped lifecycle log), as documented in
 * `src/store/port.ts`. Every value a test expects is derived from what the store answered
 * (records' `startedAt`/`finishedAt`, `beginTick`'s `now`), so it runs on real Redis as on memory.
 *
 * @example
 * describeObservabilityContract("memory", async (options) => ({
 *   store: new MemoryStore({ retention: CONTRACT_RETENTION, ...options }),
 *   cleanup: async () => {},
 * }));
 */

import type { MakeContractStore } from "./fixtures.ts";
import { describeEventsContract } from "./observability-events.contract.ts";
import { describeJobEventsContract } from "./observability-job-events.contract.ts";
import { describeStatsContract } from "./observability-stats.contract.ts";

/**
 * Registers the observability contract for one Store implementation: its parts, each in its own
 * file (`stats()`, `events()`, one job's `events()`), under one name, `Observability contract: <name>`; their shared
 * helpers are in `observability-harness.ts`.
 *
 * `make` is called before every test (and by tests that need more stores, with options) and must
 * return a fresh, empty store.
 */
export function describeObservabilityContract(name: string, make: MakeContractStore): void {
  describeStatsContract(name, make);
  describeEventsContract(name, make);
  describeJobEventsContract(name, make);
}
