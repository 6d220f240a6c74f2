/**
 * The Redis store's rate limits as stored (the contract pins the behaviour,
 * `test/contract/rate-limits.contract.ts`): the window `{p}:rate:<n>:<key>` — a sorted set of
 * `<job id>:<attempt>` → the time that run began, bounded by `limit` members, expiring one period
 * after its newest start — and what a run under a rate limit and a rate-limited begin cost
 * (billed commands, on a private Redis).
 */
import { describe, expect, it } from "vitest";
import { privateRedis } from "../../../test/support/billed-redis.ts";
import { newJob, uniq } from "../../../test/support/redis-store-fixtures.ts";
import type { JobSpec } from "../../core/model.ts";
import { keys } from "./keys.ts";
import { RedisStore } from "./redis-store.ts";
import { fromIoredis } from "./script.ts";

describe("RedisStore rate limits (keys and cost, on a private Redis)", () => {
  const priv = privateRedis();

  async function setup() {
    const prefix = uniq("rate");
    const store = new RedisStore({ client: fromIoredis(priv.redis), prefix });
    const k = keys(prefix);
    const submitted = async (): Promise<JobSpec> => {
      const res = await store.submitJob(newJob(), { delayMs: 0, recoverGraceMs: 60_000 });
      if ("denied" in res || !res.message) throw new Error("not submitted");
      return res.message.job;
    };
    return { store, k, submitted };
  }

  const billed = async (fn: () => Promise<unknown>) => (await priv.billed(fn)).total;

  it("a run adds `<id>:<attempt>` → its start; the window expires a period after its newest start", async () => {
    const { store, k, submitted } = await setup();
    const rate = { key: "email.send=7:default:é", limit: 3, periodMs: 60_000 };
    const window = k.rate(rate.key);
    const spec = await submitted();
    const first = await store.beginRun(spec, 5_000, 60_000, undefined, undefined, rate);
    if (first.kind !== "run") throw new Error(first.kind);
    expect(await priv.redis.zrange(window, 0, -1, "WITHSCORES")).toEqual([
      `${spec.id}:1`,
      String(first.job.startedAt),
    ]);
    const ttl = await priv.redis.pttl(window);
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    // Finishing frees nothing (a rate counts begins); the retry is a second member.
    await store.finishRun(spec.id, 1, {
      ok: false,
      error: { name: "E", message: "x" },
      final: false,
    });
    expect(await priv.redis.zcard(window)).toBe(1);
    expect((await store.beginRun(spec, 5_000, 60_000, undefined, undefined, rate)).kind).toBe(
      "run",
    );
    expect(await priv.redis.zrange(window, 0, -1)).toEqual([`${spec.id}:1`, `${spec.id}:2`]);
    // The job's hash names no rate window (nothing to release).
    expect(Object.keys(await priv.redis.hgetall(k.job(spec.id)))).not.toContain("rate");
  });

  it("is bounded by `limit` members; an idle window vanishes after its period", async () => {
    const { store, k, submitted } = await setup();
    const rate = { key: "burst", limit: 2, periodMs: 300 };
    const window = k.rate(rate.key);
    const answers: string[] = [];
    for (let i = 0; i < 5; i++) {
      const begun = await store.beginRun(
        await submitted(),
        5_000,
        60_000,
        undefined,
        undefined,
        rate,
      );
      answers.push(begun.kind);
    }
    expect(answers.filter((a) => a === "run")).toHaveLength(2);
    expect(await priv.redis.zcard(window)).toBe(2);
    const end = Date.now() + 10_000;
    while ((await priv.redis.exists(window)) === 1) {
      if (Date.now() > end) throw new Error("the idle window did not expire");
      await new Promise((r) => setTimeout(r, 20));
    }
  });

  it("costs: a run without a rate limit as before; under one +4 to begin, nothing to finish; a limited begin 8 (9 the first time)", async () => {
    const { store, submitted } = await setup();
    const rate = { key: "cost", limit: 1, periodMs: 60_000 };
    const slot = { key: "cost", limit: 5 };
    const [warm, plain, held, waiting, both] = [
      await submitted(),
      await submitted(),
      await submitted(),
      await submitted(),
      await submitted(),
    ] as [JobSpec, JobSpec, JobSpec, JobSpec, JobSpec];
    await store.beginRun(warm, 5_000); // loads the scripts
    await store.finishRun(warm.id, 1, { ok: true, result: null });

    const beginPlain = await billed(() => store.beginRun(plain, 5_000));
    const finishPlain = await billed(() =>
      store.finishRun(plain.id, 1, { ok: true, result: null }),
    );
    const beginHeld = await billed(() =>
      store.beginRun(held, 5_000, 60_000, undefined, undefined, rate),
    );
    const finishHeld = await billed(() => store.finishRun(held.id, 1, { ok: true, result: null }));
    // EVALSHA, TIME, HMGET job, ZREMRANGEBYSCORE, ZCARD, ZRANGE, ZADD XX (the watch waits),
    // HINCRBY t:limited; the first time before the job's first attempt, HSET limitedAt too.
    const limited = await billed(() =>
      store.beginRun(waiting, 5_000, 60_000, undefined, undefined, rate),
    );
    const limitedAgain = await billed(() =>
      store.beginRun(waiting, 5_000, 60_000, undefined, undefined, rate),
    );
    // Both limits refusing: the slot's ZREMRANGEBYSCORE, ZSCORE, ZCARD (the slot admits), and
    // the window's three as above.
    const bothLimited = await billed(() =>
      store.beginRun(both, 5_000, 60_000, undefined, slot, rate),
    );

    expect(beginPlain).toBe(10);
    // ZREMRANGEBYSCORE, ZCARD; ZADD the start, PEXPIRE the window.
    expect(beginHeld).toBe(beginPlain + 4);
    expect(finishHeld).toBe(finishPlain);
    expect(limited).toBe(9);
    expect(limitedAgain).toBe(8);
    expect(bothLimited).toBe(12);
  });
});
