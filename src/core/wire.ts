/**
 * @module
 * The JSON bodies of the HTTP API's answers (docs/api.md), declared once: the server renders them
 * (`src/http/serialize.ts` and `src/http/problem.ts` are typed by these) and the client reads them
 * (`src/client/types.ts` re-exports them under its own names: `Job`, `Schedule`, `Page`,
 * `TickResult`, `Nodes`), so a field added on one side only does not compile.
 *
 * Times are ISO-8601 strings, durations milliseconds under the API's field names (`timeout`,
 * `jitter`). An absent optional value is omitted, never `null` — except a schedule's
 * `nextRunAt`, which is `null` once it is completed (or paused with nothing left to fire). Pure
 * types: no code, no imports at run time.
 */
import type {
  JobError,
  JobLogLevel,
  JobStatus,
  Misfire,
  Overlap,
  ScheduleStatus,
} from "./model.ts";
import type { Placement } from "./placement.ts";

/** A job, as `GET /v1/jobs/:id` and the listings show it. */
export interface JobResource {
  id: string;
  handler: string;
  status: JobStatus;
  input: unknown;
  /** Present once `succeeded`. */
  result?: unknown;
  /** The last attempt's error. */
  error?: JobError;
  attempts: number;
  priority: number;
  tags: string[];
  runAt: string;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  /** Set on occurrences of a schedule. */
  scheduleId?: string;
  /** The occurrence's nominal fire time. */
  fireAt?: string;
  /** Handler timeout, ms. */
  timeout: number;
  retries: number;
  idempotencyKey?: string;
  /** The last value the handler reported (`ctx.progress()`) and when; absent until then. */
  progress?: { value: unknown; at: string };
  /** Present once a cancel was asked for while the job ran (it ends `cancelled`). */
  cancelRequested?: true;
  /** The jobs it waits for (ADR 0014); with `after`, what a failed one does to it. */
  after?: string[];
  onFailure?: "cancel" | "run";
  /** Where it may run (docs/adr/0017-placement.md). */
  placement?: Placement;
  /** The node that began its latest attempt. */
  node?: string;
  /** The last time a node refused it for its placement: a job no node takes shows it here. */
  refused?: { node: string; reason: string; at: string };
}

/** One entry of a job's log (`ctx.log()`), as `GET /v1/jobs/:id/logs` shows it. */
export interface JobLogEntryResource {
  at: string;
  /** The attempt that wrote it. */
  attempt: number;
  level: JobLogLevel;
  message: string;
  fields?: Record<string, unknown>;
}

/**
 * What a cancel answers: `200 { id, status: "cancelled" }` for a job that was queued, or `202` with
 * the running job (`status: "running"`, `cancelRequested: true`), which ends `cancelled` soon: the
 * whole job to a key that may read, `{ id, status, cancelRequested }` to one that may not.
 */
export type CancelResource =
  | { id: string; status: "cancelled" }
  | { id: string; status: "running"; cancelRequested: true }
  | JobResource;

/**
 * What a submit (and anything else that queues a job) answers — `202`, or `200` when the
 * idempotency key was replayed: the job without its payloads.
 */
export interface JobSummary {
  id: string;
  handler: string;
  /**
   * Left out, to a key without the `read` scope, of a replay's answer (the job may have run since
   * its submit, and a replay changes nothing, so it would read how the job ended) and of a job
   * with dependencies (`after`, a flow's parent: its status says how they ended).
   */
  status?: JobStatus;
  runAt: string;
  priority: number;
  /** Left out where `status` is. */
  attempts?: number;
  createdAt: string;
}

/** A schedule: its definition plus `status`, `nextRunAt`, `lastRunAt`, `runs`. */
export interface ScheduleResource {
  id: string;
  handler: string;
  schedule: string;
  tz: string;
  status: ScheduleStatus;
  /** Left out of a write's answer to a key without the `read` scope. */
  input?: unknown;
  priority: number;
  /** ms */
  timeout: number;
  retries: number;
  maxRuns?: number;
  startAt?: string;
  endAt?: string;
  misfire: Misfire;
  overlap: Overlap;
  /** ms */
  jitter: number;
  tags: string[];
  /** Where its occurrences may run. */
  placement?: Placement;
  /**
   * `null` once completed, or paused with nothing left to fire (it completes when resumed). While
   * paused, the time that was pending at the pause: a resume counts from then on.
   */
  nextRunAt: string | null;
  lastRunAt?: string;
  /** Occurrences dispatched so far. */
  runs: number;
  createdAt: string;
  updatedAt: string;
}

/** What `/v1/tick` answers. */
export type TickResource =
  | { leader: true; dispatched: number; recovered: number; due: number; tookMs: number }
  | { leader: false; leaseRemainingMs: number };

/** A node of the fleet, as `GET /v1/nodes` lists it (`src/http/routes/nodes.ts`). */
export interface NodeResource {
  /** The server's engine `instanceId`. */
  id: string;
  /** `live` while its last heartbeat is younger than `ttlMs` (the store's clock), else `stale`. */
  status: "live" | "stale";
  roles: string[];
  version: string;
  handlers: string[];
  /** Free-form labels (`TICKWORK_CAPABILITIES`). */
  capabilities: Record<string, string>;
  /** Deliveries its pull worker runs at once, and runs now (0 without one). */
  concurrency: number;
  inFlight: number;
  transport: string;
  hostname: string;
  pid: number;
  startedAt: string;
  lastSeen: string;
  /** Stale once `lastSeen` is older than this; dropped after 10 times it. */
  ttlMs: number;
}

/** What `GET /v1/nodes` answers. */
export interface NodesResource {
  nodes: NodeResource[];
  /** Where the app runs (`AppOptions.platform`). */
  deployment: "node" | "cloudflare" | "vercel" | "custom";
  /** Why the list is empty whatever runs: a serverless platform, or a store without a registry. */
  note?: string;
}

/** One page of a listing; `cursor` is absent on the last page. */
export interface PageResource<T> {
  items: T[];
  cursor?: string;
}

/** One field-level issue of a 400 or 422. */
export interface FieldIssue {
  /** Dotted path of the field (`"input.to"`, `"limit"`); `""` for the body or query as a whole. */
  path: string;
  message: string;
}

/** An RFC 9457 problem document (`application/problem+json`), as every error answer carries it. */
export interface Problem {
  /** `urn:tickwork:problem:<code>`, e.g. `urn:tickwork:problem:unknown_handler`. */
  type: string;
  /** The HTTP reason phrase of `status`. */
  title: string;
  status: number;
  /** What went wrong with this request, for a human. */
  detail: string;
  errors?: FieldIssue[];
}

/**
 * `event: status` of the realtime streams (`GET /v1/jobs/:id/stream`,
 * `GET /v1/schedules/:id/stream`): a job's status changed.
 */
export interface JobStatusUpdate {
  jobId: string;
  status: JobStatus;
  /** When it changed (the store's clock). */
  at: string;
  /** The event-log entry it comes from (`job.started`, …); absent when read from the job itself. */
  event?: string;
  /** `running`: the attempt begun; `failed`/`dead`: the attempt that ended. */
  attempt?: number;
  /** `failed`/`dead`: why the attempt ended. */
  error?: JobError;
}

/** `event: progress` of `GET /v1/jobs/:id/stream`: the handler reported a value (`ctx.progress()`). */
export interface JobProgressUpdate {
  jobId: string;
  value: unknown;
  at: string;
}
