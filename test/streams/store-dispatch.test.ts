/**
 * `RedisStore({ dispatch: "streams" })` against the store contract, on a real Redis.
 *
 * The contract's job and run parts (test/contract/) build every job through the outbox message
 * `submitJob` returns, which streams mode legitimately does not return: run against this mode,
 * every one of their cases that touches a submitted job stops there (47 of them, none for another
 * reason). So this file checks what differs directly, and that nothing else does:
 *
 * - streams specifics: a due submit XADDs exactly one delivery (`j` = the job's spec, `r` = "0");
 *   a delayed one parks in `{p}:q:delayed` (score runAt) with its body in `{p}:q:bodies`, plus a
 *   wake-up (`w`) only when it is the earliest; a replay or a refused submit (quota, critical with
 *   `reject`) adds nothing; the outbox stays empty;
 * - a due submit stays out of the backlog index (`{p}:pending`) yet counts as queued and in the
 *   backlog, through the `s:in` / `s:out` counters, until it leaves `queued`;
 * - every other operation behaves as in outbox mode: a fast-check differential runs the same
 *   random operations (submit, beginRun, finishRun, cancel, markDead, retryDead, deleteDead,
 *   listings, stats) on an outbox-mode and a streams-mode store and compares their answers
 *   (times masked) and their stats after every step, while a model of the stream predicts its
 *   every entry.
 */
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { JobRecord, JobSpec, NewJob } from "../../src/core/model.ts";
import type { Admission, Store } from "../../src/store/port.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { keys } from "../../src/store/redis/keys.ts";
import { deletePrefixes } from "../redis-rest/harness.ts";
import { specOf } from "../support/job-spec.ts";
import { REDIS_URL } from "../support/stores.ts";

const redis = new Redis(REDIS_URL);
const prefixes: string[] = [];
afterAll(async () => {
  await deletePrefixes(prefixes);
  redis.disconnect();
});

function makeStore(dispatch: "outbox" | "streams") {
  const prefix = `sd-${randomUUID()}`;
  prefixes.push(prefix);
  const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch });
  const k = keys(prefix);
  return { store, prefix, k, stream: `${k.root}:q` };
}

let n = 0;
function newJob(overrides: Partial<NewJob> = {}): NewJob {
  n += 1;
  return {
    id: `job-${String(n).padStart(6, "0")}`,
    tenant: "default",
    handler: "email.send",
    input: { to: "ada@example.com", n, nested: { list: [1, 2, 3], text: 'é \u2028 "q"' } },
    priority: 5,
    timeoutMs: 30_000,
    retries: 3,
    tags: ["dispatch"],
    ...overrides,
  };
}

/** Everything streams mode writes besides the job: the stream, the delayed set, the outbox. */
async function queueState(s: { stream: string; k: ReturnType<typeof keys> }) {
  const [entries, delayed, bodies, outbox, outboxMsg] = await Promise.all([
    redis.xrange(s.stream, "-", "+"),
    redis.zrange(`${s.stream}:delayed`, 0, -1, "WITHSCORES"),
    redis.hgetall(`${s.stream}:bodies`),
    redis.zrange(s.k.outbox, 0, -1),
    redis.hkeys(s.k.outboxMsg),
  ]);
  return { entries, delayed, bodies, outbox, outboxMsg };
}

/** Begins the stored job `id` now (its run must begin). */
async function beginNow(store: Store, id: string): Promise<void> {
  const spec = specOf((await store.getJob(id)) as JobRecord);
  expect((await store.beginRun(spec, 60_000, 60_000)).kind).toBe("run");
}

function accepted(r: Awaited<ReturnType<Store["submitJob"]>>) {
  if ("denied" in r) throw new Error(`denied: ${JSON.stringify(r.denied)}`);
  return r;
}

