/**
 * Invariants I1 (no loss) and I2 (effectively once), and fencing of attempts, on the Redis
 * Streams transport under crashes (docs/streams.md, "Crashes"; docs/architecture.md,
 * "Invariants"), on a real Redis.
 *
 * Each fast-check run is one scenario on a fresh prefix: 1–3 live worker rigs (engine +
 * `PullWorker` on a connection of their own, see `invariants-rig.ts`) and one or more doomed ones
 * run a random workload — jobs that succeed, fail N times then succeed, always fail (retries r),
 * throw `NonRetryableError`, some delayed — while faults are injected:
 *   - kill-mid:   a rig is killed while handlers run on it (they never finish);
 *   - kill-after: a rig is killed after handlers returned and before finishRun recorded them;
 *   - stall:      a live consumer holds the deliveries it pulled past the claim idle time;
 *   - dup:        the delivery of an existing job is published again (`streams.publish`);
 *   - drop:       a live rig's connections are killed server-side (ioredis reconnects);
 *   - tick:       a tick runs (the reaper re-publishes the watches of lapsed attempts);
 *   - slow:       a live rig's next beginRun answer is held (applied at once, answered late).
 * Handlers take 10–700 ms, so deliveries also sit pending past `claimIdleMs` (150 ms) while their
 * handler runs and are taken over (begin-run answers busy).
 *
 * Then, once every job is final and the queue is empty:
 *   I1 every job ends as planned: succeeded (its result naming the run that completed it), or
 *      dead with the error it threw; nothing is left unread, pending or delayed;
 *   I2 a job's side effect completed once — apart from completions whose finishRun a killed rig
 *      froze (the documented window), counted separately as `crashAfterEffect`;
 *   I3 no two runs of one job's handler overlapped in time (fencing by the run lease).
 *
 * Reproduce a failure: TW_STREAMS_SEED=<seed> [TW_STREAMS_PATH=<path>] npx vitest run
 * test/streams/invariants.test.ts (the seed and path are in fast-check's report).
 */
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { JobRecord, JobSpec } from "../../src/core/model.ts";
import { createEngine } from "../../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { REDIS_URL } from "../support/stores.ts";
import {
  engineOptions,
  Ledger,
  type Mode,
  type Plan,
  Rig,
  type RigKind,
} from "./invariants-rig.ts";

const RUNS = Number(process.env.TW_STREAMS_RUNS ?? 6);
/**
 * Longest hold of a beginRun answer (the "slow" fault). Within the lease grace by default; set
 * TW_STREAMS_SLOW_BEGIN_MS=1000 to hold answers past the grace, which the runner does not
 * survive today (see the report: two attempts of one job run at once, I2/I3).
 */
const SLOW_BEGIN_MS = Number(process.env.TW_STREAMS_SLOW_BEGIN_MS ?? 50);
/** Every job must be final this long after the last fault. */
const SETTLE_MS = 30_000;

type FaultKind = "kill-mid" | "kill-after" | "stall" | "dup" | "drop" | "tick" | "slow";
interface Fault {
  kind: FaultKind;
  /** When it strikes (ms after the submits); for a kill, how long after its rig has work. */
  at: number;
  /** Which rig or job it picks (modulo). */
  pick: number;
}
interface JobPlan extends Plan {
  retries: number;
  delayMs: number;
}
interface Scenario {
  live: number;
  concurrency: number;
  jobs: JobPlan[];
  faults: Fault[];
}

const planArb: fc.Arbitrary<JobPlan> = fc.record({
  mode: fc.constantFrom<Mode>("ok", "ok", "failN", "failN", "always", "nonretry"),
  failTimes: fc.integer({ min: 1, max: 3 }),
  ms: fc.constantFrom(10, 40, 120, 300, 700),
  retries: fc.integer({ min: 0, max: 2 }),
  delayMs: fc.constantFrom(0, 0, 0, 200, 700),
});
const faultArb = (kinds: FaultKind[]): fc.Arbitrary<Fault> =>
  fc.record({
    kind: fc.constantFrom(...kinds),
    at: fc.integer({ min: 0, max: 1_200 }),
    pick: fc.nat(1_000),
  });
