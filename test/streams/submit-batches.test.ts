/**
 * `submitJob` in groups on a streams-mode `RedisStore` (src/store/redis/call-batch.ts, the
 * `submitJobs` script; docs/adr/0043-submits-in-groups.md), on a real Redis:
 *
 * - a fast-check differential: waves of random submits (repeated job ids, idempotency keys,
 *   delays and times, dependencies, a quota, a degradation policy evaluated on every submit or
 *   reused, webhooks: calls of different lengths in one group), each wave's calls made in one
 *   turn (so grouped) on one store and one after another on another (each alone), give the same
 *   answers, job records, counters, degradation state, events and webhook history;
 * - a submit whose part of a group fails inside Redis rejects alone; the others are written and
 *   counted; the submits of a group that never reaches Redis all reject, and nothing is written.
 */
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { Admission } from "../../src/core/admission.ts";
import type { NewJob } from "../../src/core/model.ts";
import type { SubmitTiming } from "../../src/store/port.ts";
import { MAX_BATCH } from "../../src/store/redis/call-batch.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { keys } from "../../src/store/redis/keys.ts";
import type { ScriptClient } from "../../src/store/redis/script.ts";
import { deletePrefixes } from "../redis-rest/harness.ts";
import { maskTimes } from "../support/masked.ts";
import { REDIS_URL } from "../support/stores.ts";

const redis = new Redis(REDIS_URL);
const prefixes: string[] = [];
afterAll(async () => {
  await deletePrefixes(prefixes);
  redis.disconnect();
});

/** A streams-mode store; `functions` lists the Redis functions it called, in order. */
function makeStore() {
  const prefix = `sb-${randomUUID()}`;
  prefixes.push(prefix);
  const client = fromIoredis(redis);
  const functions: string[] = [];
  const fcall = client.fcall!;
  const counted: ScriptClient = {
    ...client,
    fcall: (name, k, args) => {
      functions.push(name.split("_")[1]!);
      return fcall(name, k, args);
    },
  };
  const store = new RedisStore({ client: counted, prefix, dispatch: "streams" });
  return { store, k: keys(prefix), functions };
}

const TIME_KEYS = new Set(
  "createdAt runAt fireAt finishedAt keepUntil at since resetMs retryAfterMs".split(" "),
);
/** Times masked: the two stores run apart, and a group reads the clock once for all its calls. */
const masked = (value: unknown) => maskTimes(value, TIME_KEYS);

const IDS = 8;
/** Job `i`'s id and tenant never change: a repeated id is the same submit sent again. */
function jobOf(i: number): NewJob {
  return {
    id: `job-${i}`,
    tenant: i % 3 === 2 ? "acme" : "default",
    handler: "email.send",
    input: { i, text: 'é \u2028 "q"' },
    priority: 5,
    timeoutMs: 30_000,
    retries: 1,
    tags: [],
  };
}

interface Call {
  j: number;
  key?: "k1" | "k2";
  when?: "delayed" | "past" | "future";
  after?: number[];
  run?: boolean;
  quota?: boolean;
  degradation?: "every" | "reused" | "reject";
  webhook?: boolean;
}

const callArb: fc.Arbitrary<Call> = fc.record(
  {
    j: fc.nat(IDS - 1),
    key: fc.constantFrom("k1" as const, "k2" as const),
    when: fc.constantFrom("delayed" as const, "past" as const, "future" as const),
    after: fc.array(fc.nat(IDS - 1), { minLength: 1, maxLength: 2 }),
    run: fc.boolean(),
    quota: fc.boolean(),
    degradation: fc.constantFrom("every" as const, "reused" as const, "reject" as const),
    webhook: fc.boolean(),
  },
  { requiredKeys: ["j"] },
);
const WAVE_MAX = Math.ceil(MAX_BATCH * 1.5);
const waveArb = fc.array(callArb, { minLength: 1, maxLength: WAVE_MAX, size: "max" });

/** The same policy objects on every call, as an engine passes them. */
const policy = {
  queueDepth: { normal: 3, degraded: 6, critical: 10 },
  lagMs: { normal: 1e9, degraded: 2e9, critical: 3e9 },
  failureRate: { normal: 2, degraded: 3, critical: 4 },
  debounceMs: 0,
  degradedDelayMs: 1_000,
  criticalDelayMs: 5_000,
  retryAfterMs: 2_000,
};
const DEGRADATION: Record<
  NonNullable<Call["degradation"]>,
  NonNullable<Admission["degradation"]>
> = {
  every: { ...policy, critical: "delay", evaluateEveryMs: 0 },
  reused: { ...policy, critical: "delay", evaluateEveryMs: 60_000 },
  reject: { ...policy, critical: "reject", evaluateEveryMs: 60_000 },
};
const QUOTA = { key: "q", windows: [{ windowMs: 3_600_000, limit: 6 }] };

