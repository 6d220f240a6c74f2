/**
 * @module
 * The running attempt's part of the Store port: its progress, its log, and whether a cancel was
 * asked for. Every write is fenced by the attempt number: only the attempt that holds the run
 * lease may write; anything else is refused (`stale`) and nothing is written.
 */
import type { JobLogEntry } from "../../core/model.ts";
import type { Page } from "./page.ts";

/** Largest progress value, as JSON in UTF-8 bytes. */
export const MAX_PROGRESS_BYTES = 4 * 1024;
/** Largest log entry (`{ level, message, fields? }`), as JSON in UTF-8 bytes. */
export const MAX_LOG_ENTRY_BYTES = 2 * 1024;
/** Log entries a job keeps: past this the oldest are dropped. */
export const MAX_LOG_ENTRIES = 100;

/** Result of {@link ProgressStore.reportProgress} and {@link ProgressStore.appendLog}. */
export type RunWriteResult =
  /** Written. `cancelRequested`: a cancel was asked for (see `JobStore.cancelJob`). */
  | { kind: "ok"; cancelRequested: boolean }
  /** Not `running` as this attempt under an unexpired run lease (or missing): nothing written. */
  | { kind: "stale" };

/** The query of {@link ProgressStore.readLogs}. */
export interface LogsQuery {
  /** 1–100. */
  limit: number;
  /** From a previous page (opaque). */
  cursor?: string | undefined;
}

/** UTF-8 length of `text`. */
export function utf8Bytes(text: string): number {
  return new TextEncoder().encode(text).length;
}

/**
 * Refuse what a store must not keep: a progress value or log entry larger than its bound.
 * Both stores call it before they write anything.
 *
 * @throws RangeError naming the bound.
 */
export function checkRunWrite(what: "progress" | "log entry", json: string): void {
  const max = what === "progress" ? MAX_PROGRESS_BYTES : MAX_LOG_ENTRY_BYTES;
  const bytes = utf8Bytes(json);
  if (bytes > max) {
    throw new RangeError(`${what} is ${bytes} bytes as JSON; at most ${max} are kept`);
  }
}

/**
 * The next log position a cursor names: a whole number ≥ 1, else a `RangeError` (a cursor the
 * store never gave).
 */
export function logCursor(cursor: string | undefined): number {
  if (cursor === undefined) return 1;
  if (!/^[1-9]\d{0,14}$/.test(cursor)) throw new RangeError(`not a log cursor: ${cursor}`);
  return Number(cursor);
}

/**
 * A running attempt's progress and log, and the cancel request it watches for. A job that never
 * reports progress or logs costs nothing here: the job's other operations read and write nothing
 * more for it. Progress and log live with the job record: they expire and are deleted with it.
 */
export interface ProgressStore {
  /**
   * Replace the job's progress with `valueJson` (JSON text, at most {@link MAX_PROGRESS_BYTES}) and
   * `at = now`, only if the job is `running` as `attempt` under an unexpired run lease; else
   * `stale`, nothing written. The answer says whether a cancel was asked for.
   *
   * @throws RangeError for a value over the bound (nothing written).
   */
  reportProgress(id: string, attempt: number, valueJson: string): Promise<RunWriteResult>;
  /**
   * Append `entryJson` (`{ level, message, fields? }` as JSON text, at most
   * {@link MAX_LOG_ENTRY_BYTES}) to the job's log, stamped with `at = now` and `attempt`, fenced
   * like {@link reportProgress}. The log keeps the last {@link MAX_LOG_ENTRIES} entries.
   *
   * @throws RangeError for an entry over the bound (nothing written).
   */
  appendLog(id: string, attempt: number, entryJson: string): Promise<RunWriteResult>;
  /**
   * The job's log, oldest kept entry first, `limit` at a time; `null` when the job is missing.
   * The cursor names the next entry; absent on the last page. Entries dropped (over the cap)
   * between pages are skipped.
   */
  readLogs(id: string, query: LogsQuery): Promise<Page<JobLogEntry> | null>;
  /**
   * True when the job is `running` as `attempt` and a cancel was asked for. One read, nothing
   * written: what the runner polls while a handler runs.
   */
  cancelRequested(id: string, attempt: number): Promise<boolean>;
}
