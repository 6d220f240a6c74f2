/**
 * @module
 * `RedisStore`: the Store port on Redis. Every method is exactly one Lua script call (one round
 * trip: EVALSHA, or EVALSHA + EVAL the first time a server sees the script), so every state
 * change is atomic and the tick's cost does not grow with the number of schedules stored.
 * Admission control (quota counters, the degradation controller) and observability (counters,
 * gauges, histograms and moving averages in `{p}:metrics`, the due backlog `{p}:pending`, the
 * event stream `{p}:events`) are read and written inside those same scripts: they cost billed
 * commands, never round trips. Works with any client that can EVAL/EVALSHA: `@upstash/redis`
 * over REST, ioredis over TCP.
 *
 * Layout: the operations by role of the port (`tick.ts`, `jobs.ts`, `runs.ts`, `schedules.ts`,
 * `observability.ts`, `nodes.ts`), each a thin encoder of one script's arguments and decoder of
 * its answer (`codec.ts`); the scripts are in `lua/`, generated into `scripts.generated.ts`.
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
import { retentionArg, toInt } from "./codec.ts";
import type { RedisContext } from "./context.ts";
import { type BlockingClient, EventWaiter } from "./event-waiter.ts";
import * as jobs from "./jobs.ts";
import { keys as buildKeys } from "./keys.ts";
import * as nodes from "./nodes.ts";
import * as observability from "./observability.ts";
import * as placement from "./placement.ts";
import * as progress from "./progress.ts";
import * as runs from "./runs.ts";
import * as schedules from "./schedules.ts";
import { type ScriptClient, safeEval } from "./script.ts";
import { scripts } from "./scripts.generated.ts";
import * as tick from "./tick.ts";
import * as webhooks from "./webhooks.ts";

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /** Anything with `eval` / `evalsha`: an `@upstash/redis` client, or `fromIoredis(ioredis)`. */
  client: ScriptClient;
  /**
   * Key prefix; every key lives under the hash tag `{prefix}` (one Redis Cluster slot).
   * @default "tw"
   */
  prefix?: string | undefined;
  /**
   * How long finished jobs and idempotency keys are kept, and how many finished jobs and runs:
   * durations from 1 ms to ten years, caps from 0 to 1e9 or `Infinity` (0 and Infinity: none).
   * A value out of range is a RangeError naming it (`resolveRetention`).
   * @default { jobMs: 7 days, idempotencyMs: 24 h, maxFinishedJobs: 50_000, maxRunsPerSchedule: 100 }
   */
  retention?: Partial<StoreRetention> | undefined;
  /**
   * How many lifecycle events the stream `{prefix}:events` keeps, trimmed on every write (from
   * 1,000 up approximately: Redis drops whole stream nodes, so up to 100 more may stay);
   * `0` writes no events at all (each event is one billed command).
   * @default 10_000
   */
  eventsMaxLen?: number | undefined;
  /**
   * Where a submit puts the job's delivery. `"outbox"`: in the outbox, for the transport to
   * publish (QStash, the local queue). `"streams"`: straight onto the Redis Streams queue inside
   * the submit's own script — one round trip, nothing to publish; use it with `RedisStreams` as
   * the transport, on the same Redis and prefix (docs/streams.md).
   * @default "outbox"
   */
  dispatch?: "outbox" | "streams" | undefined;
  /**
   * Redis over TCP: an ioredis client whose duplicate the realtime streams block on
   * (`XREAD BLOCK` on the event stream, `waitForEvents`); without it (Upstash over REST) the
   * store has no `waitForEvents` and the streams poll.
   */
  blocking?: BlockingClient | undefined;
}

/**
 * {@link Store} on Redis (Lua scripts, one per operation; see `lua/`).
 *
 * @example
 * import { Redis } from "@upstash/redis";
 * const store = new RedisStore({ client: Redis.fromEnv() });
 *
 * @example
 * import { Redis } from "ioredis";
 * const store = new RedisStore({ client: fromIoredis(new Redis(url)), prefix: "myapp" });
 */
export class RedisStore implements Store, NodeRegistry, WebhookLog {
  readonly #c: RedisContext;
  readonly #waiter: EventWaiter | undefined;
  /** Present with `options.blocking` (see `EventWait`). */
  readonly waitForEvents?: (
    after: string | undefined,
    timeoutMs: number,
    signal: AbortSignal,
  ) => Promise<void>;