describe("RedisStore dispatch: streams — what a submit writes", () => {
  it("a due submit XADDs exactly one delivery: j = the job's spec, r = 0; no message, no outbox entry", async () => {
    const s = makeStore("streams");
    const outbox = makeStore("outbox");
    for (const timing of [
      { delayMs: 0, recoverGraceMs: 1_000 },
      { runAt: (await s.store.now()) - 5_000, delayMs: 9_999, recoverGraceMs: 0 },
    ]) {
      const before = await queueState(s);
      const job = newJob({ idempotencyKey: `key-${n}` });
      const res = accepted(await s.store.submitJob(structuredClone(job), timing));
      const after = await queueState(s);
      expect(res.message).toBeUndefined();
      expect(res.replayed).toBe(false);
      const record = await s.store.getJob(job.id);
      expect(record).toEqual(res.job);
      const added = after.entries.slice(before.entries.length);
      expect(after.entries.slice(0, before.entries.length)).toEqual(before.entries);
      expect(added).toHaveLength(1);
      const [, fields] = added[0] as [string, string[]];
      expect(fields).toHaveLength(4);
      expect([fields[0], fields[2], fields[3]]).toEqual(["j", "r", "0"]);
      expect(JSON.parse(fields[1] as string)).toEqual(specOf(record as JobRecord));
      expect(after.delayed).toEqual([]);
      expect(after.bodies).toEqual({});
      expect(after.outbox).toEqual([]);
      expect(after.outboxMsg).toEqual([]);
      // The delivery carries what outbox mode would publish for the same job (times aside).
      const o = accepted(await outbox.store.submitJob(structuredClone(job), timing));
      expect({ ...JSON.parse(fields[1] as string), createdAt: 0, runAt: 0 }).toEqual({
        ...o.message?.job,
        createdAt: 0,
        runAt: 0,
      });
    }
    // What a worker pulls is that entry, as it is.
    const streams = new RedisStreams({ redis, prefix: s.prefix, consumer: "probe" });
    await streams.open();
    const pulled = await streams.pull(10, 10);
    const entries = (await queueState(s)).entries;
    expect(pulled.map((m) => [m.id, m.body, m.retried, m.claimed])).toEqual(
      entries.map(([id, f]) => [id, f[1], 0, false]),
    );
    await streams.close();
  });

  it("a due submit stays out of the backlog index, yet counts as queued and in the backlog until it leaves `queued`", async () => {
    const s = makeStore("streams");
    const o = makeStore("outbox");
    const figures = async (x: typeof s) => {
      const { jobs, totals, backlog } = await x.store.stats();
      return { queued: jobs.queued, submitted: totals.submitted, backlog };
    };
    const both = async (submit: (store: Store, job: NewJob) => Promise<unknown>) => {
      const job = newJob();
      await submit(s.store, structuredClone(job));
      await submit(o.store, structuredClone(job));
      return job.id;
    };
    const due = (store: Store, job: NewJob) =>
      store.submitJob(job, { delayMs: 0, recoverGraceMs: 1_000 });
    const [a, b, c] = [await both(due), await both(due), await both(due)];
    // A delayed one is indexed on Streams too (its runAt is the backlog's score).
    const later = await both((store, job) =>
      store.submitJob(job, { delayMs: 60_000, recoverGraceMs: 1_000 }),
    );
    expect(await redis.zrange(s.k.pending, 0, -1)).toEqual([later]);
    expect((await redis.zrange(o.k.pending, 0, -1)).sort()).toEqual([a, b, c, later].sort());
    expect(await redis.hget(`${s.k.root}:j:${a}`, "onStream")).toBe("1");
    expect(await redis.hget(`${s.k.root}:j:${later}`, "onStream")).toBeNull();
    expect(await figures(s)).toEqual({ queued: 4, submitted: 4, backlog: 3 });
    expect(await figures(s)).toEqual(await figures(o));

    // Each way out of `queued` counts once: begin, cancel, markDead (twice: the second changes nothing).
    for (const x of [s, o]) {
      await beginNow(x.store, a);
      await x.store.cancelJob(b);
      const dead = specOf((await x.store.getJob(c)) as JobRecord);
      await x.store.markDead(dead, { name: "Error", message: "gone" });
      await x.store.markDead(dead, { name: "Error", message: "gone" });
    }
    expect(await figures(s)).toEqual({ queued: 1, submitted: 4, backlog: 0 });
    expect(await figures(s)).toEqual(await figures(o));
    expect((await s.store.stats()).jobs).toEqual((await o.store.stats()).jobs);
    // Queued again from the dead-letter list: indexed now, like any re-queued job.
    for (const x of [s, o])
      expect(await x.store.retryDead(c, { recoverGraceMs: 1_000 })).toBeTruthy();
    expect(await redis.zrange(s.k.pending, 0, -1)).toContain(c);
    expect(await redis.hget(`${s.k.root}:j:${c}`, "onStream")).toBeNull();
    expect(await figures(s)).toEqual({ queued: 2, submitted: 4, backlog: 1 });
    expect(await figures(s)).toEqual(await figures(o));
    // Its begin takes it out of the index like any indexed job.
    for (const x of [s, o]) await beginNow(x.store, c);
    expect(await redis.zrange(s.k.pending, 0, -1)).toEqual([later]);
    expect(await figures(s)).toEqual({ queued: 1, submitted: 4, backlog: 0 });
    expect(await figures(s)).toEqual(await figures(o));
  });

  it("jobs counted queued outside the index with nothing left on the queue are settled (a begin of an older version did not count them out)", async () => {
    const s = makeStore("streams");
    const figures = async () => {
      const { jobs, totals, backlog } = await s.store.stats();
      return { queued: jobs.queued, submitted: totals.submitted, backlog };
    };
    // Two due submits; an older worker began them without counting s:out (its begin knew
    // nothing of the counters): as far as the counters go, they are still queued.
    for (const job of [newJob(), newJob()]) {
      const { job: record } = accepted(
        await s.store.submitJob(job, { delayMs: 0, recoverGraceMs: 1_000 }),
      );
      expect((await s.store.beginRun(specOf(record), 60_000, 60_000)).kind).toBe("run");
    }
    await redis.hset(s.k.metrics, "s:out", "0"); // the counters as an older begin leaves them
    expect(await figures()).toEqual({ queued: 2, submitted: 2, backlog: 2 });
    // While their deliveries are on the stream, nothing is settled.
    const streams = new RedisStreams({ redis, prefix: s.prefix, consumer: "old" });
    await streams.open();
    const pulled = await streams.pull(10, 10);
    expect(pulled).toHaveLength(2);
    await streams.ack([pulled[0]!.id]);
    expect(await figures()).toEqual({ queued: 2, submitted: 2, backlog: 2 });
    // Both acknowledged: the stream is empty, so no job can still be queued on it.
    await streams.ack([pulled[1]!.id]);
    expect(await redis.xlen(s.stream)).toBe(0);
    expect(await figures()).toEqual({ queued: 0, submitted: 2, backlog: 0 });
    expect(await redis.hmget(s.k.metrics, "s:in", "s:out")).toEqual(["2", "2"]);
    // A delayed delivery keeps the count too, until it is due and taken.
    await redis.hincrby(s.k.metrics, "s:in", 1);
    await s.store.submitJob(newJob(), { delayMs: 60_000, recoverGraceMs: 1_000 });
    expect((await figures()).queued).toBe(2); // the delayed job (indexed) and the counted one
    await streams.close();
  });

  it("a delayed submit parks in the delayed set (score runAt) with its body; a wake-up only when it is the earliest", async () => {
    const s = makeStore("streams");
    const timing = (delayMs: number) => ({ delayMs, recoverGraceMs: 0 });
    const submitDelayed = async (delayMs: number, runAt?: number) => {
      const before = await queueState(s);
      const job = newJob();
      const t = runAt === undefined ? timing(delayMs) : { ...timing(0), runAt };
      const res = accepted(await s.store.submitJob(job, t));
      expect(res.message).toBeUndefined();
      const after = await queueState(s);
      expect(after.entries.slice(0, before.entries.length)).toEqual(before.entries);
      expect(await redis.zscore(`${s.stream}:delayed`, job.id)).toBe(String(res.job.runAt));
      const body = after.bodies[job.id] as string;
      expect(body.slice(0, 2)).toBe("0 ");
      expect(JSON.parse(body.slice(2))).toEqual(
        specOf((await s.store.getJob(job.id)) as JobRecord),
      );
      expect(after.outbox).toEqual([]);
      return { job: res.job, added: after.entries.slice(before.entries.length) };
    };
    const first = await submitDelayed(60_000);
    expect(first.added.map(([, f]) => f)).toEqual([["w", String(first.job.runAt)]]);
    const later = await submitDelayed(120_000);
    expect(later.added).toEqual([]);
    const earlier = await submitDelayed(30_000);
    expect(earlier.added.map(([, f]) => f)).toEqual([["w", String(earlier.job.runAt)]]);
    // As early as the earliest is not earlier: no wake-up.
    const tie = await submitDelayed(0, earlier.job.runAt);
    expect(tie.added).toEqual([]);
    const state = await queueState(s);
    expect(state.delayed).toEqual(
      [earlier.job, tie.job, first.job, later.job]
        .sort((a, b) => a.runAt - b.runAt || (a.id < b.id ? -1 : 1))
        .flatMap((j) => [j.id, String(j.runAt)]),
    );
    expect(Object.keys(state.bodies).sort()).toEqual(
      [first, later, earlier, tie].map((x) => x.job.id).sort(),
    );
    expect(state.entries).toHaveLength(2);
  });

  it("an idempotent replay adds nothing: not to the stream, the delayed set or the outbox", async () => {
    const s = makeStore("streams");
    const due = accepted(
      await s.store.submitJob(newJob({ idempotencyKey: "due" }), { delayMs: 0, recoverGraceMs: 0 }),
    );
    const parked = accepted(
      await s.store.submitJob(newJob({ idempotencyKey: "later" }), {
        delayMs: 60_000,
        recoverGraceMs: 0,
      }),
    );
    const before = await queueState(s);
    expect(before.entries).toHaveLength(2); // the delivery and the wake-up
    for (const [key, first] of [
      ["due", due],
      ["later", parked],
    ] as const) {
      for (const delayMs of [0, 1_000, 90_000]) {
        const again = newJob({ idempotencyKey: key });
        const replay = accepted(await s.store.submitJob(again, { delayMs, recoverGraceMs: 0 }));
        expect(replay).toEqual({ replayed: true, job: first.job });
        expect(await s.store.getJob(again.id)).toBeNull();
      }
    }
    expect(await queueState(s)).toEqual(before);
  });

  it("a refused submit adds nothing (quota; critical with reject); critical with delay parks it", async () => {
    const s = makeStore("streams");
    const timing = { delayMs: 0, recoverGraceMs: 0 };
    const quota: Admission = {
      quota: { key: `q-${randomUUID()}`, windows: [{ windowMs: 60_000, limit: 1 }] },
    };
    accepted(await s.store.submitJob(newJob(), timing, quota));
    let before = await queueState(s);
    expect(before.entries).toHaveLength(1);
    const refused = newJob();
    const denied = await s.store.submitJob(refused, timing, quota);
    expect(denied).toMatchObject({ denied: { kind: "quota" } });
    expect(await s.store.getJob(refused.id)).toBeNull();
    expect(await queueState(s)).toEqual(before);

    // Queue depth 6 (the 1 above + 5) is critical for this policy.
    for (let i = 0; i < 5; i++) accepted(await s.store.submitJob(newJob(), timing));
    const policy = {
      queueDepth: { normal: 2, degraded: 4, critical: 6 },
      lagMs: { normal: 60_000, degraded: 120_000, critical: Number.POSITIVE_INFINITY },
      failureRate: { normal: 0.25, degraded: 0.5, critical: Number.POSITIVE_INFINITY },
      debounceMs: 0,
      degradedDelayMs: 1_000,
      critical: "reject" as "reject" | "delay",
      criticalDelayMs: 5_000,
      retryAfterMs: 30_000,
    };
    before = await queueState(s);
    expect(before.entries).toHaveLength(6);
    const overloaded = newJob();
    expect(await s.store.submitJob(overloaded, timing, { degradation: policy })).toEqual({
      denied: { kind: "overloaded", level: "critical", retryAfterMs: 30_000 },
    });
    expect(await s.store.getJob(overloaded.id)).toBeNull();
    expect(await queueState(s)).toEqual(before);

    const delayed = accepted(
      await s.store.submitJob(newJob(), timing, { degradation: { ...policy, critical: "delay" } }),
    );
    expect(delayed.degradation).toEqual({ level: "critical", delayedMs: 5_000 });
    expect(delayed.job.runAt).toBe(delayed.job.createdAt + 5_000);
    const after = await queueState(s);
    expect(after.delayed).toEqual([delayed.job.id, String(delayed.job.runAt)]);
    expect(after.entries.slice(6).map(([, f]) => f)).toEqual([["w", String(delayed.job.runAt)]]);
    expect(after.outbox).toEqual([]);
    // Nothing for the tick to recover either, even with no grace.
    const tick = await s.store.beginTick({
      leaseMs: 5_000,
      horizonMs: 0,
      limit: 10,
      recoverLimit: 100,
      recoverGraceMs: 0,
    });
    expect(tick.kind === "leader" ? tick.recover : []).toEqual([]);
    expect((await s.store.stats()).outbox).toBe(0);
  });
});

