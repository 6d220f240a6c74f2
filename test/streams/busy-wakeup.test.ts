/**
 * Regression: the wake-up of a delayed delivery is read by one consumer only, which may then be
 * too busy to pull again (every slot taken by long handlers) when the delivery falls due, while
 * another sleeps until its own maintenance (up to `claimIdleMs`). The consumer that knows moves
 * the delivery onto the stream when it is due, whether or not it reads then.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, expect, it } from "vitest";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { REDIS_URL } from "../support/stores.ts";

const redis = new Redis(REDIS_URL);
const prefix = `busy-wakeup-${randomUUID()}`;
afterAll(async () => {
  const found = await redis.keys(`{${prefix}}:*`);
  if (found.length > 0) await redis.del(...found);
  redis.disconnect();
});

it("a consumer that read a wake-up and pulls no more moves the delivery onto the stream when due", async () => {
  const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
  const busy = new RedisStreams({ redis, prefix, consumer: "busy", claimIdleMs: 60_000 });
  await busy.open();
  const stream = `{${prefix}}:q`;
  try {
    const submitted = await store.submitJob(
      {
        id: `j_${randomUUID().replaceAll("-", "").slice(0, 21)}`,
        tenant: "default",
        handler: "later",
        input: null,
        priority: 5,
        timeoutMs: 30_000,
        retries: 0,
        tags: [],
      },
      { delayMs: 500, recoverGraceMs: 60_000 },
    );
    if ("denied" in submitted) throw new Error("refused");
    // Its wake-up is on the stream; this consumer reads it (its one pull: then its slots fill).
    expect(await busy.pull(10, 1)).toEqual([]);
    expect(await redis.xlen(stream)).toBe(0);
    // Nobody pulls from here on. The delivery reaches the stream all the same once it is due.
    let entries: [string, string[]][] = [];
    while (entries.length === 0) {
      entries = (await redis.xrange(stream, "-", "+")) as [string, string[]][];
      if (entries.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(entries[0]?.[1]?.[0]).toBe("j");
    expect(JSON.parse(entries[0]?.[1]?.[1] as string)).toMatchObject({ id: submitted.job.id });
    expect(Date.now()).toBeGreaterThanOrEqual(submitted.job.runAt);
  } finally {
    await busy.close();
  }
}, 15_000);
