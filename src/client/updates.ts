/**
 * @module
 * The realtime streams on the client: a Server-Sent Events parser over `fetch` (Web streams only,
 * no `EventSource`: it works in Node, Workers and browsers and sends the API key as a header), and
 * the async iterator behind `job.updates()` and `client.schedules.updates(id)`, which reconnects
 * with `Last-Event-ID` when a connection drops or the server ends it, and ends after a job's
 * `done` (docs/api.md "Realtime updates").
 */
import { MAX_TIMER_MS } from "../core/duration.ts";
import {
  apiError,
  RateLimitedError,
  RequestTimeoutError,
  TickworkApiError,
  UnavailableError,
} from "./errors.ts";
import { type Caller, redirected } from "./request.ts";
import type { Job, JobProgressUpdate, JobStatusUpdate } from "./types.ts";

/** A job whose `result` is typed (`R`: the handler's result when the handle is typed). */
export type TypedJob<R> = Omit<Job, "result"> & { result?: R };

/**
 * One update of a stream. `id` is the event's id: pass it as `lastEventId` to resume after it.
 * `done` comes once, last, with the final job (`result` or `error`).
 */
export type JobUpdate<R = unknown> =
  | ({ type: "status"; id: string } & JobStatusUpdate)
  | ({ type: "progress"; id: string } & JobProgressUpdate)
  | { type: "done"; id: string; job: TypedJob<R> };

/** Options of `job.updates()`. */
export interface UpdatesOptions {
  /** Stop: the iterator ends and the request is aborted. */
  signal?: AbortSignal | undefined;
  /** Resume after this event (an update's `id`): nothing before it is sent again. */
  lastEventId?: string | undefined;
  /**
   * Connection failures in a row (network errors, 5xx and 429 answers, a stream cut mid-way) after which
   * the iterator throws the last one. A stream the server ended on time does not count.
   * @default 5
   */
  maxRetries?: number | undefined;
  /**
   * Reconnect (from the last update, counted as a failure) when the open stream brings nothing
   * for this long: a connection a proxy or a network dropped without closing it. The server
   * sends something at least every `stream.heartbeatMs` (15 s by default): keep this above it.
   * `0` (or anything but a number of ms up to 2^31 − 1): no limit.
   * @default 45_000
   */
  idleTimeoutMs?: number | undefined;
}

/** What a stream does when nothing comes through for `idleTimeoutMs`: it is cut and re-opened. */
export class StreamIdleError extends Error {
  override name = "StreamIdleError";
  constructor(what: string, ms: number) {
    super(`${what}: nothing came through for ${ms} ms; reconnecting`);
  }
}

/** The longest a stream waits before it reconnects, whatever a `Retry-After` or `retry:` says. */
const MAX_RECONNECT_WAIT_MS = 300_000;

/**
 * The least a stream waits before it reconnects, whatever a `retry:` says (`retry: 0` from a
 * server that then ends every stream at once made hundreds of requests a second).
 */
const MIN_RECONNECT_WAIT_MS = 250;

/**
 * The longest line, and the most data of one event, a stream may send (characters): a stream
 * that sends more is cut as a failure, rather than held in memory without end. A job's `done`
 * event carries its input and result.
 */
export const MAX_SSE_EVENT_CHARS = 64 * 1024 * 1024;

/**
 * How long a stream waits before it reconnects: the server's `retry:` times the failures in a
 * row, or a 503's `Retry-After` (seconds) when longer; at least 250 ms, at most 5 minutes (a
 * timer longer than 2^31 - 1 ms would fire at once in Node). Exported for its tests.
 */
export function reconnectWaitMs(
  retryMs: number,
  failures: number,
  retryAfterSeconds: number | undefined,
): number {
  const asked = Math.max(retryMs * Math.max(1, failures), (retryAfterSeconds ?? 0) * 1_000);
  return Math.min(Math.max(asked, MIN_RECONNECT_WAIT_MS), MAX_RECONNECT_WAIT_MS);
}

/** A parsed SSE message. */
interface SseMessage {
  event: string;
  data: string;
  id: string | undefined;
}