// ── differential: everything else as in outbox mode ─────────────────────────

type Op =
  | { op: "submit"; timing: "due" | "past" | "delay" | "at"; idem: string | null; tenant: string }
  | { op: "begin"; k: number; leaseMs: 1 | 60_000 }
  | { op: "finish"; k: number; delta: -1 | 0 | 1; outcome: "ok" | "fail" | "final" }
  | { op: "cancel" | "retryDead" | "deleteDead" | "get"; k: number }
  | { op: "dead"; k: number; expect: boolean }
  | { op: "list"; tenant: string; status: "queued" | "running" | "failed" | "dead" | null }
  | { op: "listDead"; tenant: string }
  | { op: "stats" };

const k = fc.nat(20);
const tenant = fc.constantFrom("default", "acme");
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      op: fc.constant("submit" as const),
      timing: fc.constantFrom("due", "past", "delay", "at"),
      idem: fc.option(fc.constantFrom("a", "b"), { freq: 2 }),
      tenant,
    }),
    weight: 5,
  },
  {
    arbitrary: fc.record({
      op: fc.constant("begin" as const),
      k,
      leaseMs: fc.constantFrom(1, 60_000),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      op: fc.constant("finish" as const),
      k,
      delta: fc.constantFrom(-1, 0, 0, 0, 0, 1),
      outcome: fc.constantFrom("ok", "fail", "final"),
    }),
    weight: 4,
  },
  fc.record({ op: fc.constantFrom("cancel", "retryDead", "deleteDead", "get"), k }),
  fc.record({ op: fc.constant("dead" as const), k, expect: fc.boolean() }),
  fc.record({
    op: fc.constant("list" as const),
    tenant,
    status: fc.constantFrom(null, "queued", "running", "failed", "dead"),
  }),
  fc.record({ op: fc.constant("listDead" as const), tenant }),
  fc.constant({ op: "stats" as const }),
);

