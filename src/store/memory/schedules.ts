/**
 * @module
 * The memory store's schedule operations (`ScheduleStore`): write (with `expectRev` and a
 * quota), read, list and delete schedules, and list the jobs a schedule fired. Each is one
 * synchronous step.
 */
import type { JobRecord, ScheduleRecord } from "../../core/model.ts";
import { DEFAULT_TENANT } from "../../core/model.ts";
import type { Admission, ListSchedulesQuery, Page, PutScheduleResult } from "../port.ts";
import { paginate, type Scored } from "./cursor.ts";
import { leaseToRunning } from "./job-table.ts";
import { quota as countQuota } from "./quota.ts";
import { clone, live } from "./shared.ts";
import type { MemoryState } from "./state.ts";

export function putSchedule(
  s: MemoryState,
  schedule: ScheduleRecord,
  expectRev: number | undefined,
  admission: Pick<Admission, "quota">,
): PutScheduleResult {
  const now = s.now();
  const stored = s.schedules.get(schedule.id);
  if (expectRev !== undefined && (stored?.rev ?? 0) !== expectRev) {
    return { kind: "conflict", schedule: stored ? clone(stored) : null };
  }
  const quota = countQuota(s, admission.quota, now);
  if (quota && !quota.admitted) {
    return { kind: "denied", denied: { kind: "quota", quota: quota.state } };
  }
  const record = clone(schedule);
  record.rev = stored ? stored.rev + 1 : ++s.revSeq;
  if (stored && expectRev === undefined) {
    record.runs = stored.runs;
    record.createdAt = stored.createdAt;
    if (stored.lastRunAt === undefined) delete record.lastRunAt;
    else record.lastRunAt = stored.lastRunAt;
  }
  s.schedules.set(record.id, record);
  s.held.delete(record.id);
  // A PATCH to `skip` while runs begun under another policy run: one of them holds the lease.
  if (stored && record.overlap === "skip" && !live(s.running, record.id, now)) {
    leaseToRunning(s, record.id, undefined, now);
  }
  return {
    kind: "ok",
    created: !stored,
    schedule: clone(record),
    ...(quota ? { quota: quota.state } : {}),
  };
}

export function getSchedule(s: MemoryState, id: string): ScheduleRecord | null {
  s.now();
  const stored = s.schedules.get(id);
  return stored ? clone(stored) : null;
}

export function listSchedules(s: MemoryState, query: ListSchedulesQuery): Page<ScheduleRecord> {
  s.now();
  const entries: Scored<ScheduleRecord>[] = [];
  const tenant = query.tenant ?? DEFAULT_TENANT;
  for (const schedule of s.schedules.values()) {
    if (schedule.tenant !== tenant) continue;
    if (query.status !== undefined && schedule.status !== query.status) continue;
    if (query.handler !== undefined && schedule.handler !== query.handler) continue;
    entries.push({ score: schedule.createdAt, id: schedule.id, item: schedule });
  }
  return clone(paginate(entries, query.limit, query.cursor));
}

export function deleteSchedule(s: MemoryState, id: string): boolean {
  s.now();
  const stored = s.schedules.get(id);
  // A re-created schedule must start above every rev this id had (no ABA for stale tick plans).
  if (stored) s.revSeq = Math.max(s.revSeq, stored.rev);
  s.held.delete(id);
  s.runs.delete(id);
  // Its overlap lease: a running occurrence of it must not skip those of one created again.
  s.running.delete(id);
  return s.schedules.delete(id);
}

export function listRuns(
  s: MemoryState,
  scheduleId: string,
  query: { limit: number; cursor?: string | undefined },
): Page<JobRecord> {
  s.now();
  const entries: Scored<JobRecord>[] = [];
  for (const id of s.runs.get(scheduleId) ?? []) {
    const record = s.jobs.get(id)?.record;
    if (!record) continue;
    entries.push({ score: record.fireAt ?? record.runAt, id: record.id, item: record });
  }
  return clone(paginate(entries, query.limit, query.cursor));
}