/**
 * The updates of the stream at `path`; each connection after the first sends the id of the last
 * update as `Last-Event-ID`. 4xx answers throw their typed error (`NotFoundError`, …) at once.
 * `untilDone`: end after the first `done` (a job's stream); a schedule's stream sends one `done`
 * per run and goes on.
 */
export async function* streamUpdates<R>(
  caller: Caller,
  path: string,
  options: UpdatesOptions = {},
  untilDone = true,
): AsyncGenerator<JobUpdate<R>, void, undefined> {
  const maxRetries = options.maxRetries ?? 5;
  const idleMs = options.idleTimeoutMs ?? 45_000;
  let lastId = options.lastEventId;
  let retryMs = 1_000;
  let failures = 0;
  for (;;) {
    const abort = new AbortController();
    const stop = () => abort.abort(options.signal?.reason);
    if (options.signal?.aborted) return;
    options.signal?.addEventListener("abort", stop, { once: true });
    try {
      const headers = new Headers(caller.headers);
      headers.set("accept", "text/event-stream");
      if (caller.apiKey) headers.set("authorization", `Bearer ${caller.apiKey}`);
      if (lastId !== undefined) headers.set("last-event-id", lastId);
      let cut: unknown;
      let idle: ReturnType<typeof setTimeout> | undefined;
      /** (Re)starts the wait for the stream's next bytes. */
      const awaitBytes = () => {
        clearTimeout(idle);
        if (!(idleMs > 0 && idleMs <= MAX_TIMER_MS)) return;
        idle = setTimeout(() => abort.abort(new StreamIdleError(`GET ${path}`, idleMs)), idleMs);
      };
      try {
        // The client's timeout holds until the stream opens (a stream open for long is no
        // fault): one that does not open in time is cut, and tried again as a failure.
        const ms = caller.timeoutMs;
        const opening =
          ms === undefined
            ? undefined
            : setTimeout(() => abort.abort(new RequestTimeoutError(`GET ${path}`, ms)), ms);
        let response: Response;
        try {
          response = await caller.fetch(new URL(caller.base + path), {
            headers,
            signal: abort.signal,
            redirect: "manual",
          });
        } catch (error) {
          throw abort.signal.reason instanceof RequestTimeoutError ? abort.signal.reason : error;
        } finally {
          clearTimeout(opening);
        }
        if (
          response.type === "opaqueredirect" ||
          (response.status >= 300 && response.status < 400)
        ) {
          throw redirected(response, `GET ${path}`);
        }
        if (!response.ok || !response.body) {
          const text = await response.text();
          const error = apiError(response, parseJson(text) ?? text);
          // A 429 (this key's streams are at the server's limit) waits as a 503 does.
          if (response.status < 500 && response.status !== 429) throw error;
          cut = error;
        } else if (!/^text\/event-stream\b/i.test(response.headers.get("content-type") ?? "")) {
          await response.body.cancel();
          cut = new TypeError(`not an event stream: ${response.headers.get("content-type")}`);
        } else {
          awaitBytes();
          for await (const message of readSse(
            response.body,
            (ms) => {
              retryMs = ms;
            },
            (id) => {
              // A position without an event (a quiet schedule stream): resume from there.
              lastId = id;
            },
            awaitBytes,
          )) {
            const update = toUpdate<R>(message);
            if (!update) continue;
            lastId = update.id;
            failures = 0;
            // The caller's time with an update is not the stream's silence.
            clearTimeout(idle);
            yield update;
            awaitBytes();
            if (untilDone && update.type === "done") return;
          }
        }
      } catch (error) {
        if (options.signal?.aborted) return;
        if (error instanceof TickworkApiError && error.status < 500) throw error;
        cut = abort.signal.reason instanceof StreamIdleError ? abort.signal.reason : error;
      } finally {
        clearTimeout(idle);
      }
      if (cut !== undefined) {
        failures += 1;
        if (failures > maxRetries) throw cut;
      }
      // Ended by the server (its stream's time was up) or cut: reconnect from `lastId` after the
      // server's `retry:` delay, as EventSource does (never in a tight loop), or after the
      // `Retry-After` of a 503 or 429 when that is longer.
      const retryAfter =
        cut instanceof UnavailableError || cut instanceof RateLimitedError
          ? cut.retryAfter
          : undefined;
      await pause(reconnectWaitMs(retryMs, failures, retryAfter), options.signal);
    } finally {
      options.signal?.removeEventListener("abort", stop);
      abort.abort();
    }
  }
}

