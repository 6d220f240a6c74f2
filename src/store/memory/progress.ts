/**
 * @module
 * The memory store's running-attempt operations (`ProgressStore`): progress, the job's log and
 * the cancel request, fenced by the attempt number as the Redis scripts are. Each is one
 * synchronous step.
 */
import type { JobLogEntry } from "../../core/model.ts";
import {
  checkRunWrite,
  type LogsQuery,
  logCursor,
  MAX_LOG_ENTRIES,
  type Page,
  type RunWriteResult,
} from "../port.ts";
import { clone } from "./shared.ts";
import type { MemoryState, StoredJob } from "./state.ts";

/** The job, if `attempt` holds its run lease now. */
function holder(s: MemoryState, id: string, attempt: number, now: number): StoredJob | undefined {
  const stored = s.jobs.get(id);
  if (stored?.record.status !== "running" || stored.record.attempts !== attempt) return undefined;
  if (stored.leaseUntil === undefined || stored.leaseUntil <= now) return undefined;
  return stored;
}

export function reportProgress(
  s: MemoryState,
  id: string,
  attempt: number,
  valueJson: string,
): RunWriteResult {
  checkRunWrite("progress", valueJson);
  const now = s.now();
  const stored = holder(s, id, attempt, now);
  if (!stored) return { kind: "stale" };
  stored.record.progress = { value: JSON.parse(valueJson), at: now };
  return { kind: "ok", cancelRequested: stored.record.cancelRequested === true };
}

export function appendLog(
  s: MemoryState,
  id: string,
  attempt: number,
  entryJson: string,
): RunWriteResult {
  checkRunWrite("log entry", entryJson);
  const now = s.now();
  const stored = holder(s, id, attempt, now);
  if (!stored) return { kind: "stale" };
  const logs = stored.logs ?? { next: 1, entries: [] };
  stored.logs = logs;
  logs.entries.push({ ...JSON.parse(entryJson), at: now, attempt });
  logs.next += 1;
  if (logs.entries.length > MAX_LOG_ENTRIES) logs.entries.shift();
  return { kind: "ok", cancelRequested: stored.record.cancelRequested === true };
}

export function readLogs(s: MemoryState, id: string, query: LogsQuery): Page<JobLogEntry> | null {
  const from = logCursor(query.cursor);
  s.now();
  const stored = s.jobs.get(id);
  if (!stored) return null;
  const logs = stored.logs ?? { next: 1, entries: [] };
  const first = logs.next - logs.entries.length; // position of entries[0]
  const start = Math.max(from, first);
  const end = Math.min(start + query.limit, logs.next); // exclusive
  const items = logs.entries.slice(start - first, end - first);
  return clone({ items, ...(end < logs.next ? { cursor: String(end) } : {}) });
}

export function cancelRequested(s: MemoryState, id: string, attempt: number): boolean {
  s.now();
  const job = s.jobs.get(id)?.record;
  return job?.status === "running" && job.attempts === attempt && job.cancelRequested === true;
}