const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  live: fc.integer({ min: 1, max: 3 }),
  concurrency: fc.integer({ min: 1, max: 4 }),
  jobs: fc.array(planArb, { minLength: 6, maxLength: 14 }),
  faults: fc
    .tuple(
      faultArb(["kill-mid", "kill-after"]),
      fc.array(
        faultArb(["kill-mid", "kill-after", "stall", "dup", "dup", "drop", "tick", "slow"]),
        {
          minLength: 2,
          maxLength: 6,
        },
      ),
    )
    .map(([kill, more]) => [kill, ...more]),
});

interface Totals {
  scenarios: number;
  jobs: number;
  handlerRuns: number;
  killed: number;
  frozen: number;
  crashAfterEffect: number;
  claimed: number;
  deferred: number;
  stalls: number;
  dups: number;
  drops: number;
  ticks: number;
  slowBegins: number;
}
const totals: Totals = {
  scenarios: 0,
  jobs: 0,
  handlerRuns: 0,
  killed: 0,
  frozen: 0,
  crashAfterEffect: 0,
  claimed: 0,
  deferred: 0,
  stalls: 0,
  dups: 0,
  drops: 0,
  ticks: 0,
  slowBegins: 0,
};

/** Resolves once `check` holds, re-checking every 25 ms; throws `what` after `ms`. */
async function until(check: () => Promise<boolean> | boolean, what: string, ms: number) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function deletePrefix(redis: Redis, prefix: string) {
  let cursor = "0";
  do {
    const [next, found] = await redis.scan(cursor, "MATCH", `{${prefix}}:*`, "COUNT", 1000);
    if (found.length > 0) await redis.del(...found);
    cursor = next;
  } while (cursor !== "0");
}

function specOf(job: JobRecord): JobSpec {
  const {
    status: _s,
    attempts: _a,
    attemptBase: _b,
    startedAt: _st,
    finishedAt: _f,
    result: _r,
    error: _e,
    ...spec
  } = job;
  return spec;
}

