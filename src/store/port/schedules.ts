/**
 * @module
 * The schedules' part of the Store port: write, read, list and delete schedules, and list the
 * jobs a schedule fired.
 */
import type { Admission, Denied, QuotaState } from "../../core/admission.ts";
import type { JobRecord, ScheduleRecord, ScheduleStatus } from "../../core/model.ts";
import type { Page } from "./page.ts";
import type { ScheduleCommit } from "./tick.ts";

export interface ListSchedulesQuery {
  /** Whose schedules. @default "default" */
  tenant?: string | undefined;
  status?: ScheduleStatus | undefined;
  handler?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/** Result of {@link ScheduleStore.putSchedule}. */
export type PutScheduleResult =
  | { kind: "ok"; created: boolean; schedule: ScheduleRecord; quota?: QuotaState }
  /** `expectRev` was given and the stored rev differs (0: the schedule exists; else it is missing). */
  | { kind: "conflict"; schedule: ScheduleRecord | null }
  /** `admission.quota` refused it: nothing written, nothing counted. */
  | { kind: "denied"; denied: Denied };

/** Schedule records and their due index (the tick reads it: see {@link ScheduleCommit}). */
export interface ScheduleStore {
  /**
   * Write a schedule record (computed in TS: status, nextRunAt, runs). Without `expectRev`:
   * create, or replace keeping `runs`, `lastRunAt` and `createdAt` of the stored one.
   * With `expectRev`: write only if the stored rev equals it (else `conflict`), as given (the caller
   * read that revision, so its `runs`, `lastRunAt` and `createdAt` are current); `0`: only if no
   * schedule has the id (revs start at 1), so two creates that race do not both write. The stored `rev`
   * becomes previous + 1; on create it is drawn from a store-wide sequence that `deleteSchedule`
   * raises to the deleted rev, so it is above every rev the id ever had (a stale tick plan made
   * before a delete can never commit onto the re-created schedule). The due index holds it iff `status` is `active` and
   * `nextRunAt` is not null (score `nextRunAt`: a write ends a hold, see {@link ScheduleCommit.dueAt}).
   *
   * `admission.quota`: judged after `expectRev` (a conflict counts nothing); denied → `denied`,
   * nothing written, nothing counted; else counted with the write and returned as `quota`.
   * A schedule write writes no event.
   */
  putSchedule(
    schedule: ScheduleRecord,
    expectRev?: number,
    admission?: Pick<Admission, "quota">,
  ): Promise<PutScheduleResult>;
  getSchedule(id: string): Promise<ScheduleRecord | null>;
  listSchedules(query: ListSchedulesQuery): Promise<Page<ScheduleRecord>>;
  /** Delete a schedule (raising the rev sequence to its rev, see {@link ScheduleStore.putSchedule}). */
  deleteSchedule(id: string): Promise<boolean>;
  /** Jobs fired by a schedule (every job with that `scheduleId`), newest fire time first. */
  listRuns(
    scheduleId: string,
    query: { limit: number; cursor?: string | undefined },
  ): Promise<Page<JobRecord>>;
}