const TIME_KEYS = new Set(
  "createdAt runAt startedAt finishedAt notBefore recoverAt retryAfterMs leaseUntil now at".split(
    " ",
  ),
);

/** Masks times (the two stores run a few ms apart) and cursors; drops submit's message. */
function masked(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(masked);
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      if (TIME_KEYS.has(key) && typeof v === "number") out[key] = "<time>";
      else if (key === "cursor") out[key] = typeof v;
      else out[key] = masked(v);
    }
    return out;
  }
  return value;
}

const ERR = { name: "Error", message: "boom" };

async function apply(store: Store, op: Op, id: string | undefined, job: NewJob | undefined) {
  const record = id ? await store.getJob(id) : null;
  const spec = record ? specOf(record) : undefined;
  const attempts = record?.attempts ?? 1;
  switch (op.op) {
    case "submit": {
      const now = await store.now();
      const timing = {
        due: { delayMs: 0, recoverGraceMs: 1_000 },
        past: { runAt: now - 2_000, delayMs: 0, recoverGraceMs: 1_000 },
        delay: { delayMs: 60_000, recoverGraceMs: 1_000 },
        at: { runAt: now + 30_000, delayMs: 0, recoverGraceMs: 1_000 },
      }[op.timing];
      const r = accepted(await store.submitJob(structuredClone(job as NewJob), timing));
      const { message: _message, ...rest } = r;
      return rest;
    }
    case "begin": {
      if (!spec) return "no job";
      const begun = await store.beginRun(spec, op.leaseMs, 60_000);
      // A 1 ms lease (the least): wait it out on the store's clock, so both stores see it lapsed.
      if (begun.kind === "run" && op.leaseMs === 1) {
        const end = (begun.job.startedAt as number) + 1;
        for (let i = 0; (await store.now()) <= end; i++) expect(i).toBeLessThan(10_000);
      }
      return begun;
    }
    case "finish": {
      const outcome =
        op.outcome === "ok"
          ? { ok: true as const, result: { done: id } }
          : { ok: false as const, error: ERR, final: op.outcome === "final" };
      return store.finishRun(id ?? "missing", attempts + op.delta, outcome, 60_000);
    }
    case "cancel":
      return store.cancelJob(id ?? "missing");
    case "dead":
      return spec ? store.markDead(spec, ERR, op.expect ? { attempts } : undefined) : "no job";
    case "retryDead":
      return store.retryDead(id ?? "missing", { recoverGraceMs: 1_000 });
    case "deleteDead":
      return store.deleteDead(id ?? "missing");
    case "get":
      return record;
    case "list":
      return store.listJobs({
        tenant: op.tenant,
        limit: 100,
        ...(op.status ? { status: op.status } : {}),
      });
    case "listDead":
      return store.listDead({ tenant: op.tenant, limit: 100 });
    case "stats": {
      const { jobs, totals, backlog } = await store.stats();
      return { jobs, totals, backlog };
    }
  }
}