  constructor(options: RedisStoreOptions) {
    const client = options.client;
    const keys = buildKeys(options.prefix);
    const run: RedisContext["run"] = (script, keys, args) => safeEval(client, script, keys, args);
    const dispatch = options.dispatch ?? "outbox";
    // Checked here: a NaN, Infinity or 1e300 duration failed every submit at run time.
    const storeRetention = resolveRetention(options.retention);
    const eventsMaxLen = String(Math.max(0, Math.floor(options.eventsMaxLen ?? 10_000)));
    this.#c = {
      keys,
      retention: storeRetention,
      eventsMaxLen,
      dispatch,
      run,
      // A Streams worker begins and finishes many deliveries at once: group them.
      runBatches:
        dispatch === "streams"
          ? runs.runBatches(run, keys, retentionArg(storeRetention), eventsMaxLen)
          : undefined,
      // And a server takes many submits at once (docs/adr/0043-submits-in-groups.md).
      submitBatch: dispatch === "streams" ? jobs.submitBatch(run, keys) : undefined,
    };
    if (options.blocking) {
      const waiter = new EventWaiter(options.blocking, this.#c.keys.events);
      this.#waiter = waiter;
      this.waitForEvents = (after, timeoutMs, signal) => waiter.wait(after, timeoutMs, signal);
    }
  }

  /** Closes the blocking connection of `waitForEvents`, if any (the client is the caller's). */
  async close(): Promise<void> {
    this.#waiter?.close();
  }

