/**
 * @module
 * The Redis store's schedule operations (the port's `ScheduleStore`). Each one script, one round
 * trip.
 */
import { DEFAULT_TENANT, type JobRecord, type ScheduleRecord } from "../../core/model.ts";
import type {
  Admission,
  Denied,
  ListSchedulesQuery,
  Page,
  PutScheduleResult,
  QuotaState,
} from "../port.ts";
import {
  cursorArgs,
  fromJson,
  limitArg,
  optionalArg,
  quotaArgs,
  type RawPage,
  scheduleDef,
  toInt,
  toPage,
} from "./codec.ts";
import type { RedisContext, Tagged } from "./context.ts";
import { scripts } from "./scripts.generated.ts";

export async function putSchedule(
  c: RedisContext,
  schedule: ScheduleRecord,
  expectRev?: number,
  admission?: Pick<Admission, "quota">,
): Promise<PutScheduleResult> {
  const k = c.keys;
  const raw = await c.run(
    scripts.putSchedule,
    [k.root, k.due, k.schedules(schedule.tenant), k.revSeq],
    [
      schedule.id,
      scheduleDef(schedule),
      schedule.status,
      optionalArg(schedule.nextRunAt),
      optionalArg(schedule.lastRunAt),
      String(schedule.runs),
      String(schedule.createdAt),
      String(schedule.updatedAt),
      schedule.handler,
      optionalArg(expectRev),
      ...quotaArgs(admission?.quota),
      schedule.overlap === "skip" ? "skip" : "",
    ],
  );
  const r = fromJson<
    | { created: boolean; schedule: ScheduleRecord; quota?: QuotaState }
    | Tagged<"conflict", ScheduleRecord | null>
    | Tagged<"denied", Denied>
  >(raw);
  if ("conflict" in r) return { kind: "conflict", schedule: r.conflict };
  if ("denied" in r) return { kind: "denied", denied: r.denied };
  return {
    kind: "ok",
    created: r.created,
    schedule: r.schedule,
    ...(r.quota ? { quota: r.quota } : {}),
  };
}

export async function getSchedule(c: RedisContext, id: string): Promise<ScheduleRecord | null> {
  const raw = await c.run(scripts.getSchedule, [c.keys.root], [id]);
  return raw === null || raw === undefined ? null : fromJson<ScheduleRecord>(raw);
}

export async function listSchedules(
  c: RedisContext,
  query: ListSchedulesQuery,
): Promise<Page<ScheduleRecord>> {
  const k = c.keys;
  const raw = await c.run(
    scripts.listSchedules,
    [k.root, k.schedules(query.tenant ?? DEFAULT_TENANT)],
    [limitArg(query.limit), ...cursorArgs(query.cursor), query.status ?? "", query.handler ?? ""],
  );
  return toPage(fromJson<RawPage<ScheduleRecord>>(raw));
}

export async function deleteSchedule(c: RedisContext, id: string): Promise<boolean> {
  const k = c.keys;
  const raw = await c.run(scripts.deleteSchedule, [k.root, k.due, k.revSeq], [id]);
  return toInt(raw) === 1;
}

export async function listRuns(
  c: RedisContext,
  scheduleId: string,
  query: { limit: number; cursor?: string },
): Promise<Page<JobRecord>> {
  const raw = await c.run(
    scripts.listRuns,
    [c.keys.root],
    [scheduleId, limitArg(query.limit), ...cursorArgs(query.cursor)],
  );
  return toPage(fromJson<RawPage<JobRecord>>(raw));
}
