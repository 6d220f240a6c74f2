/**
 * @module
 * Records, policies and a scenario shared by the Redis store's own tests
 * (`src/store/redis/redis-store*.test.ts`): what they cannot get from the Store contract's fixtures
 * (the engine's default thresholds, a client that decodes as `@upstash/redis` does, one run through
 * most operations). Nothing here talks to Redis by itself; `redis-store-shared.ts` does.
 */
import type { Redis } from "ioredis";
import { expect } from "vitest";
import type { NewJob, OutboxMessage, ScheduleRecord } from "../../src/core/model.ts";
import type {
  Admission,
  BeginTickOptions,
  DegradationPolicy,
  Store,
  SubmitDenied,
  SubmitResult,
} from "../../src/store/port.ts";
import { fromIoredis, type ScriptClient } from "../../src/store/redis/script.ts";

/** The engine's default thresholds; `Infinity` must survive the script encoding. */
export const POLICY: DegradationPolicy = {
  queueDepth: { normal: 50, degraded: 100, critical: 500 },
  lagMs: { normal: 10_000, degraded: 30_000, critical: 300_000 },
  failureRate: { normal: 0.25, degraded: 0.5, critical: Number.POSITIVE_INFINITY },
  cpu: { normal: 50, degraded: 70, critical: 90 },
  memory: { normal: 60, degraded: 75, critical: 90 },
  debounceMs: 30_000,
};

export const TICK: BeginTickOptions = {
  leaseMs: 5_000,
  horizonMs: 0,
  limit: 10,
  recoverLimit: 10,
  recoverGraceMs: 0,
};

/** A submit guarded by a three-window quota and the default degradation policy. */
export const ADMISSION: Admission = {
  quota: {
    key: "submit:default",
    windows: [
      { windowMs: 60_000, limit: 1_000 },
      { windowMs: 3_600_000, limit: 10_000 },
      { windowMs: 86_400_000, limit: 100_000 },
    ],
  },
  degradation: {
    ...POLICY,
    degradedDelayMs: 1_000,
    critical: "reject",
    criticalDelayMs: 5_000,
    retryAfterMs: 30_000,
  },
};

/** A far-future time: a schedule due then is never due in a test. */
export const FAR = 4_000_000_000_000;

let n = 0;
export const uniq = (p: string) => `${p}-${Date.now().toString(36)}-${++n}`;

export function newJob(overrides: Partial<NewJob> = {}): NewJob {
  return {
    id: uniq("job"),
    tenant: "default",
    handler: "work",
    input: { a: 1 },
    priority: 5,
    timeoutMs: 1_000,
    retries: 0,
    tags: [],
    ...overrides,
  };
}

export function schedule(overrides: Partial<ScheduleRecord> = {}): ScheduleRecord {
  return {
    id: uniq("s"),
    tenant: "default",
    handler: "work",
    schedule: "1m",
    tz: "UTC",
    input: null,
    priority: 5,
    timeoutMs: 1_000,
    retries: 0,
    misfire: "once",
    overlap: "allow",
    jitterMs: 0,
    tags: [],
    status: "active",
    nextRunAt: 4_000_000_000_000,
    runs: 0,
    rev: 0,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    ...overrides,
  };
}

/** A submit that admission control did not refuse (none is configured where this is used). */
export function accepted(result: SubmitResult | SubmitDenied): SubmitResult {
  if ("denied" in result) throw new Error(`submit denied: ${JSON.stringify(result.denied)}`);
  return result;
}

/**
 * A script client that decodes results the way @upstash/redis does by default: every string, at
 * any depth of arrays, is replaced by its JSON.parse when that succeeds, except numbers whose text
 * would not survive the round trip.
 */
export function jsonParsing(redis: Redis): ScriptClient {
  const decode = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(decode);
    if (typeof value !== "string") return value;
    try {
      const parsed: unknown = JSON.parse(value);
      return typeof parsed === "number" && String(parsed) !== value ? value : parsed;
    } catch {
      return value;
    }
  };
  const inner = fromIoredis(redis);
  return {
    evalsha: async (sha, k, a) => decode(await inner.evalsha(sha, k, a)),
    eval: async (src, k, a) => decode(await inner.eval(src, k, a)),
  };
}

/** Exercises most operations; returns everything they answered. */
export async function scenario(store: Store) {
  const now = await store.now();
  const out: unknown[] = [];
  // Ids and values that a parsing client would turn into numbers, booleans or objects.
  const submitted = accepted(
    await store.submitJob(
      newJob({ id: "123", input: "456", tags: ["true", "null"], idempotencyKey: "7" }),
      { delayMs: 0, recoverGraceMs: 60_000 },
    ),
  );
  out.push(
    submitted,
    await store.submitJob(newJob({ idempotencyKey: "7" }), { delayMs: 0, recoverGraceMs: 0 }),
  );
  const spec = submitted.message!.job;
  const begun = await store.beginRun(spec, 5_000);
  out.push(begun);
  out.push(await store.finishRun("123", 1, { ok: true, result: "789" }));
  out.push(await store.getJob("123"));
  const s = await store.putSchedule(schedule({ id: "42", nextRunAt: now - 1_000, input: "1" }));
  out.push(s);
  const tick = await store.beginTick({
    leaseMs: 5_000,
    horizonMs: 0,
    limit: 10,
    recoverLimit: 10,
    recoverGraceMs: 0,
  });
  out.push(tick);
  expect(tick.kind).toBe("leader");
  if (tick.kind === "leader") {
    const message: OutboxMessage = {
      id: "42@1",
      dedupId: "42@1",
      job: { ...spec, id: "42@1", scheduleId: "42", fireAt: 1 },
      notBefore: 1,
      recoverAt: now - 1,
    };
    out.push(
      await store.commitTick(tick.token, [
        { id: "42", rev: 1, nextRunAt: null, runsAdded: 1, lastRunAt: 1, messages: [message] },
      ]),
    );
    out.push(await store.endTick(tick.token, []));
  }
  out.push(await store.markDead({ ...spec, id: "999" }, { name: "Error", message: "1" }));
  out.push(await store.listJobs({ limit: 10 }));
  out.push(await store.listDead({ limit: 10 }));
  out.push(await store.listSchedules({ limit: 10 }));
  out.push(await store.acquireLease("x", 1_000));
  const stats = await store.stats(POLICY);
  out.push({
    jobs: stats.jobs,
    totals: stats.totals,
    outbox: stats.outbox,
    level: stats.degradation.level,
  });
  const events = await store.events({ limit: 100 });
  out.push(events.events.map((e) => [e.type, e.jobId, e.attempt, e.error]));
  return out;
}
