/**
 * @module
 * The memory store's job operations (`JobStore`) other than an attempt's (those are in
 * `runs.ts`): submit with admission control, read, cancel and list jobs, and the dead-letter
 * list. Each is one synchronous step.
 */
import type { JobRecord, JobSpec, NewJob, OutboxMessage } from "../../core/model.ts";
import { DEFAULT_TENANT } from "../../core/model.ts";
import type {
  Admission,
  CancelResult,
  DeadQuery,
  DegradationLevel,
  ListJobsQuery,
  Page,
  SubmitDenied,
  SubmitResult,
  SubmitTiming,
} from "../port.ts";
import { paginate, type Scored } from "./cursor.ts";
import { levelForSubmit } from "./degrade.ts";
import { cancelWaiting, checkDependencies, registerWaiting, releaseDependents } from "./deps.ts";
import { jobFields } from "./events.ts";
import { drop, indexRun, releaseRun, specOf } from "./job-table.ts";
import { quota as countQuota } from "./quota.ts";
import { retain } from "./retention.ts";
import { clone, live } from "./shared.ts";
import type { MemoryState, StoredJob } from "./state.ts";
import { recordWebhookSubmit } from "./webhooks.ts";

export function submitJob(
  s: MemoryState,
  job: NewJob,
  timing: SubmitTiming,
  admission: Admission,
): SubmitResult | SubmitDenied {
  const now = s.now();
  const { webhook } = timing;
  const idemKey =
    job.idempotencyKey === undefined ? undefined : `${job.tenant}\u0000${job.idempotencyKey}`;
  if (idemKey !== undefined) {
    const firstId = live(s.idempotency, idemKey, now)?.value;
    const first = firstId === undefined ? undefined : s.jobs.get(firstId);
    if (first) {
      if (firstId === job.id) return submittedBefore(first, job, timing);
      if (webhook) recordWebhookSubmit(s, webhook, "replayed", first.record.id, now);
      return { job: clone(first.record), replayed: true };
    }
  }
  // Its job stored already: this submit ran before (docs/adr/0032-scripts-run-twice.md). A
  // second write would reset a job a worker may have begun or finished meanwhile.
  const existing = s.jobs.get(job.id);
  if (existing) return submittedBefore(existing, job, timing);
  const deps = job.after?.length ? checkDependencies(s, job) : undefined;
  let degradation: { level: DegradationLevel; delayedMs: number } | undefined;
  if (admission.degradation) {
    const policy = admission.degradation;
    const level = levelForSubmit(s, policy, now);
    if (level === "critical" && policy.critical === "reject") {
      return {
        denied: { kind: "overloaded", level: "critical", retryAfterMs: policy.retryAfterMs },
      };
    }
    const delayedMs =
      level === "degraded"
        ? policy.degradedDelayMs
        : level === "critical"
          ? policy.criticalDelayMs
          : 0;
    degradation = { level, delayedMs };
  }
  const quota = countQuota(s, admission.quota, now);
  if (quota && !quota.admitted) return { denied: { kind: "quota", quota: quota.state } };

  // Assigned, not `{ ...spec, more }` (docs/adr/0027-objects-on-hot-paths.md).
  const spec = clone(job) as JobSpec;
  spec.createdAt = now;
  spec.runAt = (timing.runAt ?? now + timing.delayMs) + (degradation?.delayedMs ?? 0);
  const record = Object.assign({}, spec, { status: "queued", attempts: 0 }) as JobRecord;
  const message: OutboxMessage = {
    id: spec.id,
    dedupId: spec.id,
    job: spec,
    notBefore: spec.runAt,
    recoverAt: spec.runAt + timing.recoverGraceMs,
  };
  const stored: StoredJob = { record: clone(record) };
  s.jobs.set(spec.id, stored);
  indexRun(s, record);
  if (idemKey !== undefined) {
    const expiresAt = now + Math.max(s.retention.idempotencyMs, timing.idempotencyMs ?? 0);
    s.idempotency.set(idemKey, { value: spec.id, expiresAt });
    s.expiresAt(expiresAt);
    // A key of its own (a webhook's), even one shorter than the store's: the record outlives it
    // (src/store/memory/retention.ts), so no cap drops it while a redelivery could come.
    if (timing.idempotencyMs !== undefined) stored.keepUntil = expiresAt;
  }
  s.metrics.totals.submitted += 1;
  if (webhook) recordWebhookSubmit(s, webhook, "accepted", spec.id, now);
  // With dependencies not all succeeded: waiting (or cancelled), and not dispatched (ADR 0014).
  const held = deps !== undefined && (deps.failed || deps.unfinished.length > 0);
  s.events.emit(now, {
    type: "job.created",
    ...jobFields(spec),
    ...(held ? { status: deps.failed ? ("cancelled" as const) : ("waiting" as const) } : {}),
    ...(webhook
      ? {
          webhook: {
            endpoint: webhook.endpoint,
            ...(webhook.eventId !== undefined ? { eventId: webhook.eventId } : {}),
          },
        }
      : {}),
  });
  if (deps?.failed) cancelWaiting(s, stored, now, false);
  else if (held) registerWaiting(s, stored, deps.unfinished);
  else {
    s.outbox.set(spec.id, clone(message));
    s.metrics.enter(spec.id, "queued", spec.runAt);
  }
  return {
    job: clone(stored.record),
    ...(held ? {} : { message: clone(message) }),
    replayed: false,
    ...(quota ? { quota: quota.state } : {}),
    ...(degradation ? { degradation } : {}),
  };
}

