/**
 * What the shared Store contract (test/contract) cannot see: cost per operation, key layout,
 * decoding through a client that JSON-parses results (as @upstash/redis does), exact round trips
 * of awkward values, chunk sizes and index housekeeping. Real Redis throughout. This file: one
 * script call per method, decoding and exact values, the key layout; chunks, housekeeping and the
 * event log are in `redis-store-listing.test.ts`, billed cost in `redis-store-cost.test.ts`.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { countingClient, withoutFunctions } from "../../../test/support/counting-client.ts";
import {
  ADMISSION,
  accepted,
  jsonParsing,
  newJob,
  POLICY,
  scenario,
  schedule,
  TICK,
  uniq,
} from "../../../test/support/redis-store-fixtures.ts";
import { shared, withStore } from "../../../test/support/redis-store-shared.ts";
import type { JobSpec } from "../../core/model.ts";
import type { SubmitDenied, SubmitResult } from "../port.ts";
import { keys } from "./keys.ts";
import { RedisStore } from "./redis-store.ts";
import { fromIoredis } from "./script.ts";
import { scripts } from "./scripts.generated.ts";

describe("RedisStore round trips", () => {
  it("every Store method is exactly one script call", async () => {
    const { client, counter } = countingClient(withoutFunctions(fromIoredis(shared)));
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
      await once("deferOutbox", () =>
        store.deferOutbox([{ id: "x", dedupId: "x", recoverAt: 1_000 }]),
      );
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
      await store.deferOutbox([]);
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
      await store.putSchedule(overlap);
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
        k.schedule(overlap.id),
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

describe("RedisStore keys of one schedule never name another's", () => {
  it("the default tenant's overlap-skip schedule `acme`, running, leaves tenant acme's schedule `running` alone", async () => {
    // Default-tenant schedule ids are stored bare, another tenant's as `<tenant>:<id>`: a key
    // that appended `:running` to the first was the second's hash (WRONGTYPE, 500s that told
    // tenant acme when the default tenant's schedule ran; its deliveries failed the other way).
    const { store, cleanup } = withStore();
    try {
      const mine = schedule({ id: "acme", overlap: "skip" });
      await store.putSchedule(mine);
      const occ: JobSpec = {
        ...newJob({ scheduleId: mine.id, overlap: "skip", fireAt: 5 }),
        createdAt: 5,
        runAt: 5,
      };
      expect(await store.beginRun(occ, 60_000)).toMatchObject({ kind: "run" });
      const theirs = schedule({ id: "acme:running", tenant: "acme", overlap: "skip" });
      await store.putSchedule(theirs);
      expect(await store.getSchedule(theirs.id)).toMatchObject({ id: theirs.id, tenant: "acme" });
      expect((await store.listRuns(theirs.id, { limit: 10 })).items).toEqual([]);
      // Their occurrence begins (its own overlap lease), and ours still holds its own.
      const theirOcc: JobSpec = {
        ...newJob({ tenant: "acme", scheduleId: theirs.id, overlap: "skip", fireAt: 6 }),
        createdAt: 6,
        runAt: 6,
      };
      expect(await store.beginRun(theirOcc, 60_000)).toMatchObject({ kind: "run" });
      const next: JobSpec = { ...occ, id: uniq("job"), fireAt: 7, createdAt: 7, runAt: 7 };
      expect(await store.beginRun(next, 60_000)).toMatchObject({ kind: "skipped" });
    } finally {
      await cleanup();
    }
  });

  it("builders of per-schedule keys never make one key from two store ids", () => {
    const k = keys("p");
    // Words the builders write, so that a collision has a chance to be drawn.
    const plain = fc.oneof(
      fc.constantFrom("running", "runs", "overlap", "s", "acme"),
      fc.stringMatching(/^[A-Za-z0-9._@-]{1,12}$/),
    );
    // A store id: the default tenant's id as it is, or another tenant's `<tenant>:<id>`.
    const storeId = fc.oneof(
      plain,
      fc.tuple(plain, plain).map(([t, id]) => `${t}:${id}`),
    );
    fc.assert(
      // b is often a's own id with more after it, as another tenant's id may be.
      fc.property(
        storeId.chain((a) =>
          fc.tuple(
            fc.constant(a),
            fc.oneof(
              storeId,
              plain.map((more) => `${a}:${more}`),
            ),
          ),
        ),
        ([a, b]) => {
          const builders = [k.schedule, k.scheduleRunning, k.runs];
          for (const [i, x] of builders.entries()) {
            for (const [j, y] of builders.entries()) {
              if (x(a) === y(b)) expect([i, a]).toEqual([j, b]);
            }
          }
        },
      ),
    );
  });

  it("no lease name makes the fencing sequence's key, nor another name's", () => {
    const k = keys("p");
    const name = fc.oneof(
      fc.constantFrom("seq", "seq~", "seq~~", "tick", "~", ""),
      fc.stringMatching(/^(seq)?[~a-z]{0,4}$/),
    );
    fc.assert(
      fc.property(name, name, (a, b) => {
        expect(k.lease(a)).not.toBe(k.leaseSeq);
        if (a !== b) expect(k.lease(a)).not.toBe(k.lease(b));
      }),
    );
    // Every other name keeps its key: the tick lease is where deployments have it.
    expect(k.lease("tick")).toBe("{p}:lease:tick");
    expect(k.lease("seqx")).toBe("{p}:lease:seqx");
  });
});

describe("RedisStore outbox: a job's first message is its entry alone", () => {
  const leader = async (store: RedisStore) => {
    const t = await store.beginTick(TICK);
    if (t.kind !== "leader") throw new Error(`not the leader: ${t.kind}`);
    await store.endTick(t.token, []);
    return t;
  };

  it("submitJob, submitJobs and a released dependent write no body; the tick recovers the message each answered", async () => {
    const { store, k, cleanup } = withStore();
    try {
      const single = accepted(await store.submitJob(newJob(), { delayMs: 0, recoverGraceMs: 0 }));
      const dep = accepted(await store.submitJob(newJob(), { delayMs: 0, recoverGraceMs: 0 }));
      const batch = await store.submitJobs(
        [{ job: newJob({ input: { big: "x".repeat(500), u: "é😀" } }), delayMs: 0 }],
        { recoverGraceMs: 0 },
      );
      const many = accepted(batch[0] as SubmitResult | SubmitDenied);
      const waiting = accepted(
        await store.submitJob(newJob({ after: [dep.job.id] }), { delayMs: 0, recoverGraceMs: 0 }),
      );
      expect(waiting.job.status).toBe("waiting");
      expect((await store.beginRun(dep.message?.job as JobSpec, 60_000)).kind).toBe("run");
      await store.finishRun(dep.job.id, 1, { ok: true, result: null });
      const released = await store.getJob(waiting.job.id);
      expect(released?.status).toBe("queued");

      const firsts = [single, many].map((r) => r.message);
      const ids = [single.job.id, many.job.id, waiting.job.id];
      for (const id of ids) {
        expect([id, await shared.zscore(k.outbox, id)]).toEqual([id, expect.any(String)]);
        expect([id, await shared.hexists(k.outboxMsg, id)]).toEqual([id, 0]);
      }
      const { recover } = await leader(store);
      const byId = new Map(recover.map((m) => [m.id, m]));
      for (const m of firsts) {
        if (!m) throw new Error("no message");
        expect(byId.get(m.id)).toEqual({ ...m, recoverAt: expect.any(Number) });
      }
      expect(byId.get(waiting.job.id)).toEqual({
        id: waiting.job.id,
        dedupId: waiting.job.id,
        job: {
          ...(({ status, attempts, ...spec }) => spec)(released as NonNullable<typeof released>),
        },
        notBefore: released?.runAt,
        recoverAt: expect.any(Number),
      });
    } finally {
      await cleanup();
    }
  });

  it("an entry whose job is gone is dropped, not published; an ack of it writes nothing", async () => {
    const { store, k, cleanup } = withStore();
    try {
      const gone = accepted(await store.submitJob(newJob(), { delayMs: 0, recoverGraceMs: 0 }));
      const kept = accepted(await store.submitJob(newJob(), { delayMs: 0, recoverGraceMs: 0 }));
      await shared.del(k.job(gone.job.id)); // as an expired or deleted record would be
      await store.ackOutbox([{ id: gone.job.id, dedupId: gone.job.id }]);
      expect(await shared.hlen(k.outboxMsg)).toBe(0);
      const { recover } = await leader(store);
      expect(recover.map((m) => m.id)).toEqual([kept.job.id]);
      expect(await shared.zscore(k.outbox, gone.job.id)).toBeNull();
      // The acked first message gets a body: the attempt-0 watch.
      await store.ackOutbox([{ id: kept.job.id, dedupId: kept.job.id }]);
      const watch = JSON.parse((await shared.hget(k.outboxMsg, kept.job.id)) ?? "null");
      expect(watch).toMatchObject({ id: kept.job.id, dedupId: `${kept.job.id}~a0`, attempt: 0 });
      expect(watch.job).toEqual(kept.message?.job);
      // A late ack under the first dedupId leaves the watch as it is.
      await store.ackOutbox([{ id: kept.job.id, dedupId: kept.job.id }]);
      expect(JSON.parse((await shared.hget(k.outboxMsg, kept.job.id)) ?? "null")).toEqual(watch);
    } finally {
      await cleanup();
    }
  });
});
