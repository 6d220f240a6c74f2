/**
 * The billed cost of a running attempt's progress, log and cancel check on Redis (EVALSHA plus
 * every command a script runs, from `INFO commandstats` on a private redis-server), the figures
 * `src/engine/attempt.ts` and docs/api.md state.
 */
import { describe, expect, it } from "vitest";
import { privateRedis } from "../../../test/support/billed-redis.ts";
import { newJob } from "../../../test/support/redis-store-fixtures.ts";
import type { SubmitResult } from "../port.ts";
import { RedisStore } from "./redis-store.ts";
import { fromIoredis } from "./script.ts";

describe("RedisStore cost of progress, logs and the cancel check", () => {
  const priv = privateRedis();
  const billed = async (fn: () => Promise<unknown>) => (await priv.billed(fn)).total;

  it("progress 4, log 4 (5 once 100 are kept), cancel check 2, a page of logs 3", async () => {
    const store = new RedisStore({ client: fromIoredis(priv.redis), prefix: "cost-progress" });
    const timing = { delayMs: 0, recoverGraceMs: 0 };
    const submitted = (await store.submitJob(newJob(), timing)) as SubmitResult;
    const spec = submitted.message!.job;
    expect((await store.beginRun(spec, 60_000)).kind).toBe("run");
    const id = spec.id;
    // Load every script first (a first EVAL is not what a steady run pays).
    await store.reportProgress(id, 1, "0");
    await store.appendLog(id, 1, '{"level":"info","message":"0"}');
    await store.cancelRequested(id, 1);
    await store.readLogs(id, { limit: 10 });

    // EVALSHA + TIME + HMGET + HSET
    expect(await billed(() => store.reportProgress(id, 1, "1"))).toBe(4);
    expect(await billed(() => store.appendLog(id, 1, '{"level":"info","message":"1"}'))).toBe(4);
    // EVALSHA + HMGET
    expect(await billed(() => store.cancelRequested(id, 1))).toBe(2);
    // EVALSHA + HMGET (head) + HMGET (the entries)
    expect(await billed(() => store.readLogs(id, { limit: 10 }))).toBe(3);
    for (let i = 2; i <= 100; i++)
      await store.appendLog(id, 1, `{"level":"info","message":"${i}"}`);
    // + HDEL of the entry that falls out
    expect(await billed(() => store.appendLog(id, 1, '{"level":"info","message":"x"}'))).toBe(5);
    // A stale write: EVALSHA + TIME + HMGET, nothing written.
    expect(await billed(() => store.reportProgress(id, 2, "1"))).toBe(3);
  });
});