/**
 * The answer to a submit whose job is stored already, as the Redis store gives it (include "job",
 * `submittedBefore`): nothing written or counted; the submitted spec with the stored job's
 * `createdAt` and `runAt`, `waiting` if it was stored waiting, `cancelled` if it was cancelled at
 * its submit, else `queued` with its message.
 */
function submittedBefore(stored: StoredJob, job: NewJob, timing: SubmitTiming): SubmitResult {
  const first = stored.record;
  const spec = clone(job) as JobSpec;
  spec.createdAt = first.createdAt;
  spec.runAt = first.runAt;
  const record = Object.assign({}, spec, { status: "queued", attempts: 0 }) as JobRecord;
  if (stored.held || first.status === "waiting") {
    record.status = "waiting";
    return { job: record, replayed: false };
  }
  if (first.status === "cancelled" && first.finishedAt === first.createdAt) {
    record.status = "cancelled";
    record.finishedAt = first.finishedAt;
    return { job: record, replayed: false };
  }
  const message: OutboxMessage = {
    id: spec.id,
    dedupId: spec.id,
    job: clone(spec),
    notBefore: spec.runAt,
    recoverAt: spec.runAt + timing.recoverGraceMs,
  };
  return { job: record, replayed: false, message };
}

export function getJob(s: MemoryState, id: string, tenant?: string): JobRecord | null {
  s.now();
  const stored = s.jobs.get(id);
  if (!stored) return null;
  if (tenant !== undefined && (stored.record.tenant ?? DEFAULT_TENANT) !== tenant) return null;
  return clone(stored.record);
}

export function jobsExist(s: MemoryState, ids: readonly string[], tenant: string): boolean[] {
  // The clock first: it drops the jobs whose retention lapsed, which no longer exist.
  s.now();
  return ids.map((id) => {
    const stored = s.jobs.get(id);
    return stored !== undefined && (stored.record.tenant ?? DEFAULT_TENANT) === tenant;
  });
}

