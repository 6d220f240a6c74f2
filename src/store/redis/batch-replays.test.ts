/**
 * The Redis store's batch submit replaying large jobs (lua/submitMany-7.lua): a chunk of tiny
 * items repeating the idempotency keys of large jobs names those jobs in its reply instead of
 * carrying them, and the store reads each on its own, so no script builds a reply of many large
 * records while every other client of the Redis waits. On a private Redis whose clients are cut
 * off past 4 MB of pending output (`client-output-buffer-limit`): one reply carrying the chunk's
 * 30 jobs of 200 KiB would be 6 MB.
 */
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { privateRedis } from "../../../test/support/billed-redis.ts";
import { newJob, uniq } from "../../../test/support/redis-store-fixtures.ts";
import type { NewJob } from "../../core/model.ts";
import { MAX_SUBMIT_CHUNK } from "../port/batch.ts";
import { keys } from "./keys.ts";
import { RedisStore } from "./redis-store.ts";
import { fromIoredis } from "./script.ts";

const TIMING = { recoverGraceMs: 60_000 };
const BIG = 200 * 1024;

describe("RedisStore batch submit, replays of large jobs (private Redis)", () => {
  const priv = privateRedis();
  /** A client that gives up at once when the server cuts it off (no re-sending loop). */
  let client: Redis;
  beforeAll(async () => {
    await priv.redis.config("SET", "client-output-buffer-limit", "normal 4mb 4mb 0");
    client = priv.redis.duplicate({ maxRetriesPerRequest: 1 });
  });
  afterAll(() => client.disconnect());

  /** `count` jobs with inputs of 200 KiB, each stored with its own idempotency key. */
  async function storeLarge(store: RedisStore, count: number): Promise<NewJob[]> {
    const jobs: NewJob[] = [];
    for (let i = 0; i < count; i++) {
      const job = newJob({ idempotencyKey: `big-${i}`, input: { i, pad: "x".repeat(BIG) } });
      const res = await store.submitJob(job, { delayMs: 86_400_000, ...TIMING });
      if ("denied" in res || res.replayed) throw new Error("not stored");
      jobs.push(job);
    }
    return jobs;
  }

  it("a chunk of tiny items naming 30 large jobs answers each whole, no reply over 4 MB", async () => {
    const store = new RedisStore({ client: fromIoredis(client), prefix: uniq("replays") });
    const large = await storeLarge(store, 30);
    const items = Array.from({ length: MAX_SUBMIT_CHUNK }, (_, i) => ({
      job: newJob({ idempotencyKey: `big-${i % 30}` }),
      delayMs: 0,
    }));
    const results = await store.submitJobs(items, TIMING);
    expect(results).toHaveLength(MAX_SUBMIT_CHUNK);
    results.forEach((result, i) => {
      if (!("replayed" in result) || !result.replayed) throw new Error(`item ${i} not replayed`);
      const first = large[i % 30]!;
      expect(result.job.id).toBe(first.id);
      expect(result.job.input).toEqual(first.input);
      expect(result.job.status).toBe("queued");
    });
    // Nothing stored for the tiny items.
    for (const { job } of items) expect(await store.getJob(job.id)).toBeNull();
    expect((await store.stats()).totals.submitted).toBe(30);
    // Cut off, the client would wait out its reconnects: fail sooner than the file's limit.
  }, 30_000);

  it("so are finished jobs with small inputs and large results", async () => {
    const store = new RedisStore({ client: fromIoredis(client), prefix: uniq("replays-results") });
    const finished: NewJob[] = [];
    for (let i = 0; i < 30; i++) {
      const job = newJob({ idempotencyKey: `done-${i}` });
      const res = await store.submitJob(job, { delayMs: 0, ...TIMING });
      if ("denied" in res || !res.message) throw new Error("not stored");
      expect((await store.beginRun(res.message.job, 60_000)).kind).toBe("run");
      const result = { i, pad: "r".repeat(BIG) };
      expect((await store.finishRun(job.id, 1, { ok: true, result })).kind).toBe("ok");
      finished.push(job);
    }
    const items = Array.from({ length: MAX_SUBMIT_CHUNK }, (_, i) => ({
      job: newJob({ idempotencyKey: `done-${i % 30}` }),
      delayMs: 0,
    }));
    const results = await store.submitJobs(items, TIMING);
    results.forEach((result, i) => {
      if (!("replayed" in result) || !result.replayed) throw new Error(`item ${i} not replayed`);
      expect(result.job).toMatchObject({ id: finished[i % 30]!.id, status: "succeeded" });
      expect((result.job.result as { pad: string }).pad).toHaveLength(BIG);
    });
  }, 30_000);

  it("a large job gone between the chunk and its read: the item is judged again and stored", async () => {
    const prefix = uniq("replays-gone");
    const k = keys(prefix);
    // The job expires (retention) right after the chunk's script named it: the client drops
    // it between the two commands, as its expiry would.
    const racing = client.duplicate({ maxRetriesPerRequest: 1 });
    const fcall = racing.fcall.bind(racing) as (...args: unknown[]) => Promise<unknown>;
    let drop: string | undefined;
    (racing as unknown as { fcall: (...args: unknown[]) => Promise<unknown> }).fcall = async (
      ...args: unknown[]
    ) => {
      const reply = await fcall(...args);
      if (drop !== undefined && String(args[0]).includes("submitMany")) {
        await priv.redis.del(k.job(drop));
        drop = undefined;
      }
      return reply;
    };
    try {
      const store = new RedisStore({ client: fromIoredis(racing), prefix });
      const [first] = await storeLarge(store, 1);
      drop = first!.id;
      const again = newJob({ idempotencyKey: "big-0" });
      const repeat = newJob({ idempotencyKey: "big-0" });
      const [one, two] = await store.submitJobs(
        [
          { job: again, delayMs: 0 },
          { job: repeat, delayMs: 0 },
        ],
        TIMING,
      );
      if (!one || !("replayed" in one) || !two || !("replayed" in two)) throw new Error("denied");
      expect(drop).toBeUndefined();
      // Stored anew under the key, and the repeat replays the new job.
      expect(one.replayed).toBe(false);
      expect(one.job.id).toBe(again.id);
      expect(two).toMatchObject({ replayed: true, job: { id: again.id } });
      expect(await store.getJob(again.id)).toMatchObject({ id: again.id, status: "queued" });
      expect(await store.getJob(repeat.id)).toBeNull();
    } finally {
      racing.disconnect();
    }
  });
});
