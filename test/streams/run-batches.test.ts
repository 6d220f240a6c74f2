/**
 * `beginRun` and `finishRun` in groups on a streams-mode `RedisStore` (src/store/redis/call-batch.ts,
 * the `beginRuns` / `finishRuns` scripts), on a real Redis:
 *
 * - a fast-check differential: waves of random begins (with and without a delivery token,
 *   limits and a node: calls of different lengths in one batch), or of random finishes (with and
 *   without a result, failures), each wave's calls made in one turn (so grouped) on a
 *   streams-mode store and one after another on an outbox-mode store (never grouped), give the
 *   same answers, the same job records and the same totals and gauges (a wave holds one
 *   operation: begins and finishes made at the same time are concurrent, so either may be
 *   applied first, grouped or not);
 * - a call whose part of a batch fails inside Redis (a job key of another type) rejects alone;
 *   the others of its batch are recorded and counted;
 * - the calls of a batch that never reaches Redis all reject, and nothing of them is written.
 */
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { JobSpec, NewJob } from "../../src/core/model.ts";
import type { BeginRunResult, FinishRunResult, RunOutcome, Store } from "../../src/store/port.ts";
import { MAX_BATCH } from "../../src/store/redis/call-batch.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { keys } from "../../src/store/redis/keys.ts";
import type { ScriptClient } from "../../src/store/redis/script.ts";
import { deletePrefixes } from "../redis-rest/harness.ts";
import { specOf } from "../support/job-spec.ts";
import { maskTimes } from "../support/masked.ts";
import { REDIS_URL } from "../support/stores.ts";

const redis = new Redis(REDIS_URL);
const prefixes: string[] = [];
afterAll(async () => {
  await deletePrefixes(prefixes);
  redis.disconnect();
});

/** A store on the shared connection; `functions` lists the Redis functions it called, in order. */
function makeStore(dispatch: "outbox" | "streams", client: ScriptClient = fromIoredis(redis)) {
  const prefix = `rb-${randomUUID()}`;
  prefixes.push(prefix);
  const functions: string[] = [];
  const fcall = client.fcall;
  const counted: ScriptClient = fcall
    ? {
        ...client,
        fcall: (name, k, args) => {
          functions.push(name.split("_")[1]!);
          return fcall(name, k, args);
        },
      }
    : client;
  const store = new RedisStore({ client: counted, prefix, dispatch });
  return { store, k: keys(prefix), functions };
}

let n = 0;
function newJob(): NewJob {
  n += 1;
  return {
    id: `job-${String(n).padStart(6, "0")}`,
    tenant: "default",
    handler: "email.send",
    input: { n, text: 'é \u2028 "q"' },
    priority: 5,
    timeoutMs: 30_000,
    retries: 1,
    tags: [],
  };
}

async function submit(store: Store, job: NewJob): Promise<JobSpec> {
  const r = await store.submitJob(structuredClone(job), { delayMs: 0, recoverGraceMs: 1_000 });
  if ("denied" in r) throw new Error(`denied: ${JSON.stringify(r.denied)}`);
  return specOf(r.job);
}

const TIME_KEYS = new Set(
  "createdAt runAt startedAt finishedAt leaseUntil retryAfterMs at".split(" "),
);

/** Times masked: the two stores run apart, and a batch reads the clock once for all its calls. */
const masked = (value: unknown) => maskTimes(value, TIME_KEYS);

/**
 * The totals and gauges of a store's metrics hash (histograms and averages hold times), as the
 * store reports them: a Streams submit due at once counts in `s:in` (and in `s:out` once it
 * leaves `queued`) instead of `t:submitted` and `g:queued`. Zeros are left out (a field one mode
 * never wrote is 0 in the other).
 */