export function cancelJob(s: MemoryState, id: string): CancelResult {
  const now = s.now();
  const stored = s.jobs.get(id);
  if (!stored) return { kind: "missing" };
  const { status } = stored.record;
  if (status === "running" && stored.leaseUntil !== undefined && stored.leaseUntil > now) {
    // An attempt holds the run lease: ask it to stop; its finishRun records `cancelled`.
    stored.record.cancelRequested = true;
    return { kind: "requested", job: clone(stored.record) };
  }
  if (status === "waiting") {
    cancelWaiting(s, stored, now);
    releaseDependents(s, id, false, now);
    return { kind: "ok", job: clone(stored.record) };
  }
  if (status !== "queued" && status !== "running") {
    return { kind: "conflict", job: clone(stored.record) };
  }
  cancelNow(s, stored, now);
  return { kind: "ok", job: clone(stored.record) };
}

/**
 * `queued`, or `running` with nobody holding its run lease → `cancelled` now: leases and slot
 * released, outbox message removed, retained, counted, `job.cancelled`.
 */
export function cancelNow(s: MemoryState, stored: StoredJob, now: number): void {
  s.metrics.leave(stored.record.id, stored.record.status);
  stored.record.status = "cancelled";
  stored.record.finishedAt = now;
  releaseRun(s, stored);
  retain(s, stored, now);
  s.outbox.delete(stored.record.id);
  s.metrics.totals.cancelled += 1;
  s.events.emit(now, { type: "job.cancelled", ...jobFields(stored.record) });
  releaseDependents(s, stored.record.id, false, now);
}

export function listJobs(s: MemoryState, query: ListJobsQuery): Page<JobRecord> {
  s.now();
  const entries: Scored<JobRecord>[] = [];
  const tenant = query.tenant ?? DEFAULT_TENANT;
  for (const { record } of s.jobs.values()) {
    if (record.tenant !== tenant) continue;
    if (query.status !== undefined && record.status !== query.status) continue;
    if (query.handler !== undefined && record.handler !== query.handler) continue;
    if (query.scheduleId !== undefined && record.scheduleId !== query.scheduleId) continue;
    entries.push({ score: record.createdAt, id: record.id, item: record });
  }
  return clone(paginate(entries, query.limit, query.cursor));
}

// ── the dead-letter list ───────────────────────────────────────────────────

export function listDead(s: MemoryState, query: DeadQuery): Page<JobRecord> {
  s.now();
  const tenant = query.tenant ?? DEFAULT_TENANT;
  const entries: Scored<JobRecord>[] = [];
  for (const [id, diedAt] of s.dead) {
    const stored = s.jobs.get(id);
    if (stored?.record.tenant === tenant) entries.push({ score: diedAt, id, item: stored.record });
  }
  return clone(paginate(entries, query.limit, query.cursor));
}

export function retryDead(
  s: MemoryState,
  id: string,
  timing: { recoverGraceMs: number },
): { job: JobRecord; message: OutboxMessage } | null {
  const now = s.now();
  const stored = s.jobs.get(id);
  if (stored?.record.status !== "dead") return null;
  const job = stored.record;
  s.dead.delete(id);
  delete stored.expiresAt;
  job.status = "queued";
  job.runAt = now;
  job.attemptBase = job.attempts;
  delete job.finishedAt;
  // A cancel asked of an attempt the queue then gave up on is spent: the new dispatch is not
  // cancelled by it.
  delete job.cancelRequested;
  stored.dispatches = (stored.dispatches ?? 0) + 1;
  const message: OutboxMessage = {
    id,
    dedupId: `${id}~r${stored.dispatches}`,
    job: specOf(job),
    notBefore: now,
    recoverAt: now + timing.recoverGraceMs,
  };
  s.outbox.set(id, clone(message));
  s.metrics.totals.retried += 1;
  s.metrics.enter(id, "queued", now);
  s.events.emit(now, { type: "job.retried", ...jobFields(job) });
  return { job: clone(job), message: clone(message) };
}

export function deleteDead(s: MemoryState, id: string): boolean {
  const now = s.now();
  const stored = s.jobs.get(id);
  if (!stored || !s.dead.has(id)) return false;
  drop(s, stored.record);
  const expiresAt = now + s.retention.jobMs;
  s.gone.set(id, { value: true, expiresAt });
  s.expiresAt(expiresAt);
  return true;
}
