/**
 * @module
 * A running attempt's controls: the handler's `ctx.progress()` and `ctx.log()`, and the cancel
 * watch that aborts its signal when the job is cancelled while it runs.
 *
 * Cost: a progress or log call is one store call (on Redis one round trip: EVALSHA + TIME + HMGET
 * + HSET, and an HDEL once the log holds 100 entries); its answer also says whether a cancel was
 * asked for. While a handler runs, the watch asks the store (`cancelRequested`: EVALSHA + HMGET)
 * once every `cancelCheckMs` (default 1 s) without such an answer, the first time `cancelCheckMs`
 * after the handler starts: a handler that finishes sooner costs nothing, and one that reports
 * progress at least that often is never polled.
 */
import { CancelledError } from "../core/errors.ts";
import type { JobLogLevel } from "../core/model.ts";
import { MAX_LOG_ENTRY_BYTES, type RunWriteResult, type Store, utf8Bytes } from "../store/port.ts";
import type { Logger } from "./logger.ts";

/** What {@link attemptControls} gives the runner. */
export interface AttemptControls {
  progress(value: unknown): Promise<boolean>;
  log(message: string, fields?: Record<string, unknown>, level?: JobLogLevel): Promise<boolean>;
  /** Stops the watch (the handler settled). */
  stop(): void;
}

const LEVELS: readonly JobLogLevel[] = ["debug", "info", "warn", "error"];

/**
 * The controls of attempt `attempt` of job `id`. A cancel seen while the watch runs calls
 * `onCancel` once, with a {@link CancelledError} (the runner aborts the handler's signal and ends
 * the attempt with it). `cancelCheckMs` 0 turns the poll off (a cancel is then seen only in the
 * answer of a progress or log call, or at the attempt's end).
 */
export function attemptControls(
  store: Store,
  id: string,
  attempt: number,
  onCancel: (error: CancelledError) => void,
  logger: Logger,
  cancelCheckMs: number,
): AttemptControls {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let heardAt = performance.now();

  const stop = () => {
    stopped = true;
    clearTimeout(timer);
  };
  const cancel = () => {
    if (stopped) return;
    stop();
    onCancel(new CancelledError(`job ${id} was cancelled while attempt ${attempt} ran`));
  };
  const heard = (result: RunWriteResult): boolean => {
    if (result.kind === "stale") return false;
    heardAt = performance.now();
    if (result.cancelRequested) cancel();
    return true;
  };
  const watch = (delay: number) => {
    if (stopped || cancelCheckMs <= 0) return;
    timer = setTimeout(poll, delay);
  };
  const poll = async () => {
    const quietMs = performance.now() - heardAt;
    if (quietMs < cancelCheckMs) return watch(cancelCheckMs - quietMs);
    try {
      if (await store.cancelRequested(id, attempt)) return cancel();
    } catch (error) {
      logger.warn("could not check for a cancel request", { error: String(error) });
    }
    heardAt = performance.now();
    watch(cancelCheckMs);
  };
  watch(cancelCheckMs);

  return {
    stop,
    async progress(value) {
      const json = JSON.stringify(value);
      if (json === undefined) throw new RangeError("progress must be a JSON value");
      return heard(await store.reportProgress(id, attempt, json));
    },
    async log(message, fields, level = "info") {
      if (!LEVELS.includes(level)) throw new RangeError(`not a log level: ${String(level)}`);
      logger[level](message, fields);
      return heard(await store.appendLog(id, attempt, logEntryJson(level, message, fields)));
    },
  };
}

/**
 * A log entry as JSON within {@link MAX_LOG_ENTRY_BYTES}: too large, its fields are replaced by
 * `{ truncated: true }`, then its message is shortened (ending in `…`) until it fits.
 *
 * @example
 * logEntryJson("info", "x".repeat(5000)); // {"level":"info","message":"xxx…","fields":{"truncated":true}}
 */
export function logEntryJson(
  level: JobLogLevel,
  message: string,
  fields?: Record<string, unknown>,
): string {
  const text = String(message);
  const whole = JSON.stringify({ level, message: text, ...(fields ? { fields } : {}) });
  if (utf8Bytes(whole) <= MAX_LOG_ENTRY_BYTES) return whole;
  const cut = (m: string) => JSON.stringify({ level, message: m, fields: { truncated: true } });
  if (utf8Bytes(cut(text)) <= MAX_LOG_ENTRY_BYTES) return cut(text);
  let keep = Math.min(text.length, MAX_LOG_ENTRY_BYTES);
  while (keep > 0 && utf8Bytes(cut(`${text.slice(0, keep)}…`)) > MAX_LOG_ENTRY_BYTES) {
    keep = Math.floor(keep * 0.9);
  }
  return cut(`${text.slice(0, keep)}…`);
}
