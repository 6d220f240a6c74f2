/**
 * @module
 * The Store contract (invariant I6, docs/architecture.md): one suite every Store implementation
 * runs, pinning the semantics documented in `src/store/port.ts` (`src/store/port/`). Real time
 * throughout (short TTLs and real sleeps), because the Redis store judges expiry by Redis's own
 * clock; every time a test reasons about is taken from `store.now()`. Its parts are in the
 * `*.contract.ts` files beside this one, their shared helpers in `harness.ts`.
 *
 * @example
 * describeStoreContract("memory", async () => ({
 *   store: new MemoryStore({ retention: CONTRACT_RETENTION }),
 *   cleanup: async () => {},
 * }));
 */

import { describeBatchContract } from "./batch.contract.ts";
import { describeDeadLetterContract } from "./dead-letters.contract.ts";
import { describeDepsContract } from "./deps.contract.ts";
import type { MakeContractStore } from "./fixtures.ts";
import { describeJobsContract } from "./jobs.contract.ts";
import { describeLeaseContract } from "./lease.contract.ts";
import { describeLimitsContract } from "./limits.contract.ts";
import { describePlacementContract } from "./placement.contract.ts";
import { describeProgressContract } from "./progress.contract.ts";
import { describeRateLimitsContract } from "./rate-limits.contract.ts";
import { describeReaperContract } from "./reaper.contract.ts";
import { describeRetentionContract } from "./retention.contract.ts";
import { describeRunsContract } from "./runs.contract.ts";
import { describeSchedulesContract } from "./schedules.contract.ts";
import { describeTenancyContract } from "./tenancy.contract.ts";
import { describeTickContract } from "./tick.contract.ts";

/**
 * Registers the contract suite for one Store implementation: every part of it, each in its own
 * file by role of the port (leases, the tick, jobs, attempts, concurrency limits, the reaper,
 * retention, dead letters, schedules, tenancy), under one name, `Store contract: <name>`.
 *
 * `make` is called before every test and must return a fresh, empty store (its own prefix on a
 * shared Redis is fine) built with `CONTRACT_RETENTION`; `cleanup` runs after the test.
 */
export function describeStoreContract(name: string, make: MakeContractStore): void {
  describeLeaseContract(name, make);
  describeTickContract(name, make);
  describeJobsContract(name, make);
  describeBatchContract(name, make);
  describeRunsContract(name, make);
  describeProgressContract(name, make);
  describeLimitsContract(name, make);
  describeRateLimitsContract(name, make);
  describePlacementContract(name, make);
  describeReaperContract(name, make);
  describeRetentionContract(name, make);
  describeDeadLetterContract(name, make);
  describeDepsContract(name, make);
  describeSchedulesContract(name, make);
  describeTenancyContract(name, make);
}