type Entry = { j: JobSpec } | { w: number };

describe("RedisStore dispatch: streams — every other operation as in outbox mode", () => {
  it("same answers to the same random operations; the stream holds exactly what the model predicts", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 30 }), async (rest) => {
        const ops: Op[] = [{ op: "submit", timing: "due", idem: null, tenant: "default" }, ...rest];
        const a = makeStore("outbox");
        const b = makeStore("streams");
        const ids: string[] = [];
        const entries: Entry[] = [];
        const delayed = new Map<string, { runAt: number; spec: JobSpec }>();
        /** Jobs whose outbox-mode entry is still the submit's message (streams mode has none). */
        const submitMessage = new Set<string>();
        for (const op of ops) {
          const id = "k" in op ? (ids.length > 0 ? ids[op.k % ids.length] : "missing") : undefined;
          const job =
            op.op === "submit"
              ? newJob({
                  tenant: op.tenant,
                  ...(op.idem ? { idempotencyKey: op.idem } : {}),
                  retries: 1,
                })
              : undefined;
          const ra = await apply(a.store, op, id, job);
          const rb = await apply(b.store, op, id, job);
          expect(masked(rb), JSON.stringify(op)).toEqual(masked(ra));
          if (id)
            expect(masked(await b.store.getJob(id))).toEqual(masked(await a.store.getJob(id)));
          // The gauges, totals and backlog after every step, though streams mode keeps a due
          // submit out of the backlog index.
          expect(await apply(b.store, { op: "stats" }, undefined, undefined), "stats").toEqual(
            await apply(a.store, { op: "stats" }, undefined, undefined),
          );

          if (op.op === "submit" && job && !(rb as { replayed: boolean }).replayed) {
            ids.push(job.id);
            submitMessage.add(job.id);
            const created = (rb as { job: JobRecord }).job;
            const spec = specOf(created);
            if (op.timing === "due" || op.timing === "past") entries.push({ j: spec });
            else {
              const earliest = Math.min(...[...delayed.values()].map((d) => d.runAt));
              if (created.runAt < earliest) entries.push({ w: created.runAt });
              delayed.set(job.id, { runAt: created.runAt, spec });
            }
          }
          // A cancelled job's parked delivery goes with it.
          if (id && op.op === "cancel" && (rb as { kind?: string }).kind === "ok")
            delayed.delete(id);
          if (
            id &&
            ((op.op === "begin" && (rb as { kind?: string }).kind === "run") ||
              (op.op === "retryDead" && rb))
          )
            submitMessage.delete(id);

          // The stream, delayed set and bodies hold exactly the model's.
          const state = await queueState(b);
          expect(
            state.entries.map(([, f]) =>
              f[0] === "j"
                ? { j: JSON.parse(f[1] as string), r: f[3] }
                : { w: Number(f[1]), n: f.length },
            ),
          ).toEqual(entries.map((e) => ("j" in e ? { j: e.j, r: "0" } : { w: e.w, n: 2 })));
          const bodies = Object.entries(state.bodies).map(([m, v]) => [
            m,
            v.slice(0, 2),
            JSON.parse(v.slice(2)),
          ]);
          expect(Object.fromEntries(bodies.map(([m, r, spec]) => [m, [r, spec]]))).toEqual(
            Object.fromEntries([...delayed].map(([m, d]) => [m, ["0 ", d.spec]])),
          );
          expect(state.delayed).toEqual(
            [...delayed]
              .sort(([x, d], [y, e]) => d.runAt - e.runAt || (x < y ? -1 : 1))
              .flatMap(([m, d]) => [m, String(d.runAt)]),
          );
          // Outbox: streams mode holds the same entries but for the submits' messages and the
          // attempts' watches (it keeps none: docs/adr/0033-no-watch-on-streams.md).
          const watches = new Set<string>();
          for (const m of (await queueState(a)).outbox) {
            if (/,"attempt":\d+[,}]/.test((await redis.hget(a.k.outboxMsg, m)) ?? ""))
              watches.add(m);
          }
          const outboxA = (await queueState(a)).outbox.filter(
            (m) => !submitMessage.has(m) && !watches.has(m),
          );
          expect(state.outbox.sort()).toEqual(outboxA.sort());
          expect(state.outboxMsg.sort()).toEqual(outboxA.sort());
          for (const m of outboxA) {
            const [ma, mb] = await Promise.all([
              redis.hget(a.k.outboxMsg, m),
              redis.hget(b.k.outboxMsg, m),
            ]);
            expect(masked(JSON.parse(mb as string))).toEqual(masked(JSON.parse(ma as string)));
          }
        }
      }),
      { numRuns: 100 },
    );
  }, 60_000);
});
