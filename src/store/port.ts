/**
 * @module
 * The Store port. Every state change is ONE atomic operation (one Lua script on Redis,
 * one synchronous step in memory). The engine composes these; it never builds keys.
 *
 * Time: operations that judge time use the store's clock (Redis `TIME`, the clock of record;
 * the memory store's injected clock). Callers never pass "now" — except where noted.
 *
 * The port is split by role in `port/`: `tick.ts` (leases and the tick), `jobs.ts` (jobs,
 * attempts, dead letters), `schedules.ts`, `observability.ts` (stats and events),
 * `retention.ts`, `page.ts`, `nodes.ts` (the node registry, optional on a store), and `store.ts`,
 * which composes them into {@link Store}. This module
 * re-exports all of it, with the admission types of `core`.
 */

// ── admission (quotas, degradation): domain types, in core ──────────────────

export type {
  Admission,
  DegradationLevel,
  DegradationPolicy,
  DegradationState,
  Denied,
  QuotaCheck,
  QuotaState,
  QuotaWindow,
  Thresholds,
} from "../core/admission.ts";
export {
  type BatchSubmit,
  batchSubmitOf,
  MAX_SUBMIT_CHUNK,
  MAX_SUBMIT_CHUNK_BYTES,
  type SubmitItem,
  type SubmitItemResult,
  submitChunks,
} from "./port/batch.ts";
export { EVENT_SEQ_MAX, type EventWait, eventIdAbove } from "./port/event-wait.ts";
export {
  type BeginRunResult,
  type CancelResult,
  checkRunLimit,
  type DeadQuery,
  type FinishRunOptions,
  type FinishRunResult,
  type JobStore,
  LIMITED_MIN_RETRY_MS,
  type ListJobsQuery,
  MAX_RUN_LIMIT,
  type RunLimit,
  type RunOutcome,
  type SubmitDenied,
  type SubmitResult,
} from "./port/jobs.ts";
export {
  NODE_DROP_TTLS,
  NODE_LIMITS,
  type NodeInfo,
  type NodeRecord,
  type NodeRegistry,
  nodeRecordJson,
  nodeRegistry,
  nodeStatus,
} from "./port/nodes.ts";
export {
  type EventsPage,
  type EventsQuery,
  type EventType,
  FLAP_WINDOW_MS,
  HISTOGRAM_BOUNDS_MS,
  type Histogram,
  type ObservabilityStore,
  type StoreStats,
  type TickEvent,
} from "./port/observability.ts";
export type { Page } from "./port/page.ts";
export {
  cutText,
  MAX_REFUSAL_REASON,
  type PlacementLog,
  type PlacementRefusal,
} from "./port/placement.ts";
export {
  checkRunWrite,
  type LogsQuery,
  logCursor,
  MAX_LOG_ENTRIES,
  MAX_LOG_ENTRY_BYTES,
  MAX_PROGRESS_BYTES,
  type ProgressStore,
  type RunWriteResult,
  utf8Bytes,
} from "./port/progress.ts";
export {
  checkRateLimit,
  MAX_RATE_LIMIT,
  MAX_RATE_PERIOD_MS,
  type RateLimit,
} from "./port/rate.ts";
export {
  DEFAULT_REAP_AFTER_MS,
  DEFAULT_RETENTION,
  MAX_RETENTION_COUNT,
  MAX_RETENTION_MS,
  resolveRetention,
  type StoreRetention,
} from "./port/retention.ts";
export type { ListSchedulesQuery, PutScheduleResult, ScheduleStore } from "./port/schedules.ts";
export type { Store } from "./port/store.ts";
export {
  type BeginTickOptions,
  type BeginTickResult,
  type CommitResult,
  type NextDueOptions,
  type NextDueResult,
  type OutboxAck,
  type OutboxDefer,
  type ScheduleCommit,
  TICK_LEASE,
  type TickStore,
} from "./port/tick.ts";
export {
  MAX_WEBHOOK_ENDPOINT,
  type SubmitTiming,
  UNKNOWN_WEBHOOK_ENDPOINT,
  WEBHOOK_HISTORY,
  WEBHOOK_OUTCOMES,
  type WebhookDelivery,
  type WebhookLog,
  type WebhookOutcome,
  type WebhookSubmit,
  webhookLogId,
} from "./port/webhooks.ts";
