/**
 * The Redis store's chunk sizes, index housekeeping and event log (see `redis-store.test.ts`):
 * a 500-schedule commit and a 2,500-id ack in one call each, expired jobs swept out of the listing
 * indexes, bounded filtered listings, cursors past deleted items, and the capped event stream.
 * Real Redis throughout.
 */
import { describe, expect, it } from "vitest";
import {
  accepted,
  FAR,
  newJob,
  schedule,
  uniq,
} from "../../../test/support/redis-store-fixtures.ts";
import { shared, withStore } from "../../../test/support/redis-store-shared.ts";
import { ValidationError } from "../../core/errors.ts";
import type { JobSpec, OutboxMessage } from "../../core/model.ts";
import { DEFAULT_REAP_AFTER_MS } from "../port.ts";
import { keys } from "./keys.ts";
import { RedisStore } from "./redis-store.ts";
import { fromIoredis } from "./script.ts";

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

  describe("a job's record gone before the sweep reached its index entries", () => {
    /** A store with the given caps; `gone(id)` removes a record as its expiry would. */
    function capped(retention: { maxFinishedJobs?: number; maxRunsPerSchedule?: number }) {
      const prefix = uniq("rs");
      const store = new RedisStore({
        client: fromIoredis(shared),
        prefix,
        retention: { jobMs: 60_000, ...retention },
      });
      const k = keys(prefix);
      const cleanup = async () => {
        const found = await shared.keys(`{${prefix}}:*`);
        if (found.length > 0) await shared.del(...found);
      };
      return { store, k, cleanup, gone: (id: string) => shared.del(k.job(id)) };
    }
    const FAIL = { ok: false as const, error: { name: "E", message: "x" }, final: true };
    const occurrence = (scheduleId: string, i: number): JobSpec => ({
      ...newJob({ scheduleId, fireAt: i }),
      createdAt: i,
      runAt: i,
    });
    async function finishPlain(store: RedisStore): Promise<string> {
      const submitted = accepted(
        await store.submitJob(newJob(), { delayMs: 0, recoverGraceMs: 60_000 }),
      );
      await store.beginRun(submitted.message!.job, 5_000);
      await store.finishRun(submitted.job.id, 1, { ok: true, result: null });
      return submitted.job.id;
    }

    it("a late delivery makes a dead occurrence again: its old dead-letter entry is not listed, deleted, nor kept", async () => {
      const { store, k, cleanup, gone } = capped({});
      try {
        const s = schedule();
        await store.putSchedule(s);
        const o = occurrence(s.id, 1);
        await store.beginRun(o, 5_000);
        await store.finishRun(o.id, 1, FAIL);
        expect((await store.listDead({ limit: 10 })).items.map((j) => j.id)).toEqual([o.id]);
        await gone(o.id);
        // A late delivery makes it again, and it runs.
        expect((await store.beginRun(o, 60_000)).kind).toBe("run");
        expect((await store.listDead({ limit: 10 })).items).toEqual([]);
        expect(await store.deleteDead(o.id)).toBe(false);
        expect((await store.getJob(o.id))?.status).toBe("running");
        expect(await shared.zscore(k.dlq("default"), o.id)).toBeNull();
        expect(await shared.zscore(k.jobs("default"), o.id)).not.toBeNull();
      } finally {
        await cleanup();
      }
    });

    it("the finished-jobs cap meeting such a job forgets its index entries too", async () => {
      const { store, k, cleanup, gone } = capped({ maxFinishedJobs: 1 });
      try {
        const submitted = accepted(
          await store.submitJob(newJob(), { delayMs: 0, recoverGraceMs: 60_000 }),
        );
        const dead = submitted.job.id;
        await store.beginRun(submitted.message!.job, 5_000);
        await store.finishRun(dead, 1, FAIL);
        await gone(dead);
        // The cap, over by one, meets the dead job's member first.
        const kept = await finishPlain(store);
        expect(await shared.zscore(k.dlq("default"), dead)).toBeNull();
        expect(await shared.zrange(k.jobs("default"), 0, -1)).toEqual([kept]);
        expect(await shared.zcard(k.expiring)).toBe(1);
      } finally {
        await cleanup();
      }
    });

    it("the runs cap does not count such a run: the runs it keeps are the newest live ones", async () => {
      const { store, cleanup, gone } = capped({ maxRunsPerSchedule: 2 });
      try {
        const s = schedule();
        await store.putSchedule(s);
        const [o1, o2, o3] = [1, 2, 3].map((i) => occurrence(s.id, i)) as [
          JobSpec,
          JobSpec,
          JobSpec,
        ];
        for (const o of [o1, o2]) {
          await store.beginRun(o, 5_000);
          await store.finishRun(o.id, 1, { ok: true, result: null });
        }
        await gone(o1.id);
        await store.beginRun(o3, 5_000);
        await store.finishRun(o3.id, 1, { ok: true, result: null });
        expect(await store.getJob(o2.id)).not.toBeNull();
        const runs = await store.listRuns(s.id, { limit: 10 });
        expect(runs.items.map((j) => j.id)).toEqual([o3.id, o2.id]);
      } finally {
        await cleanup();
      }
    });
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
