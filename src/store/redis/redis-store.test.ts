/**
 * What the shared Store contract (test/contract) cannot see: cost per operation, key layout,
 * decoding through a client that JSON-parses results (as @upstash/redis does), exact round trips
 * of awkward values, chunk sizes and index housekeeping. Real Redis throughout.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countingClient } from "../../../test/support/counting-client.ts";
import {
  billedBetween,
  commandsExecuted,
  type PrivateRedis,
  startRedisServer,
} from "../../../test/support/redis-server.ts";
import { ValidationError } from "../../core/errors.ts";
import type { JobSpec, NewJob, OutboxMessage, ScheduleRecord } from "../../core/model.ts";
import type {
  Admission,
  BeginTickOptions,
  DegradationPolicy,
  Store,
  SubmitDenied,
  SubmitResult,
} from "../port.ts";
import { DEFAULT_REAP_AFTER_MS } from "../port.ts";
import { keys } from "./keys.ts";
import { RedisStore } from "./redis-store.ts";
import { fromIoredis, type ScriptClient } from "./script.ts";
import { scripts } from "./scripts.generated.ts";

const shared = new Redis("redis://127.0.0.1:6379");
afterAll(() => shared.disconnect());

/** The engine's default thresholds; `Infinity` must survive the script encoding. */
const POLICY: DegradationPolicy = {
  queueDepth: { normal: 50, degraded: 100, critical: 500 },
  lagMs: { normal: 10_000, degraded: 30_000, critical: 300_000 },
  failureRate: { normal: 0.25, degraded: 0.5, critical: Number.POSITIVE_INFINITY },
  cpu: { normal: 50, degraded: 70, critical: 90 },
  memory: { normal: 60, degraded: 75, critical: 90 },
  debounceMs: 30_000,
};

const TICK: BeginTickOptions = {
  leaseMs: 5_000,
  horizonMs: 0,
  limit: 10,
  recoverLimit: 10,
  recoverGraceMs: 0,
};

