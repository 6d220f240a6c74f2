/**
 * @module
 * The admission contract: quotas ({@link QuotaCheck}, {@link QuotaState}), the degradation
 * controller ({@link DegradationPolicy}) and schedule holds (`ScheduleCommit.dueAt`), as
 * documented in `src/store/port.ts`. Real time (short windows and real sleeps, never more than
 * ~0.6 s in a test), because the Redis store judges time by Redis's clock; every time a test
 * reasons about comes from the store (`now()`, a record's `createdAt`, `stats().now`).
 *
 * @example
 * describeAdmissionContract("memory", async (options) => ({
 *   store: new MemoryStore({ retention: CONTRACT_RETENTION, ...options }),
 *   cleanup: async () => {},
 * }));
 */

import { describeDegradationContract } from "./admission-degradation.contract.ts";
import { describeHoldsContract } from "./admission-holds.contract.ts";
import { describeQuotaContract } from "./admission-quotas.contract.ts";
import type { MakeContractStore } from "./fixtures.ts";

/**
 * Registers the admission contract for one Store implementation: every part of it, each in its
 * own file (quotas, degradation, schedule holds), under one name, `Admission contract: <name>`;
 * their shared helpers are in `admission-harness.ts`.
 *
 * `make` is called before every test and must return a fresh, empty store.
 */
export function describeAdmissionContract(name: string, make: MakeContractStore): void {
  describeQuotaContract(name, make);
  describeDegradationContract(name, make);
  describeHoldsContract(name, make);
}
