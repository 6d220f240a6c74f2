/**
 * @module
 * Server-Sent Events on Web streams only (a `ReadableStream` body), so the same code streams on
 * Node, Vercel and workerd: the framing (`event:`, `id:`, `data:`, `retry:`, comment heartbeats),
 * the stream id the realtime routes put on every event, and the settings that bound a stream
 * (docs/api.md "Realtime updates", docs/adr/0021-realtime-streams.md).
 */
import { InvalidRequestError, TooManyStreamsError } from "../../core/errors.ts";
import type { JobStatus } from "../../core/model.ts";
import { DATE_LIMIT_MS } from "../../core/schedule/time-zone.ts";
import { EVENT_SEQ_MAX } from "../../store/port/event-wait.ts";

/** How long a stream lives, how often it shows it is alive, how often it polls. */
export interface StreamConfig {
  /** The server ends a stream after this long; the client reconnects with `Last-Event-ID`. */
  maxMs: number;
  /** A comment line (`: keep-alive`) after this long without anything written. */
  heartbeatMs: number;
  /**
   * Longest pause between two reads of the job (its progress) and, on a store that cannot block
   * (Upstash over REST), of the event log.
   */
  pollMs: number;
  /** The `retry:` hint: how long a client waits before it reconnects. */
  retryMs: number;
  /**
   * Streams one API key (or, without keys, one tenant) may hold open at once in this process:
   * each open stream reads the store every round, so one caller opening hundreds would make the
   * store work for all of them. One more gets 429 `too_many_streams` with `Retry-After`.
   */
  maxPerKey: number;
}

/** The defaults: 4 min streams (under Vercel's default 300 s), 15 s heartbeats, 1 s polls. */
export const STREAM_DEFAULTS: StreamConfig = {
  maxMs: 240_000,
  heartbeatMs: 15_000,
  pollMs: 1_000,
  retryMs: 1_000,
  maxPerKey: 32,
};

/** The settings in milliseconds (the others are counts). */
const DURATIONS = ["maxMs", "heartbeatMs", "pollMs", "retryMs"] as const;

/** Settings with defaults applied; `RangeError` for one out of range. */
export function resolveStreamConfig(options: Partial<StreamConfig> = {}): StreamConfig {
  const config = { ...STREAM_DEFAULTS };
  for (const key of DURATIONS) {
    const value = options[key];
    if (value === undefined) continue;
    if (!Number.isFinite(value) || value < 10 || value > 3_600_000) {
      throw new RangeError(`stream.${key} must be from 10 ms to 1 h, not ${value}`);
    }
    config[key] = value;
  }
  const perKey = options.maxPerKey;
  if (perKey !== undefined) {
    if (!Number.isInteger(perKey) || perKey < 1 || perKey > 100_000) {
      throw new RangeError(`stream.maxPerKey must be an integer from 1 to 100000, not ${perKey}`);
    }
    config.maxPerKey = perKey;
  }
  return config;
}

/** How long a caller refused a stream (429 `too_many_streams`) is asked to wait. */
export const STREAM_SLOT_RETRY_MS = 5_000;

/**
 * How long past `maxMs` a slot outlives its stream at the most: on workerd a stream whose client
 * left is never told so (its `finally` does not run), and its slot would stay taken for the
 * isolate's life.
 */
export const STREAM_SLOT_GRACE_MS = 30_000;

/**
 * The streams each caller holds open in this process, against `stream.maxPerKey`: per key, when
 * each slot lapses (`maxMs` and {@link STREAM_SLOT_GRACE_MS} after it was taken: no stream lives
 * longer), dropped when given back or lapsed. A key with no slot left is dropped too (a map that
 * only grows would keep every key ever seen).
 */
export class StreamSlots {
  readonly #open = new Map<string, Set<{ until: number }>>();
  readonly #max: number;
  readonly #lifeMs: number;
  readonly #now: () => number;

  constructor(max: number, streamMaxMs: number, now: () => number = Date.now) {
    this.#max = max;
    this.#lifeMs = streamMaxMs + STREAM_SLOT_GRACE_MS;
    this.#now = now;
  }