async function counters(k: ReturnType<typeof keys>): Promise<Record<string, number>> {
  const all = await redis.hgetall(k.metrics);
  const n = (field: string) => Number(all[field] ?? 0);
  const out: Record<string, number> = {};
  for (const [field, value] of Object.entries(all)) {
    if (field.startsWith("t:") || field.startsWith("g:")) out[field] = Number(value);
  }
  out["t:submitted"] = n("t:submitted") + n("s:in");
  out["g:queued"] = n("g:queued") + Math.max(0, n("s:in") - n("s:out"));
  return Object.fromEntries(Object.entries(out).filter(([, v]) => v !== 0));
}

/**
 * A begin may carry a delivery token (from a small set, so some are replays), a concurrency
 * limit, a rate limit and a node: a batch then mixes calls of different lengths.
 */
type Call =
  | {
      op: "begin";
      j: number;
      token?: number;
      limit?: number;
      rate?: number;
      node?: string;
    }
  | {
      op: "finish";
      j: number;
      delta: -1 | 0 | 1;
      outcome: "ok" | "ok-without-result" | "fail" | "final";
      recordOnly: boolean;
    }
  | { op: "finish-missing" };

const JOBS = 6;
const beginArb: fc.Arbitrary<Call> = fc.record(
  {
    op: fc.constant("begin" as const),
    j: fc.nat(JOBS - 1),
    token: fc.nat(7),
    limit: fc.integer({ min: 1, max: 3 }),
    rate: fc.integer({ min: 1, max: 3 }),
    node: fc.constantFrom("node-a", "node-b"),
  },
  { requiredKeys: ["op", "j"] },
);
const finishArb: fc.Arbitrary<Call> = fc.oneof(
  {
    arbitrary: fc.record({
      op: fc.constant("finish" as const),
      j: fc.nat(JOBS - 1),
      delta: fc.constantFrom(-1, 0, 0, 0, 1),
      outcome: fc.constantFrom("ok", "ok-without-result", "fail", "final"),
      // A success answered without the job (the runner's finishes).
      recordOnly: fc.boolean(),
    }),
    weight: 6,
  },
  fc.constant({ op: "finish-missing" as const }),
);
/**
 * A wave: begins, or finishes, up to 2.5 × MAX_BATCH of them, so a wave can fill a batch and go
 * on into the next (`size: "max"`: lengths across the whole range, not fast-check's small ones).
 */
const WAVE_MAX = Math.ceil(MAX_BATCH * 2.5);
const waveArb = fc.oneof(
  fc.array(beginArb, { minLength: 1, maxLength: WAVE_MAX, size: "max" }),
  fc.array(finishArb, { minLength: 1, maxLength: WAVE_MAX, size: "max" }),
);

const ERR = { name: "Error", message: "boom" };

/** Starts `call` on `store` with the arguments as of the wave's start (`attempts` per job). */
function start(
  store: Store,
  call: Call,
  specs: JobSpec[],
  attempts: number[],
): Promise<BeginRunResult | FinishRunResult> {
  if (call.op === "begin") {
    return store.beginRun(
      specs[call.j]!,
      60_000,
      60_000,
      call.token === undefined ? undefined : { id: `token-${call.token}`, expiresAt: 4e12 },
      call.limit === undefined ? undefined : { limit: call.limit, key: "mail" },
      call.rate === undefined ? undefined : { limit: call.rate, periodMs: 60_000, key: "mail" },
      call.node,
    );
  }
  if (call.op === "finish-missing")
    return store.finishRun("missing", 1, { ok: true, result: null }, 60_000);
  const outcome: RunOutcome =
    call.outcome === "ok"
      ? { ok: true, result: { done: call.j } }
      : call.outcome === "ok-without-result"
        ? { ok: true, result: undefined }
        : { ok: false, error: ERR, final: call.outcome === "final" };
  return store.finishRun(specs[call.j]!.id, attempts[call.j]! + call.delta, outcome, 60_000, {
    recordOnly: call.recordOnly,
  });
}

