/**
 * The Redis store's concurrency limits as stored (the contract pins the behaviour,
 * `test/contract/limits.contract.ts`): the slot set `{p}:limit:<n>:<key>` and the job's `slot`
 * field while a run holds a slot, both gone once it finishes, is dead-lettered or cancelled; and
 * what a run under a limit and a limited begin cost (billed commands, on a private Redis).
 */
import { describe, expect, it } from "vitest";
import { privateRedis } from "../../../test/support/billed-redis.ts";
import { newJob, uniq } from "../../../test/support/redis-store-fixtures.ts";
import type { JobSpec } from "../../core/model.ts";
import { keys } from "./keys.ts";
import { RedisStore } from "./redis-store.ts";
import { fromIoredis } from "./script.ts";

describe("RedisStore concurrency limits (keys and cost, on a private Redis)", () => {
  const priv = privateRedis();

  async function setup() {
    const prefix = uniq("limits");
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

  it("a run holds a slot (member → lease end) named on the job; finishing releases both", async () => {
    const { store, k, submitted } = await setup();
    const limit = { key: "email.send=7:default:é", limit: 2 };
    const spec = await submitted();
    const begun = await store.beginRun(spec, 5_000, 60_000, undefined, limit);
    if (begun.kind !== "run") throw new Error(begun.kind);
    const slots = k.limit(limit.key);
    expect(Number(await priv.redis.zscore(slots, spec.id))).toBe(
      (begun.job.startedAt as number) + 5_000,
    );
    expect(await priv.redis.hget(k.job(spec.id), "slot")).toBe(slots);
    await store.finishRun(spec.id, 1, { ok: true, result: null });
    expect(await priv.redis.exists(slots)).toBe(0);
    expect(await priv.redis.hexists(k.job(spec.id), "slot")).toBe(0);
    expect(await priv.redis.hexists(k.job(spec.id), "leaseUntil")).toBe(0);
  });

  it("markDead after a lapsed lease and cancelJob release the slot too", async () => {
    const { store, k, submitted } = await setup();
    const limit = { key: "email.send", limit: 1 };
    const slots = k.limit(limit.key);
    const spec = await submitted();
    const begun = await store.beginRun(spec, 50, 60_000, undefined, limit);
    expect(begun.kind).toBe("run");
    // The lease lapses by Redis's clock; nothing else touches the set meanwhile.
    const leaseEnd = Number(await priv.redis.zscore(slots, spec.id));
    while ((await store.now()) <= leaseEnd) await new Promise((r) => setTimeout(r, 5));
    expect(await store.markDead(spec, { name: "E", message: "gone" })).toMatchObject({
      status: "dead",
    });
    expect(await priv.redis.exists(slots)).toBe(0);
    expect(await priv.redis.hexists(k.job(spec.id), "slot")).toBe(0);

    // A queued job never holds a slot; should one still be named on it, cancelling releases it.
    const queued = await submitted();
    await priv.redis.zadd(slots, (await store.now()) + 60_000, queued.id);
    await priv.redis.hset(k.job(queued.id), "slot", slots);
    expect((await store.cancelJob(queued.id)).kind).toBe("ok");
    expect(await priv.redis.exists(slots)).toBe(0);
    expect(await priv.redis.hexists(k.job(queued.id), "slot")).toBe(0);
  });

  it("costs: a run without a limit as before; under a limit +4 to begin, +1 to finish; a limited begin 9 (10 the first time)", async () => {
    const { store, submitted } = await setup();
    const limit = { key: "cost", limit: 1 };
    const [warm, plain, held, waiting] = [
      await submitted(),
      await submitted(),
      await submitted(),
      await submitted(),
    ] as [JobSpec, JobSpec, JobSpec, JobSpec];
    await store.beginRun(warm, 5_000); // loads the scripts
    await store.finishRun(warm.id, 1, { ok: true, result: null });

    const beginPlain = await billed(() => store.beginRun(plain, 5_000));
    const finishPlain = await billed(() =>
      store.finishRun(plain.id, 1, { ok: true, result: null }),
    );
    const beginHeld = await billed(() => store.beginRun(held, 5_000, 60_000, undefined, limit));
    // EVALSHA, TIME, HMGET job, ZREMRANGEBYSCORE, ZSCORE, ZCARD, ZRANGE, ZADD XX (the watch
    // waits), HINCRBY t:limited; the first time before the job's first attempt, HSET limitedAt.
    const limited = await billed(() => store.beginRun(waiting, 5_000, 60_000, undefined, limit));
    const limitedAgain = await billed(() =>
      store.beginRun(waiting, 5_000, 60_000, undefined, limit),
    );
    const finishHeld = await billed(() => store.finishRun(held.id, 1, { ok: true, result: null }));

    // Without a token or a limit: EVALSHA, TIME, HMGET job, ZREM pending, HSET job, ZADD + HSET
    // the watch, HMGET + HSET metrics, XADD (cost.test.ts adds the token's GET + SET).
    expect(beginPlain).toBe(10);
    // ZREMRANGEBYSCORE, ZSCORE, ZCARD; ZADD the slot (the field rides on the HSET).
    expect(beginHeld).toBe(beginPlain + 4);
    expect(limited).toBe(10);
    expect(limitedAgain).toBe(9);
    // ZREM the slot (its field goes in the run lease's HDEL).
    expect(finishHeld).toBe(finishPlain + 1);
  });
});
