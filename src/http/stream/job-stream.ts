/**
 * @module
 * `GET /v1/jobs/:id/stream`: one job's status changes, progress and final answer as Server-Sent
 * Events (docs/api.md "Realtime updates"). The event log is the source of truth for status
 * changes (`job.created`, `job.started`, …, read with `events({ jobId })` from the job's creation
 * or the client's `Last-Event-ID`), the job record for progress and the final result; a change the
 * log no longer holds (trimmed, or `eventsMaxLen: 0`) is read from the record instead, so a stream
 * always ends with the final status. Between reads it blocks on the store's `waitForEvents` (Redis
 * over TCP, memory) or polls every `pollMs` (Upstash over REST), and ends after `maxMs`
 * (docs/adr/0021-realtime-streams.md).
 */
import { RecordNotFoundError } from "../../core/errors.ts";
import { FINAL_JOB_STATUSES, type JobRecord, type JobStatus } from "../../core/model.ts";
import type { JobStatusUpdate } from "../../core/wire.ts";
import type { Actor } from "../../engine/broker.ts";
import type { Engine } from "../../engine/index.ts";
import type { TickEvent } from "../../store/port.ts";
import { jobResource } from "../serialize.ts";
import {
  EVENTS_PAGE,
  MIN_ROUND_MS,
  pause,
  positionBefore,
  positionId,
  type SseWriter,
  type StreamConfig,
  type StreamPosition,
} from "./sse.ts";

/**
 * The status a job event leaves the job in. `job.created`: the status it was stored with (`waiting`
 * when its dependencies hold it; none for one cancelled at once: its `job.cancelled` follows).
 */
export function statusOfEvent(event: Pick<TickEvent, "type" | "status">): JobStatus | null {
  switch (event.type) {
    case "job.created":
      return event.status === "cancelled" ? null : (event.status ?? "queued");
    case "job.dispatched":
    case "job.retried":
      return "queued";
    case "job.started":
      return "running";
    case "job.failed":
      return "failed";
    case "job.succeeded":
      return "succeeded";
    case "job.dead":
      return "dead";
    case "job.cancelled":
      return "cancelled";
    case "job.skipped":
      return "skipped";
    default:
      return null;
  }
}

/** A status change as the streams send it, from an event of the log. */
export function statusUpdate(event: TickEvent, status: JobStatus): JobStatusUpdate {
  return {
    jobId: event.jobId ?? "",
    status,
    at: new Date(event.at).toISOString(),
    event: event.type,
    ...(event.attempt !== undefined ? { attempt: event.attempt } : {}),
    ...(event.error ? { error: { name: event.error.name, message: event.error.message } } : {}),
  };
}

/** Where a fresh stream starts reading the log: just before the job was created. */
export function startOf(job: Pick<JobRecord, "createdAt">): StreamPosition {
  return positionBefore(job.createdAt);
}

/** What `runJobStream` needs. */
export interface JobStreamContext {
  engine: Engine;
  config: StreamConfig;
  actor: Actor;
  /** The id as the path has it (checked). */
  id: string;
  /** The job as read before the response began (the 404 check). */
  job: JobRecord;
  /** From `Last-Event-ID`; absent on a fresh stream. */
  resume: StreamPosition | undefined;
  out: SseWriter;
  signal: AbortSignal;
}

/**
 * Writes the job's updates until it is final (`status` then `done`), `maxMs` passes, the job
 * disappears (retention), or the client leaves.
 */