/** The update a message carries, or `undefined` for an event this client does not know. */
function toUpdate<R>(message: SseMessage): JobUpdate<R> | undefined {
  if (message.id === undefined) return undefined;
  const data = parseJson(message.data);
  if (data === undefined || data === null || typeof data !== "object") return undefined;
  switch (message.event) {
    case "status":
      return { type: "status", id: message.id, ...(data as JobStatusUpdate) };
    case "progress":
      return { type: "progress", id: message.id, ...(data as JobProgressUpdate) };
    case "done":
      return { type: "done", id: message.id, job: data as TypedJob<R> };
    default:
      return undefined;
  }
}

/**
 * The messages of an event stream, per the HTML standard's parsing rules: lines end in CR, LF or
 * CRLF; `data` lines join with `\n`; a blank line dispatches; comments (`:`) are skipped; `retry`
 * is reported through `onRetry`, and an `id:` in a block without data (a position, no event)
 * through `onPosition`; `onBytes` is called whenever bytes arrive (a heartbeat too).
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  onRetry: (ms: number) => void = () => {},
  onPosition: (id: string) => void = () => {},
  onBytes: () => void = () => {},
): AsyncGenerator<SseMessage, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  /** The line being read: its parts from earlier chunks (joined once it ends), and their length. */
  let partial: string[] = [];
  let partialChars = 0;
  /** The last chunk ended in CR: a LF starting the next one is the rest of that CRLF. */
  let afterCr = false;
  let dataChars = 0;
  let event = "";
  let data: string[] = [];
  let id: string | undefined;
  let sawData = false;
  /** The block being read has an `id:` line (a block with no data may carry only that). */
  let sawId = false;
  const tooLong = () =>
    new TypeError(`an event stream line or event over ${MAX_SSE_EVENT_CHARS} characters`);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      onBytes();
      const chunk = done ? decoder.decode() : decoder.decode(value, { stream: true });
      // Each chunk is scanned once, from where the last line ended: a long line arriving in many
      // chunks costs its length, not its length times the chunks.
      const lines: string[] = [];
      let from = afterCr && chunk.startsWith("\n") ? 1 : 0;
      if (chunk.length > 0) afterCr = false;
      for (;;) {
        const lf = chunk.indexOf("\n", from);
        const cr = chunk.indexOf("\r", from);
        const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
        if (end < 0) break;
        const piece = chunk.slice(from, end);
        if (partial.length > 0) {
          partial.push(piece);
          lines.push(partial.join(""));
          partial = [];
          partialChars = 0;
        } else lines.push(piece);
        if (chunk[end] === "\r" && end === chunk.length - 1) {
          afterCr = true;
          from = chunk.length;
          break;
        }
        from = end + (chunk.startsWith("\r\n", end) ? 2 : 1);
      }
      if (from < chunk.length) {
        partial.push(chunk.slice(from));
        partialChars += chunk.length - from;
        if (partialChars > MAX_SSE_EVENT_CHARS) throw tooLong();
      }
      for (const line of lines) {
        if (line === "") {
          if (sawData) yield { event: event || "message", data: data.join("\n"), id };
          else if (sawId && id !== undefined) onPosition(id);
          sawId = false;
          event = "";
          data = [];
          dataChars = 0;
          sawData = false;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let text = colon < 0 ? "" : line.slice(colon + 1);
        if (text.startsWith(" ")) text = text.slice(1);
        if (field === "event") event = text;
        else if (field === "data") {
          dataChars += text.length + 1;
          if (dataChars > MAX_SSE_EVENT_CHARS) throw tooLong();
          data.push(text);
          sawData = true;
        } else if (field === "id" && !text.includes("\0")) {
          id = text;
          sawId = true;
        } else if (field === "retry" && /^\d+$/.test(text)) onRetry(Number(text));
      }
      if (done) return;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

function parseJson(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Wait `ms`, or less when `signal` aborts (at once when it already has). */
export function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  // An aborted signal fires no more "abort" events: end now rather than after `ms`.
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener("abort", done, { once: true });
  });
}
