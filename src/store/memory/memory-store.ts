/**
 * @module
 * `MemoryStore`: the embedded Store, for local development, tests and single-process use.
 * Same semantics as the Redis store: both pass the same contract tests (docs/architecture.md, I6).
 *
 * Atomicity: every operation's body is synchronous (no `await` inside), so it runs as one step
 * of the event loop, as a Lua script runs as one step of Redis. Records are deep-copied in and
 * out, so a caller can never reach the stored state. Time-to-live values (leases, idempotency
 * keys, finished-job retention, run leases, quota counters) are judged lazily against the
 * injected clock. Counters, histograms, the degradation state and the capped event log live in
 * the same state and change inside the operations they record, as they do in the Redis scripts.
 *
 * Layout, as the Redis store's Lua: the operations by role of the port (`tick.ts`, `jobs.ts`,
 * `runs.ts`, `schedules.ts`, `observability.ts`, `nodes.ts`), over the state (`state.ts`) and the
 * parts they share, each the counterpart of a Lua include: `job-table.ts` ("job", "spec"),
 * `retention.ts`, `metrics.ts`, `events.ts`, `degrade.ts`, `quota.ts`.
 */

import type {
  DeliveryToken,
  JobError,
  JobLogEntry,
  JobRecord,
  JobSpec,
  JobStatus,
  NewJob,
  OutboxMessage,
  ScheduleRecord,
} from "../../core/model.ts";
import type {
  Admission,
  BeginRunResult,
  BeginTickOptions,
  BeginTickResult,
  CancelResult,
  CommitResult,
  DeadQuery,
  DegradationPolicy,
  EventsPage,
  EventsQuery,
  FinishRunOptions,
  FinishRunResult,
  ListJobsQuery,
  ListSchedulesQuery,
  LogsQuery,
  NextDueOptions,
  NextDueResult,
  NodeInfo,
  NodeRecord,
  NodeRegistry,
  OutboxAck,
  OutboxDefer,
  Page,
  PlacementRefusal,
  PutScheduleResult,
  RateLimit,
  RunLimit,
  RunOutcome,
  RunWriteResult,
  ScheduleCommit,
  Store,
  StoreRetention,
  StoreStats,
  SubmitDenied,
  SubmitItem,
  SubmitItemResult,
  SubmitResult,
  SubmitTiming,
  WebhookDelivery,
  WebhookLog,
  WebhookOutcome,
} from "../port.ts";
import { DEFAULT_REAP_AFTER_MS, resolveRetention } from "../port.ts";
import * as batch from "./batch.ts";
import * as jobs from "./jobs.ts";
import * as nodes from "./nodes.ts";
import * as observability from "./observability.ts";
import * as placement from "./placement.ts";
import * as progress from "./progress.ts";
import * as runs from "./runs.ts";
import * as schedules from "./schedules.ts";
import { MemoryState } from "./state.ts";
import * as tick from "./tick.ts";
import * as webhooks from "./webhooks.ts";

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * The store's clock (epoch ms): the clock of record for due-ness, leases and expiry.
   * @default Date.now
   */
  clock?: (() => number) | undefined;
  /**
   * How long finished jobs and idempotency keys are kept, and how many finished jobs and runs:
   * durations from 1 ms to ten years, caps from 0 to 1e9 or `Infinity` (0 and Infinity: none).
   * A value out of range is a RangeError naming it (`resolveRetention`).
   * @default { jobMs: 7 days, idempotencyMs: 24 h, maxFinishedJobs: 50_000, maxRunsPerSchedule: 100 }
   */
  retention?: Partial<StoreRetention> | undefined;
  /**
   * How many lifecycle events the capped event log keeps (newest); `0` writes none.
   * @default 10_000
   */
  eventsMaxLen?: number | undefined;
}

/**
 * In-memory {@link Store}.
 *
 * @example
 * const store = new MemoryStore();
 * const engine = createEngine({ store, transport, handlers });
 *
 * @example
 * // A test clock and short retention
 * let now = 0;
 * const store = new MemoryStore({ clock: () => now, retention: { jobMs: 1_000 } });
 */
