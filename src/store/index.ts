/**
 * @module
 * `tickwork/store`: the contract a store implements — the {@link Store} interface, the records and
 * results of its operations, and the defaults every store shares. tickwork ships two stores
 * (`tickwork/redis`, `tickwork/memory`); this entry is for writing another.
 */
export type * from "./port.ts";
export {
  checkRunLimit,
  DEFAULT_REAP_AFTER_MS,
  DEFAULT_RETENTION,
  FLAP_WINDOW_MS,
  HISTOGRAM_BOUNDS_MS,
  LIMITED_MIN_RETRY_MS,
  MAX_RUN_LIMIT,
  NODE_DROP_TTLS,
  NODE_LIMITS,
  nodeRecordJson,
  nodeRegistry,
  nodeStatus,
  TICK_LEASE,
} from "./port.ts";
