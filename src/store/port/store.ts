/**
 * @module
 * The Store port, composed of its roles: {@link TickStore} (leases and the tick), {@link JobStore}
 * (jobs, attempts, dead letters), {@link ScheduleStore} and {@link ObservabilityStore}; and,
 * optionally, {@link NodeRegistry}.
 */
import type { BatchSubmit } from "./batch.ts";
import type { EventWait } from "./event-wait.ts";
import type { JobStore } from "./jobs.ts";
import type { NodeRegistry } from "./nodes.ts";
import type { ObservabilityStore } from "./observability.ts";
import type { PlacementLog } from "./placement.ts";
import type { ProgressStore } from "./progress.ts";
import type { ScheduleStore } from "./schedules.ts";
import type { TickStore } from "./tick.ts";
import type { WebhookLog } from "./webhooks.ts";

/**
 * The persistence port. Implementations: `RedisStore` (Lua, one script per operation)
 * and `MemoryStore` (embedded). Both pass the same contract tests (docs/architecture.md, I6).
 *
 * The {@link NodeRegistry} methods are optional (`Partial`), so a store written before them still
 * compiles: without them `GET /v1/nodes` lists no nodes and Node servers skip their heartbeats.
 * Implement all three or none (`nodeRegistry(store)` reads them as one). {@link BatchSubmit} is
 * optional too: without it the broker submits a batch's jobs one by one.
 */
export interface Store
  extends TickStore,
    JobStore,
    ProgressStore,
    ScheduleStore,
    ObservabilityStore,
    Partial<NodeRegistry>,
    Partial<BatchSubmit>,
    Partial<PlacementLog>,
    Partial<EventWait>,
    Partial<WebhookLog> {
  /** The store's clock (Redis `TIME`). One round trip; used by the broker to stamp records. */
  now(): Promise<number>;

  /** Release connections / timers. */
  close?(): Promise<void>;
}