  /**
   * A slot for `key`, and the function that gives it back (once, however often it is called).
   *
   * @throws TooManyStreamsError (429) when `key` holds `maxPerKey` streams already.
   */
  take(key: string): () => void {
    const now = this.#now();
    let slots = this.#open.get(key);
    if (slots) {
      for (const slot of slots) if (slot.until <= now) slots.delete(slot);
    } else {
      slots = new Set();
      this.#open.set(key, slots);
    }
    if (slots.size >= this.#max) throw new TooManyStreamsError(this.#max, STREAM_SLOT_RETRY_MS);
    const slot = { until: now + this.#lifeMs };
    slots.add(slot);
    const held = slots;
    return () => {
      held.delete(slot);
      if (held.size === 0 && this.#open.get(key) === held) this.#open.delete(key);
    };
  }

  /** Streams `key` holds open (lapsed slots included until the key's next `take`). */
  count(key: string): number {
    return this.#open.get(key)?.size ?? 0;
  }
}

/**
 * Where a stream is: the last event-log id it has read past, the time of the last progress value
 * it sent (0: none) and, on a job's stream, the last status it sent. Every event's `id:` is
 * `<ms>-<seq>.<progressAt>`, with `.<status>` once a job's stream has sent one, which a client
 * sends back as `Last-Event-ID`: a resumed stream knows what its client last saw.
 */
export interface StreamPosition {
  after: string;
  progressAt: number;
  status?: JobStatus;
}

/** Every job status, the names a stream id may end with. */
const STATUS_NAMES: Record<JobStatus, true> = {
  waiting: true,
  queued: true,
  running: true,
  succeeded: true,
  failed: true,
  dead: true,
  cancelled: true,
  skipped: true,
};

/** Events one read of the log examines (the store's bound). */
export const EVENTS_PAGE = 1_000;
/** On a store that blocks, rounds of reads start at least this far apart (a busy log wakes often). */
export const MIN_ROUND_MS = 100;

/** The position just before the events of millisecond `ms` (a stream starting there sees them). */
export function positionBefore(ms: number): StreamPosition {
  return { after: `${Math.max(0, ms - 1)}-${EVENT_SEQ_MAX}`, progressAt: 0 };
}

/** The `id:` of an event sent at `position`. */
export function positionId(position: StreamPosition): string {
  const id = `${position.after}.${position.progressAt}`;
  return position.status === undefined ? id : `${id}.${position.status}`;
}

/**
 * The position a `Last-Event-ID` names: `<ms>-<seq>.<progressAt>` as the streams send it, or a
 * bare event id `<ms>-<seq>` (as `/v1/events` lists them). `undefined` when absent or empty.
 *
 * @throws InvalidRequestError (400) for anything else.
 */
export function parseLastEventId(value: string | undefined): StreamPosition | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  const match = /^(\d{1,16}-\d{1,16})(?:\.(\d{1,16})(?:\.([a-z]{1,16}))?)?$/.exec(value.trim());
  const status = match?.[3];
  // A progress time is a time a `Date` holds: past it (9999999999999999), the id sent back
  // read 10000000000000000, which this refused on the next reconnect.
  const progressAt = Number(match?.[2] ?? 0);
  if (
    !match ||
    (status !== undefined && !Object.hasOwn(STATUS_NAMES, status)) ||
    progressAt > DATE_LIMIT_MS
  ) {
    throw new InvalidRequestError("invalid Last-Event-ID", [
      {
        path: "Last-Event-ID",
        message:
          "not an id this stream sent (<ms>-<seq>.<progressAt>[.<status>], or an event id <ms>-<seq>)",
      },
    ]);
  }
  const position: StreamPosition = { after: match[1] as string, progressAt };
  if (status !== undefined) position.status = status as JobStatus;
  return position;
}

/**
 * Bytes a stream queues for a client that does not take them (beyond what the connection's
 * buffers hold): a stream further behind ends, as at `maxMs`, and the client resumes with
 * `Last-Event-ID` when it reads again. An event is always queued whole, however large.
 */
export const MAX_QUEUED_BYTES = 262_144;

/** What a stream's body writes to. */
export interface SseWriter {
  /** One event: `data` is sent as one line of JSON. */
  event(name: string, id: string, data: unknown): void;
  /** A comment line (ignored by clients; keeps proxies and the connection alive). */
  comment(text: string): void;
  /**
   * An `id:` alone: no event, but a client's last event id becomes `id` (as `EventSource` keeps
   * it), so a reconnect resumes from there even when no event came.
   */
  position(id: string): void;
  /** Milliseconds since anything was written. */
  idleMs(): number;
}

/**
 * A `text/event-stream` response whose body `run` writes. The stream ends when `run` returns or
 * throws (a client reconnects with the last id it saw), and `run`'s signal aborts when the
 * client goes away (`request`'s signal, or the body being cancelled); `onEnd` is called once it
 * has ended (at once for `HEAD`). A `HEAD` request gets the
 * headers alone and `run` never starts: Hono answers `HEAD` with the `GET` route's response and
 * drops its body without cancelling it, which would leave the stream reading the store for its
 * whole `maxMs` with nobody to read it.
 *
 * @example
 * return sseResponse(c.req.raw, 1_000, async (out, signal) => {
 *   out.event("status", "1-0.0", { status: "queued" });
 * });
 */
export function sseResponse(
  request: Request,
  retryMs: number,
  run: (out: SseWriter, signal: AbortSignal) => Promise<void>,
  onError: (error: unknown) => void,
  onEnd?: () => void,
): Response {
  if (request.method === "HEAD") {
    onEnd?.();
    return new Response(null, { status: 200, headers: SSE_HEADERS });
  }
  const requestSignal = request.signal;
  const abort = new AbortController();
  const stop = () => abort.abort();
  requestSignal.addEventListener("abort", stop, { once: true });
  const encoder = new TextEncoder();
  let lastWrite = Date.now();
  const source: UnderlyingDefaultSource<Uint8Array> = {
    start(controller) {
      const write = (text: string) => {
        if (abort.signal.aborted) return;
        // A client that stopped reading: what it does not take piles up here, for as long as the
        // stream lives and then until the client closes the connection. Past the bound the
        // stream ends, as at `maxMs`: the client resumes with the last id it read.
        if ((controller.desiredSize ?? 0) < 0) {
          abort.abort();
          try {
            controller.close();
          } catch {
            // Already closed by a cancel.
          }
          return;
        }
        lastWrite = Date.now();
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          abort.abort();
        }
      };
      const out: SseWriter = {
        event: (name, id, data) =>
          write(`event: ${name}\nid: ${id}\ndata: ${JSON.stringify(data)}\n\n`),
        comment: (text) => write(`: ${text.replace(/[\r\n]+/g, " ")}\n\n`),
        position: (id) => write(`id: ${id}\n\n`),
        idleMs: () => Date.now() - lastWrite,
      };
      // Sent at once, so the client has the headers and the reconnect delay before any event.
      write(`retry: ${Math.round(retryMs)}\n\n`);
      void run(out, abort.signal)
        .catch((error) => {
          if (!abort.signal.aborted) onError(error);
        })
        .finally(() => {
          onEnd?.();
          requestSignal.removeEventListener("abort", stop);
          if (!abort.signal.aborted) {
            try {
              controller.close();
            } catch {
              // Already closed by a cancel.
            }
          }
          abort.abort();
        });
    },
    cancel() {
      abort.abort();
    },
  };
  // Counted in bytes: `desiredSize` below 0 is more than MAX_QUEUED_BYTES waiting for the client.
  const body = new ReadableStream(source, {
    highWaterMark: MAX_QUEUED_BYTES,
    size: (chunk) => chunk.byteLength,
  });
  return new Response(body, { status: 200, headers: SSE_HEADERS });
}

const SSE_HEADERS = {
  "Content-Type": "text/event-stream; charset=utf-8",
  "Cache-Control": "no-store",
  // Tell nginx-style proxies not to buffer the stream.
  "X-Accel-Buffering": "no",
};

/** Resolves after `ms`, or at once when `signal` aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal.addEventListener("abort", done, { once: true });
  });
}