export class MemoryStore implements Store, NodeRegistry, WebhookLog {
  readonly #s: MemoryState;

  constructor(options: MemoryStoreOptions = {}) {
    this.#s = new MemoryState(
      options.clock ?? Date.now,
      // Throws a RangeError naming an option out of range.
      resolveRetention(options.retention),
      Math.max(0, Math.floor(options.eventsMaxLen ?? 10_000)),
    );
  }

  async now(): Promise<number> {
    return this.#s.clock();
  }

  // ── lease ────────────────────────────────────────────────────────────────

  async acquireLease(
    name: string,
    ttlMs: number,
  ): Promise<{ acquired: true; token: number } | { acquired: false; remainingMs: number }> {
    return tick.acquireLease(this.#s, name, ttlMs);
  }

  async renewLease(name: string, token: number, ttlMs: number): Promise<boolean> {
    return tick.renewLease(this.#s, name, token, ttlMs);
  }

  async releaseLease(name: string, token: number): Promise<boolean> {
    return tick.releaseLease(this.#s, name, token);
  }

  // ── tick ─────────────────────────────────────────────────────────────────

  async beginTick(opts: BeginTickOptions): Promise<BeginTickResult> {
    return tick.beginTick(this.#s, opts);
  }

  async nextDue(token: number, opts: NextDueOptions): Promise<NextDueResult> {
    return tick.nextDue(this.#s, token, opts);
  }

  async commitTick(token: number, commits: ScheduleCommit[]): Promise<CommitResult> {
    return tick.commitTick(this.#s, token, commits);
  }

  async ackOutbox(acks: OutboxAck[], reapAfterMs = DEFAULT_REAP_AFTER_MS): Promise<void> {
    tick.ackOutbox(this.#s, acks, reapAfterMs);
  }

  async deferOutbox(defers: OutboxDefer[]): Promise<void> {
    tick.deferOutbox(this.#s, defers);
  }

  async endTick(
    token: number,
    ackIds: OutboxAck[],
    report?: { tickMs: number; acquireMs: number },
    reapAfterMs = DEFAULT_REAP_AFTER_MS,
  ): Promise<void> {
    tick.endTick(this.#s, token, ackIds, report, reapAfterMs);
  }

  // ── jobs ─────────────────────────────────────────────────────────────────

  async submitJob(
    job: NewJob,
    timing: SubmitTiming,
    admission: Admission = {},
  ): Promise<SubmitResult | SubmitDenied> {
    return jobs.submitJob(this.#s, job, timing, admission);
  }

  async submitJobs(
    items: SubmitItem[],
    timing: { recoverGraceMs: number },
    admission: Admission = {},
  ): Promise<SubmitItemResult[]> {
    return batch.submitJobs(this.#s, items, timing, admission);
  }

  // ── webhooks (docs/webhooks.md) ───────────────────────────────────────────

  async countWebhook(endpoint: string, outcome: WebhookOutcome): Promise<void> {
    webhooks.countWebhook(this.#s, endpoint, outcome);
  }

  async webhookCounts(): Promise<Map<string, Map<WebhookOutcome, number>>> {
    return webhooks.webhookCounts(this.#s);
  }

  async webhookDeliveries(
    endpoints: readonly string[],
    limit: number,
  ): Promise<Map<string, WebhookDelivery[]>> {
    return webhooks.webhookDeliveries(this.#s, endpoints, limit);
  }

  async getJob(id: string, tenant?: string): Promise<JobRecord | null> {
    return jobs.getJob(this.#s, id, tenant);
  }

  async jobsExist(ids: readonly string[], tenant: string): Promise<boolean[]> {
    return jobs.jobsExist(this.#s, ids, tenant);
  }

  async cancelJob(id: string): Promise<CancelResult> {
    return jobs.cancelJob(this.#s, id);
  }

  async listJobs(query: ListJobsQuery): Promise<Page<JobRecord>> {
    return jobs.listJobs(this.#s, query);
  }

  // ── the running attempt: progress, log, cancel request ───────────────────

  async reportProgress(id: string, attempt: number, valueJson: string): Promise<RunWriteResult> {
    return progress.reportProgress(this.#s, id, attempt, valueJson);
  }

  async appendLog(id: string, attempt: number, entryJson: string): Promise<RunWriteResult> {
    return progress.appendLog(this.#s, id, attempt, entryJson);
  }

  async readLogs(id: string, query: LogsQuery): Promise<Page<JobLogEntry> | null> {
    return progress.readLogs(this.#s, id, query);
  }

  async cancelRequested(id: string, attempt: number): Promise<boolean> {
    return progress.cancelRequested(this.#s, id, attempt);
  }

  async refusePlacement(
    spec: JobSpec,
    refusal: PlacementRefusal,
    reapAfterMs: number,
  ): Promise<JobStatus | null> {
    return placement.refusePlacement(this.#s, spec, refusal, reapAfterMs);
  }

  async beginRun(
    spec: JobSpec,
    leaseMs: number,
    reapAfterMs = DEFAULT_REAP_AFTER_MS,
    token?: DeliveryToken,
    limit?: RunLimit,
    rate?: RateLimit,
    node?: string,
  ): Promise<BeginRunResult> {
    return runs.beginRun(this.#s, spec, leaseMs, reapAfterMs, token, limit, rate, node);
  }

  async finishRun(
    id: string,
    attempt: number,
    outcome: RunOutcome,
    reapAfterMs = DEFAULT_REAP_AFTER_MS,
    options?: FinishRunOptions,
  ): Promise<FinishRunResult> {
    return runs.finishRun(this.#s, id, attempt, outcome, reapAfterMs, options);
  }

  async markDead(
    spec: JobSpec,
    error: JobError,
    expect?: { attempts: number },
    token?: DeliveryToken,
  ): Promise<JobRecord | null> {
    return runs.markDead(this.#s, spec, error, expect, token);
  }

  async listDead(query: DeadQuery): Promise<Page<JobRecord>> {
    return jobs.listDead(this.#s, query);
  }

  async retryDead(
    id: string,
    timing: { recoverGraceMs: number },
  ): Promise<{ job: JobRecord; message: OutboxMessage } | null> {
    return jobs.retryDead(this.#s, id, timing);
  }

  async deleteDead(id: string): Promise<boolean> {
    return jobs.deleteDead(this.#s, id);
  }

  // ── schedules ────────────────────────────────────────────────────────────

  async putSchedule(
    schedule: ScheduleRecord,
    expectRev?: number,
    admission: Pick<Admission, "quota"> = {},
  ): Promise<PutScheduleResult> {
    return schedules.putSchedule(this.#s, schedule, expectRev, admission);
  }

  async getSchedule(id: string): Promise<ScheduleRecord | null> {
    return schedules.getSchedule(this.#s, id);
  }

  async listSchedules(query: ListSchedulesQuery): Promise<Page<ScheduleRecord>> {
    return schedules.listSchedules(this.#s, query);
  }

  async deleteSchedule(id: string): Promise<boolean> {
    return schedules.deleteSchedule(this.#s, id);
  }

  async listRuns(
    scheduleId: string,
    query: { limit: number; cursor?: string | undefined },
  ): Promise<Page<JobRecord>> {
    return schedules.listRuns(this.#s, scheduleId, query);
  }

  // ── observability ──────────────────────────────────────────────────────

  async stats(degradation?: DegradationPolicy): Promise<StoreStats> {
    return observability.stats(this.#s, degradation);
  }

  async events(query: EventsQuery): Promise<EventsPage> {
    return observability.events(this.#s, query);
  }

  /** Wakes in process when an event above `after` is written (`EventWait`). */
  waitForEvents(after: string | undefined, timeoutMs: number, signal: AbortSignal): Promise<void> {
    return this.#s.events.waitFor(after, timeoutMs, signal);
  }

  // ── node registry ──────────────────────────────────────────────────────

  async heartbeatNode(node: NodeInfo, ttlMs: number): Promise<void> {
    nodes.heartbeatNode(this.#s, node, ttlMs);
  }

  async removeNode(id: string): Promise<void> {
    nodes.removeNode(this.#s, id);
  }

  async listNodes(): Promise<NodeRecord[]> {
    return nodes.listNodes(this.#s);
  }
}