describe("beginRun and finishRun grouped (dispatch: streams)", () => {
  it("waves of calls made at once answer and record exactly what the same calls one after another do", async () => {
    let grouped = 0;
    let longest = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(waveArb, { minLength: 1, maxLength: 6 }), async (waves) => {
        const a = makeStore("outbox");
        const b = makeStore("streams");
        const jobs = Array.from({ length: JOBS }, newJob);
        const specsA: JobSpec[] = [];
        const specsB: JobSpec[] = [];
        for (const job of jobs) {
          specsA.push(await submit(a.store, job));
          specsB.push(await submit(b.store, job));
        }
        for (const wave of waves) {
          longest = Math.max(longest, wave.length);
          const attempts = await Promise.all(
            jobs.map(async (job) => (await a.store.getJob(job.id))?.attempts ?? 0),
          );
          const answersA: unknown[] = [];
          for (const call of wave) answersA.push(await start(a.store, call, specsA, attempts));
          // All in one turn: grouped into batches, applied in this order.
          const answersB = await Promise.all(
            wave.map((call) => start(b.store, call, specsB, attempts)),
          );
          expect(masked(answersB)).toEqual(masked(answersA));
        }
        for (const job of jobs) {
          expect(masked(await b.store.getJob(job.id))).toEqual(
            masked(await a.store.getJob(job.id)),
          );
        }
        expect(await counters(b.k)).toEqual(await counters(a.k));
        grouped += b.functions.filter((f) => f === "beginRuns" || f === "finishRuns").length;
        expect(a.functions.filter((f) => f.endsWith("Runs"))).toEqual([]);
      }),
      { numRuns: 60 },
    );
    // The property ran through the batch scripts (a wave of one call runs the single script).
    expect(grouped).toBeGreaterThan(30);
    // And through full batches followed by more.
    expect(longest).toBeGreaterThan(MAX_BATCH);
  }, 120_000);

  it("a call that fails inside its batch rejects alone; the others are recorded and counted", async () => {
    const b = makeStore("streams");
    const specs = [];
    for (let i = 0; i < 3; i++) specs.push(await submit(b.store, newJob()));
    // The middle job's key now holds a string: reading it fails (WRONGTYPE) inside the batch.
    await redis.set(b.k.job(specs[1]!.id), "not a hash");
    const answers = await Promise.allSettled(specs.map((s) => b.store.beginRun(s, 60_000)));
    expect(b.functions).toContain("beginRuns");
    expect(answers.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(String((answers[1] as PromiseRejectedResult).reason)).toMatch(
      /RedisStoreError: beginRun: .*WRONGTYPE/,
    );
    for (const i of [0, 2]) {
      expect((answers[i] as PromiseFulfilledResult<BeginRunResult>).value).toMatchObject({
        kind: "run",
        attempt: 1,
      });
    }
    const finished = await Promise.allSettled(
      specs.map((s) => b.store.finishRun(s.id, 1, { ok: true, result: null })),
    );
    expect(finished.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((await b.store.getJob(specs[2]!.id))?.status).toBe("succeeded");
    expect(await counters(b.k)).toMatchObject({ "t:started": 2, "t:succeeded": 2 });
  });

  it("the calls of a batch that does not reach Redis all reject, and none of them is written", async () => {
    const b = makeStore("streams");
    const specs = [];
    for (let i = 0; i < 3; i++) specs.push(await submit(b.store, newJob()));
    // The same keys through a connection on which every call fails.
    const cut = new RedisStore({
      client: { evalsha: failing, eval: failing, fcall: failing, functionLoad: failing },
      prefix: b.k.root.slice(1, -1),
      dispatch: "streams",
    });
    const answers = await Promise.allSettled(specs.map((s) => cut.beginRun(s, 60_000)));
    expect(answers.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    for (const r of answers) {
      expect(String((r as PromiseRejectedResult).reason)).toMatch(/connection is closed/);
    }
    for (const s of specs) expect((await b.store.getJob(s.id))?.status).toBe("queued");
  });
});

function failing(): Promise<unknown> {
  return Promise.reject(new Error("connection is closed"));
}
