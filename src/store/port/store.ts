/**
 * @module
 * The Store port, composed of its roles: {@link TickStore} (leases and the tick), {@link JobStore}
 * (jobs, attempts, dead letters), {@link ScheduleStore} and {@link ObservabilityStore}.
 */
import type { JobStore } from "./jobs.ts";
import type { ObservabilityStore } from "./observability.ts";
import type { ScheduleStore } from "./schedules.ts";
import type { TickStore } from "./tick.ts";

/**
 * The persistence port. Implementations: `RedisStore` (Lua, one script per operation)
 * and `MemoryStore` (embedded). Both pass `test/contract/store.contract.ts`.
 */
export interface Store extends TickStore, JobStore, ScheduleStore, ObservabilityStore {
  /** The store's clock (Redis `TIME`). One round trip; used by the broker to stamp records. */
  now(): Promise<number>;

  /** Release connections / timers. */
  close?(): Promise<void>;
}