  async now(): Promise<number> {
    return toInt(await this.#c.run(scripts.now, [], []));
  }

  // ── lease ────────────────────────────────────────────────────────────────

  async acquireLease(
    name: string,
    ttlMs: number,
  ): Promise<{ acquired: true; token: number } | { acquired: false; remainingMs: number }> {
    return tick.acquireLease(this.#c, name, ttlMs);
  }

  async renewLease(name: string, token: number, ttlMs: number): Promise<boolean> {
    return tick.renewLease(this.#c, name, token, ttlMs);
  }

  async releaseLease(name: string, token: number): Promise<boolean> {
    return tick.releaseLease(this.#c, name, token);
  }

  // ── tick ─────────────────────────────────────────────────────────────────

  async beginTick(opts: BeginTickOptions): Promise<BeginTickResult> {
    return tick.beginTick(this.#c, opts);
  }

  async nextDue(token: number, opts: NextDueOptions): Promise<NextDueResult> {
    return tick.nextDue(this.#c, token, opts);
  }

  async commitTick(token: number, commits: ScheduleCommit[]): Promise<CommitResult> {
    return tick.commitTick(this.#c, token, commits);
  }

  async ackOutbox(acks: OutboxAck[], reapAfterMs = DEFAULT_REAP_AFTER_MS): Promise<void> {
    return tick.ackOutbox(this.#c, acks, reapAfterMs);
  }

  async deferOutbox(defers: OutboxDefer[]): Promise<void> {
    return tick.deferOutbox(this.#c, defers);
  }

  async endTick(
    token: number,
    ackIds: OutboxAck[],
    report?: { tickMs: number; acquireMs: number },
    reapAfterMs = DEFAULT_REAP_AFTER_MS,
  ): Promise<void> {
    return tick.endTick(this.#c, token, ackIds, report, reapAfterMs);
  }

  // ── jobs ─────────────────────────────────────────────────────────────────

  // Not `async`: the function it calls is (one promise less per submit).
  submitJob(
    job: NewJob,
    timing: SubmitTiming,
    admission?: Admission,
  ): Promise<SubmitResult | SubmitDenied> {
    return jobs.submitJob(this.#c, job, timing, admission);
  }

  async submitJobs(
    items: SubmitItem[],
    timing: { recoverGraceMs: number },
    admission?: Admission,
  ): Promise<SubmitItemResult[]> {
    return batch.submitJobs(this.#c, items, timing, admission);
  }

  // ── webhooks (docs/webhooks.md) ───────────────────────────────────────────

  async countWebhook(endpoint: string, outcome: WebhookOutcome): Promise<void> {
    return webhooks.countWebhook(this.#c, endpoint, outcome);
  }

  async webhookCounts(): Promise<Map<string, Map<WebhookOutcome, number>>> {
    return webhooks.webhookCounts(this.#c);
  }

  async webhookDeliveries(
    endpoints: readonly string[],
    limit: number,
  ): Promise<Map<string, WebhookDelivery[]>> {
    return webhooks.webhookDeliveries(this.#c, endpoints, limit);
  }

  async getJob(id: string, tenant?: string): Promise<JobRecord | null> {
    return jobs.getJob(this.#c, id, tenant);
  }

  async jobsExist(ids: readonly string[], tenant: string): Promise<boolean[]> {
    return jobs.jobsExist(this.#c, ids, tenant);
  }

  async cancelJob(id: string): Promise<CancelResult> {
    return jobs.cancelJob(this.#c, id);
  }

  async listJobs(query: ListJobsQuery): Promise<Page<JobRecord>> {
    return jobs.listJobs(this.#c, query);
  }

  // ── the running attempt: progress, log, cancel request ───────────────────

  async reportProgress(id: string, attempt: number, valueJson: string): Promise<RunWriteResult> {
    return progress.reportProgress(this.#c, id, attempt, valueJson);
  }

  async appendLog(id: string, attempt: number, entryJson: string): Promise<RunWriteResult> {
    return progress.appendLog(this.#c, id, attempt, entryJson);
  }

  async readLogs(id: string, query: LogsQuery): Promise<Page<JobLogEntry> | null> {
    return progress.readLogs(this.#c, id, query);
  }

  async cancelRequested(id: string, attempt: number): Promise<boolean> {
    return progress.cancelRequested(this.#c, id, attempt);
  }

  async refusePlacement(
    spec: JobSpec,
    refusal: PlacementRefusal,
    reapAfterMs: number,
  ): Promise<JobStatus | null> {
    return placement.refusePlacement(this.#c, spec, refusal, reapAfterMs);
  }

  // Not `async`: the promise is passed on as it is (an async method returning one waits two
  // more turns of the microtask queue, once per delivery).
  beginRun(
    spec: JobSpec,
    leaseMs: number,
    reapAfterMs = DEFAULT_REAP_AFTER_MS,
    token?: DeliveryToken,
    limit?: RunLimit,
    rate?: RateLimit,
    node?: string,
  ): Promise<BeginRunResult> {
    return runs.beginRun(this.#c, spec, leaseMs, reapAfterMs, token, limit, rate, node);
  }

  finishRun(
    id: string,
    attempt: number,
    outcome: RunOutcome,
    reapAfterMs = DEFAULT_REAP_AFTER_MS,
    options?: FinishRunOptions,
  ): Promise<FinishRunResult> {
    return runs.finishRun(this.#c, id, attempt, outcome, reapAfterMs, options);
  }

  async markDead(
    spec: JobSpec,
    error: JobError,
    expect?: { attempts: number },
    token?: DeliveryToken,
  ): Promise<JobRecord | null> {
    return runs.markDead(this.#c, spec, error, expect, token);
  }

  async listDead(query: DeadQuery): Promise<Page<JobRecord>> {
    return jobs.listDead(this.#c, query);
  }

  async retryDead(
    id: string,
    timing: { recoverGraceMs: number },
  ): Promise<{ job: JobRecord; message: OutboxMessage } | null> {
    return jobs.retryDead(this.#c, id, timing);
  }

  async deleteDead(id: string): Promise<boolean> {
    return jobs.deleteDead(this.#c, id);
  }

  // ── schedules ────────────────────────────────────────────────────────────

  async putSchedule(
    schedule: ScheduleRecord,
    expectRev?: number,
    admission?: Pick<Admission, "quota">,
  ): Promise<PutScheduleResult> {
    return schedules.putSchedule(this.#c, schedule, expectRev, admission);
  }

  async getSchedule(id: string): Promise<ScheduleRecord | null> {
    return schedules.getSchedule(this.#c, id);
  }

  async listSchedules(query: ListSchedulesQuery): Promise<Page<ScheduleRecord>> {
    return schedules.listSchedules(this.#c, query);
  }

  async deleteSchedule(id: string): Promise<boolean> {
    return schedules.deleteSchedule(this.#c, id);
  }

  async listRuns(
    scheduleId: string,
    query: { limit: number; cursor?: string },
  ): Promise<Page<JobRecord>> {
    return schedules.listRuns(this.#c, scheduleId, query);
  }

  // ── observability ──────────────────────────────────────────────────────

  async stats(degradation?: DegradationPolicy): Promise<StoreStats> {
    return observability.stats(this.#c, degradation);
  }

  async events(query: EventsQuery): Promise<EventsPage> {
    return observability.events(this.#c, query);
  }

  // ── node registry ──────────────────────────────────────────────────────

  async heartbeatNode(node: NodeInfo, ttlMs: number): Promise<void> {
    return nodes.heartbeatNode(this.#c, node, ttlMs);
  }

  async removeNode(id: string): Promise<void> {
    return nodes.removeNode(this.#c, id);
  }

  async listNodes(): Promise<NodeRecord[]> {
    return nodes.listNodes(this.#c);
  }
}
