/**
 * @module
 * Schedule maths, pure (no I/O): parse cron and interval specs, enumerate occurrences in IANA time
 * zones with a defined DST rule, and plan what a tick dispatches.
 */
export { CRON_MACROS } from "./cron-parse.ts";
export { ScheduleError, type ScheduleErrorCode } from "./errors.ts";
export { MAX_INTERVAL_MS, MIN_INTERVAL_MS } from "./interval.ts";
export { occurrenceJitter } from "./jitter.ts";
export { between, countBetween, firstRunAt, nextAfter, prevBefore } from "./occurrences.ts";
export { parseSchedule } from "./parse.ts";
export {
  type Plan,
  type PlannedFire,
  type PlanOptions,
  type PlanSchedule,
  planOccurrences,
} from "./plan.ts";
export type { CronFields, ParsedCron, ParsedInterval, ParsedSchedule } from "./types.ts";
