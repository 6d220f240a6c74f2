/**
 * @module
 * The memory store's capped event log, as include "events" keeps the stream `{p}:events` on
 * Redis: ids `<ms>-<seq>` strictly increasing, the newest `eventsMaxLen` kept (exact trim), read
 * oldest first after an id (filtered by type and job) with the port's bound on the events one
 * call examines.
 */
import { ValidationError } from "../../core/errors.ts";
import { DEFAULT_TENANT, type JobError, type JobSpec } from "../../core/model.ts";
import {
  EVENT_SEQ_MAX,
  type EventsPage,
  type EventsQuery,
  eventIdAbove,
  type TickEvent,
} from "../port.ts";
import { clone } from "./shared.ts";

/** Events a call to `events()` examines at most (as the Redis store). */
const EVENTS_SCAN = 1_000;

/** A stored event with its parsed id, for ordering. */
interface StoredEvent {
  ms: number;
  seq: number;
  event: TickEvent;
}

/** The capped log, oldest first. */
export class EventLog {
  readonly #maxLen: number;
  /** The events, oldest first, from index `#start` on. */
  #events: StoredEvent[] = [];
  #start = 0;
  #last = { ms: 0, seq: -1 };
  /** Readers waiting for an event above their id (`waitFor`). */
  readonly #waiters = new Set<{ after: string | undefined; wake: () => void }>();

  /** Keeps the newest `maxLen` events; `0` keeps (and writes) none. */
  constructor(maxLen: number) {
    this.#maxLen = maxLen;
  }

  /** Appends an event to the capped log (id `<ms>-<seq>`, strictly increasing). */
  emit(now: number, fields: Omit<TickEvent, "id" | "at">): void {
    if (this.#maxLen === 0) return;
    const last = this.#last;
    const ms = Math.max(now, last.ms);
    const seq = ms === last.ms ? last.seq + 1 : 0;
    this.#last = { ms, seq };
    const { type, ...rest } = fields;
    const event: TickEvent = { id: `${ms}-${seq}`, type, at: now, ...rest };
    this.#events.push({ ms, seq, event });
    for (const waiter of this.#waiters) {
      if (eventIdAbove(event.id, waiter.after)) waiter.wake();
    }
    if (this.#events.length - this.#start > this.#maxLen) {
      this.#start = this.#events.length - this.#maxLen;
      // Compact now and then, so trimming stays amortised O(1).
      if (this.#start >= this.#maxLen) {
        this.#events = this.#events.slice(this.#start);
        this.#start = 0;
      }
    }
  }

  /**
   * Resolves once an event above `after` is in the log, after `timeoutMs`, or when `signal`
   * aborts (`EventWait.waitForEvents`).
   */
  waitFor(after: string | undefined, timeoutMs: number, signal: AbortSignal): Promise<void> {
    const last = this.#events[this.#events.length - 1];
    if (signal.aborted || (last && eventIdAbove(last.event.id, after))) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = {
        after,
        wake: () => {
          clearTimeout(timer);
          signal.removeEventListener("abort", waiter.wake);
          this.#waiters.delete(waiter);
          resolve();
        },
      };
      const timer = setTimeout(waiter.wake, Math.max(0, timeoutMs));
      signal.addEventListener("abort", waiter.wake, { once: true });
      this.#waiters.add(waiter);
    });
  }

  /**
   * One page of `events()` (copies), read at `now` (the store's clock). Throws a
   * `ValidationError` for a malformed `after`.
   */
  read(query: EventsQuery, now: number): EventsPage {
    const after = query.after === undefined ? { ms: -1, seq: -1 } : parseEventId(query.after);
    const types = query.types && query.types.length > 0 ? new Set(query.types) : undefined;
    const jobId = query.jobId ? query.jobId : undefined;
    const tenant = query.tenant;
    const limit = Math.max(1, Math.min(EVENTS_SCAN, Math.floor(query.limit)));
    // First stored event with an id above `after` (ids increase along the array).
    let lo = this.#start;
    let hi = this.#events.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const e = this.#events[mid] as StoredEvent;
      if (e.ms < after.ms || (e.ms === after.ms && e.seq <= after.seq)) lo = mid + 1;
      else hi = mid;
    }
    const events: TickEvent[] = [];
    let last: string | undefined;
    const end = Math.min(this.#events.length, lo + EVENTS_SCAN);
    let i = lo;
    for (; i < end && events.length < limit; i++) {
      const { event } = this.#events[i] as StoredEvent;
      last = event.id;
      if (
        (!types || types.has(event.type)) &&
        (jobId === undefined || event.jobId === jobId) &&
        (tenant === undefined || visibleTo(event, tenant))
      ) {
        events.push(event);
      }
    }
    if (tenant !== undefined) {
      const page = tenantPage(events, query.after, last, limit, i === this.#events.length, now);
      if (page) return clone(page);
    }
    // Stopped at `limit` or at the scan's bound with events after `last`: the caller reads on.
    const more = last !== undefined && i < this.#events.length;
    return clone(
      last === undefined ? { events } : more ? { events, last, more: true } : { events, last },
    );
  }
}

