/**
 * A `skip` schedule's overlap lease handed to a run begun under `allow` (a PATCH to `skip`), as
 * stored on Redis: the run is marked `overlapHeld`, and its end hands the lease on. An older
 * version ending that run knows no mark and leaves the lease behind, held by a run that has
 * ended: the next occurrence's begin hands it on then (none left running: it runs) instead of
 * skipping occurrences until the lease expires. The behaviour on every store is in
 * test/contract/runs.contract.ts.
 */
import { Redis } from "ioredis";
import { afterAll, expect, it } from "vitest";
import { occurrenceSpec, scheduleRecord } from "../../../test/contract/fixtures.ts";
import { uniq } from "../../../test/support/redis-store-fixtures.ts";
import { keys } from "./keys.ts";
import { RedisStore } from "./redis-store.ts";
import { fromIoredis } from "./script.ts";

const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
afterAll(() => redis.quit());

it("a lease left behind by a run that ended under an older version is handed on at the next begin", async () => {
  const prefix = uniq("overlap-handover");
  const k = keys(prefix);
  const store = new RedisStore({ client: fromIoredis(redis), prefix });
  try {
    const s = scheduleRecord({ overlap: "allow" });
    const put = await store.putSchedule(s);
    if (put.kind !== "ok") throw new Error("put refused");
    const t0 = await store.now();
    const before = occurrenceSpec(s, t0 - 60_000);
    expect((await store.beginRun(before, 60_000)).kind).toBe("run");
    const patched = await store.putSchedule({ ...put.schedule, overlap: "skip" }, put.schedule.rev);
    if (patched.kind !== "ok") throw new Error("patch refused");
    expect(await redis.get(k.scheduleRunning(s.id))).toBe(before.id);
    expect(await redis.hget(k.job(before.id), "overlapHeld")).toBe("1");
    // Ended by an older version: the mark unknown to it, the lease stays.
    await redis.hdel(k.job(before.id), "overlapHeld");
    expect((await store.finishRun(before.id, 1, { ok: true, result: null })).kind).toBe("ok");
    expect(await redis.get(k.scheduleRunning(s.id))).toBe(before.id);
    const skip = { ...s, overlap: "skip" as const };
    const next = occurrenceSpec(skip, t0 + 60_000);
    expect((await store.beginRun(next, 5_000)).kind).toBe("run");
    expect(await redis.get(k.scheduleRunning(s.id))).toBe(next.id);
  } finally {
    const found = await redis.keys(`{${prefix}}*`);
    if (found.length > 0) await redis.del(...found);
  }
});
