/**
 * @module
 * Test data builders shared by the store contract and other tests. Every builder returns a
 * complete, valid record with a fresh id; pass overrides for the fields a test is about.
 */
import type { JobSpec, NewJob, OutboxMessage, ScheduleRecord } from "../../src/core/model.ts";
import { occurrenceId } from "../../src/core/model.ts";
import type { Store, StoreRetention, SubmitDenied, SubmitResult } from "../../src/store/port.ts";

/**
 * Retention every store under the contract suite must be built with: short enough that the
 * expiry tests can wait it out, long enough that no other test sees a record vanish.
 */
/** Short enough to wait out in a test, long enough that a loaded CI machine's round trips fit inside. */
export const CONTRACT_RETENTION: StoreRetention = {
  jobMs: 1_500,
  idempotencyMs: 1_000,
  maxFinishedJobs: 0,
  maxRunsPerSchedule: 0,
};

let counter = 0;
const run = Math.random().toString(36).slice(2, 8);

/** A fresh id, unique within the process: `<prefix>-<run>-<n>` (sorts by creation within a run). */
export function uid(prefix = "id"): string {
  counter += 1;
  return `${prefix}-${run}-${String(counter).padStart(6, "0")}`;
}

/** Resolves after `ms` real milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A job as the broker hands it to `submitJob`. */
export function jobSpec(overrides: Partial<NewJob> = {}): NewJob {
  return {
    id: uid("job"),
    tenant: "default",
    handler: "email.send",
    input: { to: "ada@example.com", n: 1, nested: { list: [1, 2, 3] } },
    priority: 5,
    timeoutMs: 30_000,
    retries: 3,
    tags: ["contract"],
    ...overrides,
  };
}

/** A complete job spec, as carried by a delivery (`beginRun`, `markDead`). */
export function fullJobSpec(overrides: Partial<JobSpec> = {}): JobSpec {
  return { ...jobSpec(), runAt: 1_700_000_000_000, createdAt: 1_700_000_000_000, ...overrides };
}

/** The spec of occurrence `fireAt` of `schedule`, as the tick builds it. */
export function occurrenceSpec(
  schedule: Pick<ScheduleRecord, "id" | "tenant" | "handler" | "overlap">,
  fireAt: number,
  overrides: Partial<JobSpec> = {},
): JobSpec {
  return fullJobSpec({
    id: occurrenceId(schedule.id, fireAt),
    tenant: schedule.tenant,
    handler: schedule.handler,
    scheduleId: schedule.id,
    fireAt,
    runAt: fireAt,
    createdAt: fireAt,
    overlap: schedule.overlap,
    ...overrides,
  });
}

/** An outbox message for `job` (dedup id = job id, deliverable at `runAt`). */
export function outboxMessage(job: JobSpec, overrides: Partial<OutboxMessage> = {}): OutboxMessage {
  return {
    id: job.id,
    dedupId: job.id,
    job,
    notBefore: job.runAt,
    recoverAt: job.runAt + 60_000,
    ...overrides,
  };
}

/** An active every-minute schedule, first due at `nextRunAt` (default: far in the future). */
export function scheduleRecord(overrides: Partial<ScheduleRecord> = {}): ScheduleRecord {
  return {
    id: uid("sched"),
    tenant: "default",
    handler: "report.daily",
    schedule: "* * * * *",
    tz: "UTC",
    input: { kind: "report" },
    priority: 5,
    timeoutMs: 60_000,
    retries: 2,
    misfire: "once",
    overlap: "allow",
    jitterMs: 0,
    tags: ["contract"],
    status: "active",
    nextRunAt: 4_000_000_000_000,
    runs: 0,
    rev: 0,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    ...overrides,
  };
}

/** The result of a submit that admission control did not refuse (throws if it did). */
export function accepted(result: SubmitResult | SubmitDenied): SubmitResult {
  if ("denied" in result) throw new Error(`submit denied: ${JSON.stringify(result.denied)}`);
  return result;
}

/** Store options a contract may vary (both stores take them). */
export interface ContractStoreOptions {
  /** Events kept in the capped event log (`0`: none). */
  eventsMaxLen?: number;
  /** Replaces {@link CONTRACT_RETENTION}. */
  retention?: StoreRetention;
}

/**
 * Makes a fresh, empty store for one test (its own prefix on a shared Redis is fine), built with
 * {@link CONTRACT_RETENTION} and `options`; `cleanup` runs after the test.
 */
export type MakeContractStore = (
  options?: ContractStoreOptions,
) => Promise<{ store: Store; cleanup: () => Promise<void> }>;