async function scenario(s: Scenario): Promise<void> {
  const prefix = `inv-streams-${randomUUID()}`;
  const base = new Redis(REDIS_URL);
  const store = new RedisStore({ client: fromIoredis(base), prefix, dispatch: "streams" });
  const streams = new RedisStreams({ redis: base, prefix, consumer: "submitter" });
  const submitter = createEngine({
    ...engineOptions(),
    store,
    transport: streams,
    handlers: { work: { run: () => Promise.reject(new Error("the submitter runs nothing")) } },
  });
  const ledger = new Ledger();
  const rigs: Rig[] = [];
  const tasks: Promise<unknown>[] = [];
  const counts = { dups: 0, drops: 0, ticks: 0, slow: 0 };
  const rig = (kind: RigKind) => {
    const r = new Rig(rigs.length, kind, prefix, ledger, kind === "live" ? s.concurrency : 2);
    rigs.push(r);
    return r;
  };
  try {
    for (let i = 0; i < s.live; i++) await rig("live").start();
    // Doomed rigs pull from the start and are killed once they hold work (or after 3 s).
    for (const fault of s.faults) {
      if (fault.kind !== "kill-mid" && fault.kind !== "kill-after") continue;
      const doomed = rig(fault.kind === "kill-mid" ? "crash-mid" : "crash-after");
      await doomed.start();
      const hasWork =
        fault.kind === "kill-mid"
          ? () => ledger.active(doomed.id) > 0
          : () => ledger.frozen.some((f) => f.rig === doomed.id);
      tasks.push(
        until(hasWork, "work on a doomed rig", 3_000)
          .catch(() => {})
          .then(() => new Promise((r) => setTimeout(r, fault.at % 400)))
          .then(() => doomed.kill()),
      );
    }

    const expected = new Map<string, JobPlan>();
    for (const plan of s.jobs) {
      const budget = plan.mode === "always" ? plan.retries : plan.failTimes + 8;
      const { job } = await submitter.broker.submit({
        handler: "work",
        input: { mode: plan.mode, failTimes: plan.failTimes, ms: plan.ms },
        retries: budget,
        timeout: 1_000,
        ...(plan.delayMs > 0 ? { delay: plan.delayMs } : {}),
      });
      expected.set(job.id, { ...plan, retries: budget });
    }
    const ids = [...expected.keys()];

    // The other faults, on a timeline.
    const started = Date.now();
    const live = rigs.filter((r) => r.kind === "live");
    for (const fault of [...s.faults].sort((a, b) => a.at - b.at)) {
      if (fault.kind === "kill-mid" || fault.kind === "kill-after") continue;
      const wait = started + fault.at - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const target = live[fault.pick % live.length] as Rig;
      if (fault.kind === "stall") target.stallNextMs = 400 + (fault.pick % 300);
      if (fault.kind === "slow") {
        target.slowNextBeginMs = 1 + (fault.pick % SLOW_BEGIN_MS);
        counts.slow++;
      }
      if (fault.kind === "drop") counts.drops += (await target.drop(base)) > 0 ? 1 : 0;
      if (fault.kind === "tick") {
        await submitter.ticker.tick();
        counts.ticks++;
      }
      if (fault.kind === "dup") {
        const record = await store.getJob(ids[fault.pick % ids.length] as string);
        if (record) {
          const job = specOf(record);
          const [sent] = await streams.publish([
            { id: job.id, dedupId: job.id, job, notBefore: job.runAt, recoverAt: job.runAt },
          ]);
          expect(sent?.ok).toBe(true);
          counts.dups++;
        }
      }
    }
    await Promise.all(tasks);

    // Settle: every job final, then nothing left unread, pending or delayed.
    const records = new Map<string, JobRecord>();
    const final = new Set(["succeeded", "dead", "cancelled", "skipped"]);
    await until(
      async () => {
        for (const id of ids) {
          if (final.has(records.get(id)?.status ?? "")) continue;
          const job = await store.getJob(id);
          if (job) records.set(id, job);
          if (!final.has(job?.status ?? "")) return false;
        }
        return true;
      },
      "every job final",
      SETTLE_MS,
    ).catch((error) => {
      const open = ids
        .filter((id) => !final.has(records.get(id)?.status ?? ""))
        .map(
          (id) => `${id} ${JSON.stringify(expected.get(id))}: ${JSON.stringify(records.get(id))}`,
        );
      throw new Error(`I1 (no loss): ${String(error)}; not final:\n${open.join("\n")}`);
    });
    const root = `{${prefix}}`;
    const queue = async () => {
      const [length, delayed, pending] = await Promise.all([
        base.xlen(`${root}:q`),
        base.zcard(`${root}:q:delayed`),
        base.xpending(`${root}:q`, "tickwork").then((p) => Number((p as [number])[0])),
      ]);
      return { length, delayed, pending };
    };
    await until(
      async () => Object.values(await queue()).every((v) => v === 0),
      "the queue empty",
      10_000,
    ).catch(async (error) => {
      throw new Error(`queue not drained: ${String(error)} ${JSON.stringify(await queue())}`);
    });

    // I1: each job as planned. A job that always fails may also end dead unrun once crashes
    // spent its attempts (an attempt begun past the last one: `DeliveryFailed`).
    const wrong: string[] = [];
    for (const [id, plan] of expected) {
      const job = records.get(id) as JobRecord;
      const threw = ledger.runs.filter((r) => r.job === id && r.outcome === "threw").length;
      const allowed: Record<Mode, string[]> = {
        ok: [],
        failN: [],
        nonretry: ["NonRetryableError"],
        always: threw < job.attempts ? ["Error", "DeliveryFailed"] : ["Error"],
      };
      const errors = allowed[plan.mode];
      const ok =
        plan.mode === "ok" || plan.mode === "failN"
          ? job.status === "succeeded"
          : job.status === "dead" && errors.includes(job.error?.name ?? "");
      if (!ok) wrong.push(`${id} ${JSON.stringify(plan)}: ${JSON.stringify(job)}`);
    }
    expect(wrong, "I1: jobs not in their planned final state").toEqual([]);
    // The store's own books agree: each job succeeded or died once; nothing left in flight.
    const statuses = [...records.values()].map((j) => j.status);
    const books = await store.stats();
    expect(books.totals.succeeded, "succeeded once each").toBe(
      statuses.filter((x) => x === "succeeded").length,
    );
    expect(books.totals.dead, "dead once each").toBe(statuses.filter((x) => x === "dead").length);
    expect(books.jobs).toMatchObject({ queued: 0, running: 0, failed: 0 });
    // A due submit stays out of the backlog index, counted in and out instead
    // (docs/adr/0041-streams-submit-outside-the-backlog.md): the books still balance.
    expect(books.totals.submitted, "submitted once each").toBe(expected.size);
    expect(books.backlog, "nothing left in the backlog").toBe(0);

    // I2: one completion per succeeded job (the recorded one), none for dead ones; any other
    // completion must be one whose finishRun a killed rig froze.
    const doubled: string[] = [];
    let crashAfterEffect = 0;
    for (const [id, plan] of expected) {
      const job = records.get(id) as JobRecord;
      const done = ledger.completions.filter((c) => c.job === id);
      const recorded = job.result as { rig: number; attempt: number } | undefined;
      const isRecorded = (c: { rig: number; attempt: number }) =>
        job.status === "succeeded" && c.rig === recorded?.rig && c.attempt === recorded.attempt;
      if (job.status === "succeeded") {
        expect(recorded?.attempt, `${id}: result of the last attempt`).toBe(job.attempts);
        expect(done.filter(isRecorded), `${id}: the recorded completion`).toHaveLength(1);
      }
      for (const c of done.filter((d) => !isRecorded(d))) {
        const frozen = ledger.frozen.some(
          (f) => f.job === id && f.attempt === c.attempt && f.rig === c.rig && f.ok,
        );
        const killed = rigs[c.rig]?.killedAt;
        if (frozen && killed !== undefined && c.at <= killed) crashAfterEffect++;
        else {
          const runs = ledger.runs.filter((r) => r.job === id);
          doubled.push(`${id} ${JSON.stringify(plan)} ${job.status}: runs ${JSON.stringify(runs)}`);
        }
      }
    }
    expect(doubled, "I2: side effects completed more than once").toEqual([]);

    // I3: no two runs of one job's handler overlap.
    const overlaps: string[] = [];
    for (const id of ids) {
      const runs = ledger.runs.filter((r) => r.job === id).sort((a, b) => a.start - b.start);
      for (let i = 1; i < runs.length; i++) {
        const prev = runs[i - 1];
        const next = runs[i];
        if (prev && next && (prev.end ?? Number.POSITIVE_INFINITY) > next.start) {
          overlaps.push(`${id}: ${JSON.stringify(prev)} overlaps ${JSON.stringify(next)}`);
        }
      }
    }
    expect(overlaps, "I3: attempts of one job ran at the same time").toEqual([]);

    totals.scenarios++;
    totals.jobs += ids.length;
    totals.handlerRuns += ledger.runs.length;
    totals.killed += rigs.filter((r) => r.killed).length;
    totals.frozen += ledger.frozen.length;
    totals.crashAfterEffect += crashAfterEffect;
    for (const r of rigs) {
      totals.stalls += r.stalls;
      totals.deferred += r.worker.stats().deferred;
      if (!r.killed) totals.claimed += (await r.streams.stats()).claimed;
    }
    totals.dups += counts.dups;
    totals.drops += counts.drops;
    totals.ticks += counts.ticks;
    totals.slowBegins += counts.slow;
  } finally {
    await Promise.allSettled(tasks);
    await Promise.allSettled(rigs.map((r) => r.stop()));
    await streams.close();
    await deletePrefix(base, prefix);
    base.disconnect();
  }
}

describe("Redis Streams: invariants under crashes, stalls, duplicates and dropped connections", () => {
  afterAll(() => {
    console.log("streams invariants:", totals);
    // Only meaningful if the faults happened: check they did.
    expect(totals.scenarios).toBeGreaterThan(0);
    expect(totals.killed).toBeGreaterThanOrEqual(totals.scenarios);
    expect(totals.claimed).toBeGreaterThan(0);
    expect(totals.deferred).toBeGreaterThan(0);
  });

  it("no loss (I1), effectively once (I2), fencing (I3)", async () => {
    const seed = process.env.TW_STREAMS_SEED;
    await fc.assert(fc.asyncProperty(scenarioArb, scenario), {
      numRuns: RUNS,
      endOnFailure: true,
      ...(seed ? { seed: Number(seed) } : {}),
      ...(process.env.TW_STREAMS_PATH ? { path: process.env.TW_STREAMS_PATH } : {}),
    });
  }, 180_000);
});