/** A submit guarded by a three-window quota and the default degradation policy. */
const ADMISSION: Admission = {
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

let n = 0;
const uniq = (p: string) => `${p}-${Date.now().toString(36)}-${++n}`;

function newJob(overrides: Partial<NewJob> = {}): NewJob {
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

function schedule(overrides: Partial<ScheduleRecord> = {}): ScheduleRecord {
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
function accepted(result: SubmitResult | SubmitDenied): SubmitResult {
  if ("denied" in result) throw new Error(`submit denied: ${JSON.stringify(result.denied)}`);
  return result;
}

/**
 * A store on the shared Redis under a fresh prefix, removed afterwards. Finished jobs are kept
 * `jobMs` (a minute: no record vanishes in the middle of a test on a busy machine; a test about
 * expiry passes a short one).
 */
function withStore(client: (redis: Redis) => ScriptClient = fromIoredis, jobMs = 60_000) {
  const prefix = uniq("rs");
  const store = new RedisStore({ client: client(shared), prefix, retention: { jobMs } });
  const cleanup = async () => {
    const found = await shared.keys(`{${prefix}}:*`);
    if (found.length > 0) await shared.del(...found);
  };
  return { store, prefix, k: keys(prefix), cleanup };
}

/**
 * A script client that decodes results the way @upstash/redis does by default: every string, at
 * any depth of arrays, is replaced by its JSON.parse when that succeeds, except numbers whose text
 * would not survive the round trip.
 */
function jsonParsing(redis: Redis): ScriptClient {
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
async function scenario(store: Store) {
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

describe("RedisStore round trips", () => {
  it("every Store method is exactly one script call", async () => {
    const { client, counter } = countingClient(fromIoredis(shared));
    const prefix = uniq("rt");
    const store = new RedisStore({ client, prefix });
    const k = keys(prefix);
    // Load every script first, so each call below is one EVALSHA.
    for (const s of Object.values(scripts)) {
      await shared.script("LOAD", s.source);
    }
    const once = async (label: string, fn: () => Promise<unknown>) => {
      const before = counter.roundTrips;
      await fn();
      expect([label, counter.roundTrips - before]).toEqual([label, 1]);
    };
    try {
      const now = await store.now();
      const job = newJob();
      const spec: JobSpec = { ...job, createdAt: now, runAt: now };
      const s = schedule({ nextRunAt: now - 1 });
      let token = 0;
      await once("now", () => store.now());
      await once("acquireLease", () => store.acquireLease("l", 1_000));
      await once("renewLease", () => store.renewLease("l", 1, 1_000));
      await once("releaseLease", () => store.releaseLease("l", 1));
      await once("putSchedule", () => store.putSchedule(s));
      await once("getSchedule", () => store.getSchedule(s.id));
      await once("listSchedules", () => store.listSchedules({ limit: 10 }));
      await once("beginTick", async () => {
        const t = await store.beginTick({
          leaseMs: 5_000,
          horizonMs: 0,
          limit: 10,
          recoverLimit: 10,
          recoverGraceMs: 0,
        });
        if (t.kind === "leader") token = t.token;
      });
      await once("commitTick", () => store.commitTick(token, []));
      await once("nextDue", () =>
        store.nextDue(token, {
          leaseMs: 5_000,
          horizonMs: 0,
          limit: 10,
          ackIds: [{ id: "x", dedupId: "x" }],
        }),
      );
      await once("ackOutbox", () => store.ackOutbox([{ id: "x", dedupId: "x" }]));
      await once("endTick", () => store.endTick(token, [{ id: "x", dedupId: "x" }]));
      await once("submitJob", () => store.submitJob(job, { delayMs: 0, recoverGraceMs: 0 }));
      await once("getJob", () => store.getJob(job.id));
      await once("listJobs", () => store.listJobs({ limit: 10 }));
      await once("beginRun", () => store.beginRun(spec, 5_000));
      await once("finishRun", () =>
        store.finishRun(job.id, 1, { ok: false, error: { name: "E", message: "x" }, final: false }),
      );
      await once("markDead", () => store.markDead(spec, { name: "E", message: "x" }));
      await once("listDead", () => store.listDead({ limit: 10 }));
      await once("retryDead", () => store.retryDead(job.id, { recoverGraceMs: 0 }));
      await once("cancelJob", () => store.cancelJob(job.id));
      await once("deleteDead", () => store.deleteDead(job.id));
      await once("listRuns", () => store.listRuns(s.id, { limit: 10 }));
      await once("deleteSchedule", () => store.deleteSchedule(s.id));
      await once("stats", () => store.stats(POLICY));
      await once("events", () => store.events({ limit: 10, types: ["job.created"] }));
      await once("submitJob with admission", () =>
        store.submitJob(newJob(), { delayMs: 0, recoverGraceMs: 0 }, ADMISSION),
      );
      const before = counter.roundTrips;
      await store.ackOutbox([]);
      expect(counter.roundTrips).toBe(before); // nothing to do: no call at all
    } finally {
      const found = await shared.keys(`${k.root}:*`);
      if (found.length > 0) await shared.del(...found);
    }
  });
});

describe("RedisStore decoding", () => {
  it("gives the same answers through a client that JSON-parses results (@upstash/redis)", async () => {
    const raw = withStore();
    const parsing = withStore(jsonParsing);
    try {
      const a = await scenario(raw.store);
      const b = await scenario(parsing.store);
      const normalise = (v: unknown) =>
        JSON.parse(JSON.stringify(v), (key, value) =>
          [
            "now",
            "createdAt",
            "runAt",
            "startedAt",
            "finishedAt",
            "token",
            "remainingMs",
            "recoverAt",
            "notBefore",
            "leaseRemainingMs",
            "updatedAt",
            "nextRunAt",
          ].includes(key) && typeof value === "number"
            ? "<time>"
            : value,
        );
      expect(normalise(b)).toEqual(normalise(a));
      const job = a[4] as { id: string; input: unknown; result: unknown; tags: string[] };
      expect(job).toMatchObject({ id: "123", input: "456", result: "789", tags: ["true", "null"] });
    } finally {
      await raw.cleanup();
      await parsing.cleanup();
    }
  });

  it("stores values exactly: precision, empty arrays and objects, unicode, escapes", async () => {
    const { store, cleanup } = withStore();
    try {
      const input = {
        float: 0.1 + 0.2,
        tiny: 1e-7,
        big: Number.MAX_SAFE_INTEGER,
        neg: -0.5,
        emptyArray: [],
        emptyObject: {},
        nested: [[], [{}], null, true],
        text: 'quote " backslash \\ slash / newline \n tab \t ünïcödé 🚀 \u2028',
      };
      const spec = newJob({ id: 'id with spaces:colons@and "quotes" 🚀', input, tags: [] });
      const { job } = accepted(await store.submitJob(spec, { delayMs: 0, recoverGraceMs: 0 }));
      expect(job.input).toEqual(input);
      const read = await store.getJob(spec.id);
      expect(read).toEqual(job);
      expect(read?.tags).toEqual([]);
      const run = await store.beginRun(
        { ...spec, createdAt: job.createdAt, runAt: job.runAt },
        1_000,
      );
      expect(run.kind).toBe("run");
      const done = await store.finishRun(spec.id, 1, { ok: true, result: input });
      expect(done.kind === "ok" && done.job.result).toEqual(input);
      const none = accepted(
        await store.submitJob(newJob({ input: undefined }), { delayMs: 0, recoverGraceMs: 0 }),
      );
      expect(none.job).not.toHaveProperty("input");
      expect(await store.getJob(none.job.id)).toEqual(none.job);
    } finally {
      await cleanup();
    }
  });
});

describe("RedisStore keys", () => {
  it("writes only keys that keys.ts names, all under the {prefix} hash tag", async () => {
    const { store, prefix, k, cleanup } = withStore();
    try {
      await scenario(store);
      const overlap = schedule({ overlap: "skip" });
      const occ: JobSpec = {
        ...newJob({ scheduleId: overlap.id, overlap: "skip", fireAt: 5 }),
        createdAt: 5,
        runAt: 5,
      };
      await store.beginRun(occ, 60_000);
      const quota = { key: "submit:default", windows: [{ windowMs: 60_000, limit: 10 }] };
      await store.submitJob(newJob(), { delayMs: 0, recoverGraceMs: 0 }, { quota });
      await store.putSchedule(schedule({ id: "43", nextRunAt: 1 }), undefined, {
        quota: { ...quota, key: "schedule:default" },
      });
      await store.stats(POLICY);
      expect(await store.beginTick({ ...TICK, holder: "a", degradation: POLICY })).toMatchObject({
        kind: "leader",
      });
      const found = (await shared.keys(`*${prefix}*`)).sort();
      const named = new Set([
        k.due,
        k.schedules("default"),
        k.jobs("default"),
        k.outbox,
        k.outboxMsg,
        k.leaseSeq,
        k.revSeq,
        k.dlq("default"),
        k.expiring,
        k.lease("tick"),
        k.lease("x"),
        k.schedule("42"),
        k.schedule("43"),
        k.scheduleRunning(overlap.id),
        k.runs("42"),
        k.runs(overlap.id),
        k.job("123"),
        k.job("999"),
        k.job(occ.id),
        k.idempotency("default", "7"),
        k.pending,
        k.metrics,
        k.events,
        k.degrade,
        k.leader,
        k.quota("submit:default"),
        k.quota("schedule:default"),
      ]);
      for (const key of found) {
        expect(key.startsWith(`{${prefix}}:`)).toBe(true);
        expect([key, named.has(key) || key.startsWith(k.job(""))]).toEqual([key, true]);
      }
      expect(found).toContain(k.scheduleRunning(overlap.id));
      expect(found).toContain(k.idempotency("default", "7"));
      for (const key of [k.pending, k.metrics, k.events, k.degrade, k.leader]) {
        expect(found).toContain(key);
      }
      expect(found).toContain(k.quota("submit:default"));
      expect(found).toContain(k.quota("schedule:default"));
    } finally {
      await cleanup();
    }
  });
});

describe("RedisStore chunks and housekeeping", () => {
  it("commits 500 schedules with a message each in one call, then acks 2,500 ids in one call (the 500 known become watches)", async () => {
    const { store, k, cleanup } = withStore();
    try {
      const now = await store.now();
      const all = await Promise.all(
        Array.from({ length: 500 }, (_, i) =>
          store.putSchedule(schedule({ id: `c${i}`, nextRunAt: now - 1_000 })),
        ),
      );
      const tick = await store.beginTick({
        leaseMs: 10_000,
        horizonMs: 0,
        limit: 500,
        recoverLimit: 0,
        recoverGraceMs: 0,
      });
      expect(tick.kind === "leader" && tick.due.length).toBe(500);
      if (tick.kind !== "leader") return;
      const messages = (id: string): OutboxMessage[] => {
        const job: JobSpec = {
          ...newJob({ id: `${id}@1`, scheduleId: id, fireAt: 1 }),
          createdAt: 1,
          runAt: 1,
        };
        return [{ id: job.id, dedupId: job.id, job, notBefore: 1, recoverAt: now + 60_000 }];
      };
      const res = await store.commitTick(
        tick.token,
        all.map((r) => {
          if (r.kind !== "ok") throw new Error("put failed");
          return {
            id: r.schedule.id,
            rev: r.schedule.rev,
            nextRunAt: FAR,
            runsAdded: 1,
            lastRunAt: 1,
            messages: messages(r.schedule.id),
          };
        }),
      );
      expect(res.kind === "ok" && res.applied.length).toBe(500);
      expect(await shared.zcard(k.outbox)).toBe(500);
      const ids = [
        ...Array.from({ length: 500 }, (_, i) => `c${i}@1`),
        ...Array.from({ length: 2_000 }, (_, i) => `x${i}`),
      ];
      await store.endTick(
        tick.token,
        ids.map((id) => ({ id, dedupId: id })),
      );
      expect(await shared.zcard(k.outbox)).toBe(500);
      expect(await shared.hlen(k.outboxMsg)).toBe(500);
      const early = await shared.zcount(k.outbox, "-inf", String(now + DEFAULT_REAP_AFTER_MS - 1));
      expect(early).toBe(0);
      const body = JSON.parse((await shared.hget(k.outboxMsg, "c7@1")) ?? "null");
      expect(body).toEqual({ ...messages("c7")[0], dedupId: "c7@1~a0", attempt: 0 });
    } finally {
      await cleanup();
    }
  });

  it("finishRun sweeps expired jobs out of the listing indexes without any listing", async () => {
    const { store, k, cleanup } = withStore(fromIoredis, 400);
    try {
      const s = schedule();
      await store.putSchedule(s);
      const expiring: string[] = [];
      for (let i = 0; i < 3; i++) {
        const spec: JobSpec = {
          ...newJob({ scheduleId: s.id, fireAt: i }),
          createdAt: i,
          runAt: i,
        };
        expiring.push(spec.id);
        await store.beginRun(spec, 5_000);
        await store.finishRun(spec.id, 1, {
          ok: false,
          error: { name: "E", message: "x" },
          final: true,
        });
      }
      expect(await shared.zcard(k.jobs("default"))).toBe(3);
      expect(await shared.zcard(k.dlq("default"))).toBe(3);
      expect(await shared.zcard(k.runs(s.id))).toBe(3);
      // Their retention (400 ms, Redis's clock) has run out once Redis has expired their records.
      for (let i = 0; (await shared.exists(...expiring.map((id) => k.job(id)))) > 0; i++) {
        if (i > 200) throw new Error("the finished jobs' records did not expire");
        await new Promise((r) => setTimeout(r, 25));
      }
      // A job without scheduleId must exist before it runs (beginRun does not re-create it).
      const submitted = accepted(
        await store.submitJob(newJob(), { delayMs: 0, recoverGraceMs: 60_000 }),
      );
      const last = submitted.job;
      await store.beginRun(submitted.message!.job, 5_000);
      await store.finishRun(last.id, 1, { ok: true, result: null });
      expect(await shared.zrange(k.jobs("default"), 0, -1)).toEqual([last.id]);
      expect(await shared.zcard(k.dlq("default"))).toBe(0);
      expect(await shared.exists(k.runs(s.id))).toBe(0);
      expect(await shared.zcard(k.expiring)).toBe(1);
      await store.deleteSchedule(s.id);
    } finally {
      await cleanup();
    }
  });

  it("bounds a filtered listing's work: a short page with a cursor, then the match", async () => {
    const { store, cleanup } = withStore();
    try {
      const rare = accepted(
        await store.submitJob(newJob({ handler: "rare" }), { delayMs: 0, recoverGraceMs: 0 }),
      );
      await new Promise((r) => setTimeout(r, 2));
      await Promise.all(
        Array.from({ length: 1_050 }, () =>
          store.submitJob(newJob({ handler: "common" }), { delayMs: 0, recoverGraceMs: 0 }),
        ),
      );
      const first = await store.listJobs({ limit: 10, handler: "rare" });
      expect(first.items).toEqual([]);
      expect(first.cursor).toBeTypeOf("string");
      const second = await store.listJobs({ limit: 10, handler: "rare", cursor: first.cursor! });
      expect(second).toEqual({ items: [rare.job] });
    } finally {
      await cleanup();
    }
  });

  it("pages past a cursor whose item was deleted, with ties on its score", async () => {
    const { store, k, cleanup } = withStore();
    try {
      const ids = ["a", "b", "c", "d", "e"];
      for (const id of ids) {
        await store.markDead(
          // An occurrence (scheduleId set): markDead creates it, as dead.
          { ...newJob({ id, scheduleId: "sched-p" }), createdAt: 1, runAt: 1 },
          { name: "E", message: id },
        );
      }
      // All died "at once": the order is by id, descending, as with ZREVRANGE.
      for (const id of ids) await shared.zadd(k.dlq("default"), 1_000, id);
      const first = await store.listDead({ limit: 2 });
      expect(first.items.map((j) => j.id)).toEqual(["e", "d"]);
      expect(await store.deleteDead("d")).toBe(true);
      const second = await store.listDead({ limit: 2, cursor: first.cursor! });
      expect(second.items.map((j) => j.id)).toEqual(["c", "b"]);
      const third = await store.listDead({ limit: 2, cursor: second.cursor! });
      expect(third).toEqual({ items: [expect.objectContaining({ id: "a" })] });
    } finally {
      await cleanup();
    }
  });
});

describe("RedisStore events", () => {
  it("examines at most 1,000 entries per call: a filtered page may be empty yet carry `last`", async () => {
    const { store, cleanup } = withStore();
    try {
      const timing = { delayMs: 0, recoverGraceMs: 0 };
      const jobs = [];
      for (let i = 0; i < 1_050; i += 50) {
        jobs.push(
          ...(await Promise.all(
            Array.from({ length: 50 }, async () =>
              accepted(await store.submitJob(newJob(), timing)),
            ),
          )),
        );
      }
      await store.cancelJob(jobs[0]!.job.id);
      const first = await store.events({ types: ["job.cancelled"], limit: 10 });
      expect(first.events).toEqual([]);
      const all = await store.events({ limit: 1_000 });
      expect(all.events).toHaveLength(1_000);
      expect(first.last).toBe(all.last);
      const second = await store.events({
        types: ["job.cancelled"],
        limit: 10,
        after: first.last!,
      });
      expect(second.events).toEqual([
        expect.objectContaining({ type: "job.cancelled", jobId: jobs[0]!.job.id }),
      ]);
      const end = await store.events({ limit: 10, after: second.last! });
      expect(end).toEqual({ events: [] });
    } finally {
      await cleanup();
    }
  });

  it("refuses an `after` that is not an event id, and writes no stream with eventsMaxLen 0", async () => {
    const prefix = uniq("ev");
    const store = new RedisStore({ client: fromIoredis(shared), prefix, eventsMaxLen: 0 });
    try {
      await expect(store.events({ limit: 1, after: "yesterday" })).rejects.toBeInstanceOf(
        ValidationError,
      );
      await store.submitJob(newJob(), { delayMs: 0, recoverGraceMs: 0 });
      expect(await shared.exists(keys(prefix).events)).toBe(0);
      expect(await store.events({ limit: 10 })).toEqual({ events: [] });
      expect((await store.stats()).totals.submitted).toBe(1);
    } finally {
      const found = await shared.keys(`{${prefix}}:*`);
      if (found.length > 0) await shared.del(...found);
    }
  });
});

const FAR = 4_000_000_000_000;

describe("RedisStore cost (billed: EVALSHA + inner calls, on a private Redis)", () => {
  let server: PrivateRedis;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  async function billed(fn: () => Promise<unknown>) {
    const before = await commandsExecuted(redis);
    await fn();
    const after = await commandsExecuted(redis);
    const byCommand = new Map<string, number>();
    for (const [cmd, calls] of after) {
      const d = calls - (before.get(cmd) ?? 0);
      if (cmd !== "info" && d > 0) byCommand.set(cmd, d);
    }
    return { total: billedBetween(before, after), byCommand };
  }

  it("an idle beginTick is EVALSHA + TIME, ZRANGE x2, PTTL, and writes nothing", async () => {
    const { client, counter } = countingClient(fromIoredis(redis));
    const store = new RedisStore({ client, prefix: "cost" });
    for (let i = 0; i < 50; i++) await store.putSchedule(schedule({ id: `far${i}` }));
    const opts = {
      leaseMs: 5_000,
      horizonMs: 60_000,
      limit: 10,
      recoverLimit: 10,
      recoverGraceMs: 0,
    };
    await store.beginTick(opts); // loads the script
    counter.roundTrips = 0;
    const m = await billed(() => store.beginTick(opts));
    expect(counter.roundTrips).toBe(1);
    expect(Object.fromEntries(m.byCommand)).toEqual({ evalsha: 1, time: 1, zrange: 2, pttl: 1 });
    expect(m.total).toBe(5);
  });

  it("submitJob is one EVALSHA; events, idempotency and admission add known commands", async () => {
    const { client, counter } = countingClient(fromIoredis(redis));
    const store = new RedisStore({ client, prefix: "cost" });
    const quiet = new RedisStore({ client, prefix: "cost-quiet", eventsMaxLen: 0 });
    const timing = { delayMs: 0, recoverGraceMs: 0 };
    await store.submitJob(newJob(), timing); // loads the script
    counter.roundTrips = 0;
    const plain = await billed(() => store.submitJob(newJob(), timing));
    const keyed = await billed(() =>
      store.submitJob(newJob({ idempotencyKey: uniq("k") }), timing),
    );
    const silent = await billed(() => quiet.submitJob(newJob(), timing));
    const guarded = await billed(() => store.submitJob(newJob(), timing, ADMISSION));
    const replay = await billed(async () => {
      const job = newJob({ idempotencyKey: uniq("k") });
      await store.submitJob(job, timing, ADMISSION);
      await store.submitJob({ ...job, id: uniq("job") }, timing, ADMISSION);
    });
    expect(counter.roundTrips).toBe(6);
    // TIME; HSET job, ZADD jobs; ZADD + HSET outbox; ZADD pending; HINCRBY submitted, queued; XADD
    expect(Object.fromEntries(plain.byCommand)).toEqual({
      evalsha: 1,
      time: 1,
      hset: 2,
      zadd: 3,
      hincrby: 2,
      xadd: 1,
    });
    expect(plain.total).toBe(10);
    expect(keyed.total).toBe(12); // + GET and SET of the idempotency key
    expect(silent.total).toBe(9); // eventsMaxLen 0: no XADD
    // Admission: HMGET metrics (averages and counters), ZCOUNT backlog, HMGET + HSET degrade
    // (the backlog signal moved), GET + SET quota; the counters become one HSET.
    expect(Object.fromEntries(guarded.byCommand)).toEqual({
      evalsha: 1,
      time: 1,
      hmget: 2,
      zcount: 1,
      hset: 4,
      get: 1,
      set: 1,
      zadd: 3,
      xadd: 1,
    });
    expect(guarded.total).toBe(15);
    // The replay answers before admission: GET key + HMGET of the first job.
    expect(replay.total).toBe(guarded.total + 2 + 4);
    console.log("submit billed:", {
      plain: plain.total,
      idempotencyKey: keyed.total,
      noEvents: silent.total,
      admission: guarded.total,
    });
  });

  it("works on a server that has never seen the scripts (NOSCRIPT → EVAL, once)", async () => {
    await redis.script("FLUSH"); // private server: nobody else uses it
    const store = new RedisStore({ client: fromIoredis(redis), prefix: "fresh" });
    const m = await billed(() => store.now());
    expect(Object.fromEntries(m.byCommand)).toEqual({ evalsha: 1, eval: 1, time: 1 });
    const again = await billed(() => store.now());
    expect(Object.fromEntries(again.byCommand)).toEqual({ evalsha: 1, time: 1 });
  });
});