function submit(store: RedisStore, call: Call, base: number) {
  const job = jobOf(call.j);
  if (call.key) job.idempotencyKey = call.key;
  if (call.after) job.after = call.after.map((d) => `job-${d}`);
  if (call.run) job.onFailure = "run";
  const timing: SubmitTiming = {
    delayMs: call.when === "delayed" ? 60_000 : 0,
    recoverGraceMs: 1_000,
  };
  if (call.when === "past") timing.runAt = base - 5_000;
  if (call.when === "future") timing.runAt = base + 60_000;
  if (call.webhook) timing.webhook = { endpoint: "github", eventId: `e-${call.j}` };
  const admission: Admission = {};
  if (call.quota) admission.quota = QUOTA;
  if (call.degradation) admission.degradation = DEGRADATION[call.degradation];
  return store.submitJob(job, timing, admission);
}

/** Everything a submit writes that the two stores should hold alike. */
async function state(s: ReturnType<typeof makeStore>) {
  const jobs = [];
  for (let i = 0; i < IDS; i++) jobs.push(await s.store.getJob(`job-${i}`));
  const events = (await redis.xrange(s.k.events, "-", "+")).map(([, fields]) =>
    JSON.parse(fields[1]!),
  );
  const metrics = await redis.hgetall(s.k.metrics);
  const counters = Object.fromEntries(
    Object.entries(metrics).filter(([f]) => /^(t|g|s):/.test(f) && f !== "s:seq"),
  );
  const degradation = await redis.hmget(s.k.degrade, "level", "pendingLevel", "signals");
  const hooks = await redis.hgetall(s.k.hookCounts);
  const hookLog = (await redis.lrange(s.k.hookLog("github"), 0, -1)).map((e) => JSON.parse(e));
  return masked({ jobs, events, counters, degradation, hooks, hookLog });
}

describe("submitJob grouped (dispatch: streams)", () => {
  it("waves of submits made at once answer and write exactly what the same submits one after another do", async () => {
    let grouped = 0;
    let longest = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(waveArb, { minLength: 1, maxLength: 4 }), async (waves) => {
        const a = makeStore();
        const b = makeStore();
        const base = Date.now();
        for (const wave of waves) {
          longest = Math.max(longest, wave.length);
          const answersA: unknown[] = [];
          for (const call of wave) {
            answersA.push(await submit(a.store, call, base).catch((e) => `rejected: ${e}`));
          }
          // All in one turn: grouped, applied in this order.
          const answersB = await Promise.all(
            wave.map((call) => submit(b.store, call, base).catch((e) => `rejected: ${e}`)),
          );
          expect(masked(answersB)).toEqual(masked(answersA));
        }
        expect(await state(b)).toEqual(await state(a));
        grouped += b.functions.filter((f) => f === "submitJobs").length;
        expect(a.functions).not.toContain("submitJobs");
      }),
      { numRuns: 60 },
    );
    // The property ran through the group script (a wave of one call runs the single script).
    expect(grouped).toBeGreaterThan(30);
    expect(longest).toBeGreaterThan(MAX_BATCH);
  }, 120_000);

  it("a submit that fails inside its group rejects alone; the others are written and counted", async () => {
    const s = makeStore();
    // job-9's key holds a string: the dependency check of the second submit fails (WRONGTYPE).
    await redis.set(s.k.job("job-9"), "not a hash");
    const calls = [jobOf(0), { ...jobOf(1), after: ["job-9"] }, jobOf(3)];
    const answers = await Promise.allSettled(
      calls.map((job) => s.store.submitJob(job, { delayMs: 0, recoverGraceMs: 1_000 })),
    );
    // The first two as a group, as soon as both wait; the third after them.
    expect(s.functions).toEqual(["submitJobs", "submitJob"]);
    expect(answers.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(String((answers[1] as PromiseRejectedResult).reason)).toMatch(
      /RedisStoreError: submitJob: .*WRONGTYPE/,
    );
    expect((await s.store.getJob("job-3"))?.status).toBe("queued");
    const stats = await s.store.stats();
    expect(stats.totals.submitted).toBe(2);
  });

  it("the submits of a group that does not reach Redis all reject, and none of them is written", async () => {
    const s = makeStore();
    const failing = () => Promise.reject(new Error("Connection is closed."));
    // The same keys through a connection on which every call fails.
    const cut = new RedisStore({
      client: { evalsha: failing, eval: failing, fcall: failing, functionLoad: failing },
      prefix: s.k.root.slice(1, -1),
      dispatch: "streams",
    });
    const answers = await Promise.allSettled(
      [0, 1, 3, 4].map((i) => cut.submitJob(jobOf(i), { delayMs: 0, recoverGraceMs: 1_000 })),
    );
    expect(answers.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected", "rejected"]);
    for (const i of [0, 1, 3, 4]) expect(await s.store.getJob(`job-${i}`)).toBeNull();
    expect((await s.store.stats()).totals.submitted).toBe(0);
  });
});
