/**
 * @module
 * The Redis store's running-attempt operations (the port's `ProgressStore`): progress, the job's
 * log and the cancel request. Each one script, one round trip; progress and log entries are
 * fields of the job hash, so they expire and are deleted with it (include "attempt").
 */
import type { JobLogEntry } from "../../core/model.ts";
import {
  checkRunWrite,
  type LogsQuery,
  logCursor,
  type Page,
  type RunWriteResult,
} from "../port.ts";
import { fromJson, limitArg, toInt } from "./codec.ts";
import type { RedisContext } from "./context.ts";
import { scripts } from "./scripts.generated.ts";

type Written = { ok: true; cancelRequested: boolean } | { stale: true };

function written(raw: unknown): RunWriteResult {
  const r = fromJson<Written>(raw);
  return "ok" in r ? { kind: "ok", cancelRequested: r.cancelRequested } : { kind: "stale" };
}

export async function reportProgress(
  c: RedisContext,
  id: string,
  attempt: number,
  valueJson: string,
): Promise<RunWriteResult> {
  checkRunWrite("progress", valueJson);
  return written(
    await c.run(scripts.reportProgress, [c.keys.root], [id, String(attempt), valueJson]),
  );
}

export async function appendLog(
  c: RedisContext,
  id: string,
  attempt: number,
  entryJson: string,
): Promise<RunWriteResult> {
  checkRunWrite("log entry", entryJson);
  return written(await c.run(scripts.appendLog, [c.keys.root], [id, String(attempt), entryJson]));
}

export async function readLogs(
  c: RedisContext,
  id: string,
  query: LogsQuery,
): Promise<Page<JobLogEntry> | null> {
  const from = logCursor(query.cursor);
  const raw = await c.run(
    scripts.readLogs,
    [c.keys.root],
    [id, limitArg(query.limit), String(from)],
  );
  if (raw === null || raw === undefined) return null;
  const page = fromJson<Page<JobLogEntry>>(raw);
  return { items: page.items, ...(page.cursor ? { cursor: page.cursor } : {}) };
}

export async function cancelRequested(
  c: RedisContext,
  id: string,
  attempt: number,
): Promise<boolean> {
  return toInt(await c.run(scripts.cancelRequested, [c.keys.root], [id, String(attempt)])) === 1;
}