export async function runJobStream(ctx: JobStreamContext): Promise<void> {
  const { engine, config, out, signal } = ctx;
  const store = engine.store;
  const deadline = Date.now() + config.maxMs;
  const pos: StreamPosition = ctx.resume ? { ...ctx.resume } : startOf(ctx.job);
  const blocking = store.waitForEvents ? store.waitForEvents.bind(store) : undefined;
  /**
   * Where the log is read on from: past every event examined, while `pos.after` (what the client
   * is sent) may stop short of others' events (`EventsPage.examined`).
   */
  let readFrom = pos.after;
  /** The last status the client saw: sent on this connection, or named by its `Last-Event-ID`. */
  let last: JobStatus | undefined = pos.status;
  let first = true;
  let signature = "";
  let job: JobRecord | null = ctx.job;

  /** The last progress value this connection sent, as JSON: a second value of the same ms differs. */
  let sentProgress: string | undefined;
  const sendProgress = (record: JobRecord) => {
    const progress = record.progress;
    if (!progress || progress.at < pos.progressAt) return;
    const json = JSON.stringify(progress.value);
    // Same ms as the last one sent: sent again only when its value changed (a resumed stream does
    // not know the value its client saw, and sends none).
    if (progress.at === pos.progressAt && (sentProgress === undefined || sentProgress === json)) {
      return;
    }
    sentProgress = json;
    pos.progressAt = progress.at;
    out.event("progress", positionId(pos), {
      jobId: record.id,
      value: progress.value,
      at: new Date(progress.at).toISOString(),
    });
  };
  const sendStatus = (update: JobStatusUpdate) => {
    last = update.status;
    pos.status = last;
    out.event("status", positionId(pos), update);
  };
  /** A status read from the record: the log does not hold the change (trimmed or not written). */
  const sendRecordStatus = (record: JobRecord) => {
    const at = record.finishedAt ?? record.startedAt ?? record.createdAt;
    sendStatus({
      jobId: record.id,
      status: record.status,
      at: new Date(at).toISOString(),
      ...(record.attempts > 0 ? { attempt: record.attempts } : {}),
      ...(record.error && record.status !== "succeeded" ? { error: record.error } : {}),
    });
  };

  while (!signal.aborted && job) {
    const started = Date.now();
    const record: JobRecord = job;
    // The record is read before the log: every change it shows has its event in the log by now.
    const sig = `${record.status}|${record.attempts}|${record.startedAt}|${record.finishedAt}`;
    let final = false;
    /** This round's log read showed a status event: the record may be older than the log. */
    let sawEvent = false;
    // A waiting job's release to the queue writes no event (ADR 0014): read it from the record.
    if (last === "waiting" && record.status !== "waiting" && record.status !== "cancelled") {
      sendStatus({ jobId: record.id, status: "queued", at: new Date().toISOString() });
    }
    // Polling: the log is read only when the job changed (one read per poll otherwise).
    if (blocking || first || sig !== signature) {
      for (;;) {
        // Its tenant's view of the log: a position the stream sends never names another
        // tenant's event (the store's `tenant` filter).
        const page = await store.events({
          after: readFrom,
          jobId: record.id,
          tenant: record.tenant,
          limit: EVENTS_PAGE,
        });
        for (const event of page.events) {
          const status = statusOfEvent(event);
          if (status === null) continue;
          sawEvent = true;
          // The last progress goes before the final status, with the position before it: a
          // client resuming from the progress' id still gets the final status.
          if (FINAL_JOB_STATUSES.includes(status)) sendProgress(record);
          pos.after = event.id;
          sendStatus(statusUpdate(event, status));
          // Final unless a later event moves the job on: a dead job retried from the
          // dead-letter list (`job.retried`) runs again, and the stream follows it.
          final = FINAL_JOB_STATUSES.includes(status);
        }
        if (signal.aborted) break;
        if (page.last !== undefined) pos.after = page.last;
        readFrom = page.examined ?? page.last ?? readFrom;
        if (!page.more) break;
      }
      // A status the log does not hold (its events trimmed, or never written) is read from the
      // record: a fresh stream still starts with the job's status, and a resumed one is told of
      // a change its client missed.
      if (!sawEvent && !final && record.status !== last) {
        if (FINAL_JOB_STATUSES.includes(record.status)) sendProgress(record);
        sendRecordStatus(record);
        final = FINAL_JOB_STATUSES.includes(record.status);
      }
    }
    signature = sig;
    first = false;
    // Trusted only when the log showed nothing newer: a record read just before a retry from the
    // dead-letter list still says `dead`, while the log already holds `job.retried`.
    if (!final && !sawEvent && FINAL_JOB_STATUSES.includes(record.status)) {
      // Final in the record, not in the log after our position: its event was trimmed.
      sendProgress(record);
      sendRecordStatus(record);
      final = true;
    }
    if (final) {
      const done = await readJob(ctx);
      out.event("done", positionId(pos), jobResource(done ?? record));
      return;
    }
    sendProgress(record);

    const left = deadline - Date.now();
    if (left <= 0 || signal.aborted) return;
    const wait = Math.max(0, Math.min(config.pollMs, left, config.heartbeatMs - out.idleMs()));
    if (blocking) {
      await blocking(readFrom, wait, signal);
      const gap = MIN_ROUND_MS - (Date.now() - started);
      if (gap > 0 && !signal.aborted) await pause(Math.min(gap, deadline - Date.now()), signal);
    } else {
      await pause(wait, signal);
    }
    if (signal.aborted) return;
    if (out.idleMs() >= config.heartbeatMs) out.comment("keep-alive");
    if (Date.now() >= deadline) return;
    job = await readJob(ctx);
  }
}

/** The job now, as the actor may see it; `null` once it is gone (retention, another tenant). */
async function readJob(ctx: JobStreamContext): Promise<JobRecord | null> {
  try {
    return await ctx.engine.broker.getJob(ctx.id, ctx.actor);
  } catch (error) {
    if (error instanceof RecordNotFoundError) return null;
    throw error;
  }
}
