/**
 * @module
 * `GET /v1/schedules/:id/stream`: the status changes of a schedule's runs (its occurrences) as
 * Server-Sent Events, and each run's final job (`done`), from the event log: the events after
 * the client's `Last-Event-ID`, else from the moment the stream opens. It never ends by itself
 * (a schedule keeps firing): the server ends it after `maxMs` and the client reconnects
 * (docs/api.md "Realtime updates").
 */
import { RecordNotFoundError } from "../../core/errors.ts";
import { FINAL_JOB_STATUSES } from "../../core/model.ts";
import type { Actor } from "../../engine/broker.ts";
import type { Engine } from "../../engine/index.ts";
import type { EventType } from "../../store/port.ts";
import { jobResource } from "../serialize.ts";
import { statusOfEvent, statusUpdate } from "./job-stream.ts";
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

/** The events a run's status follows. */
const RUN_EVENTS: EventType[] = [
  "job.dispatched",
  "job.started",
  "job.failed",
  "job.retried",
  "job.succeeded",
  "job.dead",
  "job.cancelled",
  "job.skipped",
];

/** Where a fresh schedule stream starts: at the store's `now` (events at or after it). */
export function startNow(now: number): StreamPosition {
  return positionBefore(now);
}

/** What `runScheduleStream` needs. */
export interface ScheduleStreamContext {
  engine: Engine;
  config: StreamConfig;
  actor: Actor;
  /** The schedule's store id (`scheduleStoreId`) and tenant, as its runs' events carry them. */
  scheduleId: string;
  tenant: string;
  /** From `Last-Event-ID`, else {@link startNow}. */
  start: StreamPosition;
  out: SseWriter;
  signal: AbortSignal;
}

/** Writes the schedule's runs' updates until `maxMs` passes or the client leaves. */
export async function runScheduleStream(ctx: ScheduleStreamContext): Promise<void> {
  const { engine, config, out, signal } = ctx;
  const store = engine.store;
  const deadline = Date.now() + config.maxMs;
  const pos: StreamPosition = { ...ctx.start };
  const blocking = store.waitForEvents ? store.waitForEvents.bind(store) : undefined;
  /**
   * Where the log is read on from: past every event examined, while `pos.after` (what the client
   * is sent) may stop short of others' events (`EventsPage.examined`).
   */
  let readFrom = pos.after;
  // Where the stream starts, before any event: a client cut before one resumes from here, not
  // from a later "now" that would skip the runs in between.
  out.position(positionId(pos));

  while (!signal.aborted) {
    const started = Date.now();
    for (;;) {
      // Its tenant's view of the log: the positions the stream sends (its heartbeat's too)
      // never name another tenant's event (the store's `tenant` filter).
      const page = await store.events({
        after: readFrom,
        types: RUN_EVENTS,
        tenant: ctx.tenant,
        limit: EVENTS_PAGE,
      });
      for (const event of page.events) {
        if (event.scheduleId !== ctx.scheduleId || event.tenant !== ctx.tenant) continue;
        const status = statusOfEvent(event);
        if (status === null || event.jobId === undefined) continue;
        const final = FINAL_JOB_STATUSES.includes(status);
        // A run's final status carries the position before it, its `done` the one after: a
        // client that resumes from the status (cut before the `done`) gets both again.
        const before = positionId(pos);
        pos.after = event.id;
        out.event("status", final ? before : positionId(pos), statusUpdate(event, status));
        if (final) {
          const job = await engine.broker.getJob(event.jobId, ctx.actor).catch((error) => {
            if (error instanceof RecordNotFoundError) return null;
            throw error;
          });
          if (job) out.event("done", positionId(pos), jobResource(job));
        }
      }
      if (page.last !== undefined) pos.after = page.last;
      readFrom = page.examined ?? page.last ?? readFrom;
      if (!page.more || signal.aborted) break;
    }
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
    // The heartbeat carries the position the stream has read to (its tenant's other events
    // included, and past others' by the store's rule), so a reconnect after a quiet stretch
    // resumes from there.
    if (out.idleMs() >= config.heartbeatMs) out.position(positionId(pos));
    if (Date.now() >= deadline) return;
  }
}