/**
 * A tenant's page, which never names another tenant's event nor says whether one follows (as the
 * Redis store's script): stopped at the limit, `last` is the last match and `more` is set without
 * looking on; at the end of the log, `last` is the latest of `after`, the last match and a
 * position one second before `now` (past others' events whether there were any, with a second of
 * room for a clock set back), absent when that is `after`, and `examined` the last event examined
 * when it is later. Undefined: a scan that stopped at its bound before the end, which names where
 * it stopped (the reader must get past those events).
 */
function tenantPage(
  events: TickEvent[],
  after: string | undefined,
  examined: string | undefined,
  limit: number,
  ended: boolean,
  now: number,
): EventsPage | undefined {
  const lastMatch = events.at(-1)?.id;
  if (events.length >= limit && lastMatch !== undefined) {
    return { events, last: lastMatch, more: true };
  }
  if (!ended) return undefined;
  let position = after;
  for (const id of [lastMatch, now - 1001 >= 0 ? `${now - 1001}-${EVENT_SEQ_MAX}` : undefined]) {
    if (id !== undefined && eventIdAbove(id, position)) position = id;
  }
  const page: EventsPage = { events };
  if (position !== undefined && position !== after) page.last = position;
  if (examined !== undefined && examined !== position) page.examined = examined;
  return page;
}

/** The fields every job event carries. */
export function jobFields(
  job: JobSpec,
): Pick<TickEvent, "jobId" | "handler" | "tenant" | "scheduleId"> {
  return {
    jobId: job.id,
    handler: job.handler,
    tenant: job.tenant,
    ...(job.scheduleId !== undefined ? { scheduleId: job.scheduleId } : {}),
  };
}

/** The part of a job error an event carries. */
export function errorOf(error: JobError): { name: string; message: string } {
  return { name: error.name, message: error.message };
}

/** Parses an event id `<ms>-<seq>`. */
function parseEventId(id: string): { ms: number; seq: number } {
  const match = /^(\d{1,16})-(\d{1,16})$/.exec(id);
  if (!match) {
    throw new ValidationError("invalid event id", [
      { path: "after", message: "not an event id (<ms>-<seq>)" },
    ]);
  }
  return { ms: Number(match[1]), seq: Number(match[2]) };
}

/**
 * Whether `tenant` may see `event` (`EventsQuery.tenant`): its own jobs' and schedules' events,
 * and the deployment's, which concern no job; a job's event without a tenant is the default
 * tenant's.
 */
function visibleTo(event: TickEvent, tenant: string): boolean {
  if (event.tenant !== undefined) return event.tenant === tenant;
  if (event.jobId === undefined && event.scheduleId === undefined) return true;
  return tenant === DEFAULT_TENANT;
}
