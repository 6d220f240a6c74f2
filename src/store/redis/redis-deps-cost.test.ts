/**
 * What job dependencies (ADR 0014) cost on Redis, counted from `INFO commandstats` on a private
 * redis-server: a submit naming dependencies, and the release in the script that finishes the last
 * one. A job without dependents finishes at its usual cost (`redis-store-cost.test.ts`).
 */
import { describe, expect, it } from "vitest";
import { privateRedis } from "../../../test/support/billed-redis.ts";
import { newJob } from "../../../test/support/redis-store-fixtures.ts";
import { RedisStore } from "./redis-store.ts";
import { fromIoredis } from "./script.ts";

describe("RedisStore cost of job dependencies (billed, on a private Redis)", () => {
  const priv = privateRedis();
  const billed = async (fn: () => Promise<unknown>) => (await priv.billed(fn)).total;

  it("a submit pays per dependency; a release pays per dependent; none pay nothing", async () => {
    const store = new RedisStore({ client: fromIoredis(priv.redis), prefix: "deps-cost" });
    const timing = { delayMs: 0, recoverGraceMs: 0 };
    const submit = async (after?: string[]) => {
      const r = await store.submitJob(newJob(after ? { after } : {}), timing);
      if ("denied" in r) throw new Error("denied");
      return r.job;
    };
    const finish = async (id: string) => {
      const job = await store.getJob(id);
      const { status: _s, attempts: _a, ...spec } = job!;
      const begun = await store.beginRun(spec, 5_000);
      if (begun.kind !== "run") throw new Error(begun.kind);
      return billed(() => store.finishRun(id, begun.attempt, { ok: true, result: 1 }));
    };
    await submit(); // loads the scripts
    const plain = await billed(() => submit());
    const a = await submit();
    const b = await submit();
    let waiting = "";
    const oneDep = await billed(async () => {
      waiting = (await submit([a.id])).id;
    });
    const twoDeps = await billed(() => submit([a.id, b.id]));
    await finish((await submit()).id); // the first finish of a store sweeps once more
    const lone = await submit();
    const finishLone = await finish(lone.id);
    const finishB = await finish(b.id); // one dependent, still waiting for A after this
    const finishA = await finish(a.id); // two dependents, both released
    expect((await store.getJob(waiting))?.status).toBe("queued");
    const done = await submit();
    await finish(done.id);
    const afterDone = await billed(() => submit([done.id]));
    console.log("dependencies billed:", {
      plain,
      oneDep,
      twoDeps,
      afterSucceeded: afterDone,
      finishNoDependents: finishLone,
      finishOneDependentNotReleased: finishB,
      finishTwoDependentsReleased: finishA,
    });
    // The submit: + HMGET per dependency; waiting: HSET status (not ZADD pending nor the outbox's
    // ZADD), and per unfinished one SADD + HSET `dependents`; HINCRBY g:waiting.
    expect(afterDone).toBe(plain + 1);
    expect(oneDep).toBe(plain + 1 + 1 - 2 + 2 + 0);
    expect(twoDeps).toBe(oneDep + 3);
    // The release: SPOP todo, SPOP + EXISTS the set; per dependent HMGET job, HMGET onFailure,
    // HINCRBY waits, and when released HSET + HDEL + ZADD outbox (its first message has no body)
    // + ZADD pending; the gauges' HMGET + HSET when one changed.
    expect(finishB).toBe(finishLone + 3 + 3);
    expect(finishA).toBe(finishLone + 3 + 2 * (3 + 4) + 2);
    expect({ plain, finishLone }).toEqual({ plain: 9, finishLone: 14 });
  });
});
