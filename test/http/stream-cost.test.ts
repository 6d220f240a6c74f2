/**
 * What a realtime stream bills on Redis (EVALSHA plus every command a script runs, from
 * `INFO commandstats` on a private redis-server, as Upstash bills): each poll reads the job
 * (`getJob`), and the event log (`events({ jobId })`) only when the job changed — the figures
 * README's "Cost, counted" states for a stream over Upstash.
 */
import { describe, expect, it } from "vitest";
import type { SubmitResult } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { privateRedis } from "../support/billed-redis.ts";
import { newJob } from "../support/redis-store-fixtures.ts";

describe("the cost of a polled stream", () => {
  const priv = privateRedis();

  it("a poll reads the job (2 billed); a changed job reads the log too (2 more)", async () => {
    const store = new RedisStore({ client: fromIoredis(priv.redis), prefix: "cost-stream" });
    const submitted = (await store.submitJob(newJob(), {
      delayMs: 0,
      recoverGraceMs: 0,
    })) as SubmitResult;
    const id = submitted.message!.job.id;
    const { last } = await store.events({ limit: 1_000 });
    // Load the scripts first (a first EVAL is not what a steady stream pays).
    await store.getJob(id);
    await store.events({ after: last, jobId: id, limit: 1_000 });

    const poll = await priv.billed(() => store.getJob(id));
    const log = await priv.billed(() => store.events({ after: last, jobId: id, limit: 1_000 }));
    console.log("stream poll", poll.byCommand, "log read", log.byCommand);
    expect(poll.total).toBe(2);
    expect(log.total).toBe(2);
  });
});
