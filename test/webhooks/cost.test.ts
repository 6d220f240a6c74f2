/**
 * What a webhook delivery costs on Redis beyond a plain keyed submit (docs/webhooks.md, "Limits,
 * metrics and the list"), billed as Upstash bills (EVALSHA plus every command the script runs,
 * from `INFO commandstats` on a private redis-server): the first delivery adds HINCRBY (the
 * counter), LPUSH + LTRIM (the history) and HSET (`keepUntil`); a replay adds the same three but
 * the HSET. One round trip each, like a plain submit.
 */
import { describe, expect, it } from "vitest";
import { RedisStore } from "../../src/store/redis/redis-store.ts";
import { fromIoredis } from "../../src/store/redis/script.ts";
import { privateRedis } from "../support/billed-redis.ts";
import { countingClient } from "../support/counting-client.ts";
import { newJob, uniq } from "../support/redis-store-fixtures.ts";

const delta = (a: Map<string, number>, b: Map<string, number>) => {
  const out: Record<string, number> = {};
  for (const cmd of new Set([...a.keys(), ...b.keys()])) {
    const d = (a.get(cmd) ?? 0) - (b.get(cmd) ?? 0);
    if (d !== 0) out[cmd] = d;
  }
  return out;
};

describe("webhook submit cost (billed, on a private Redis)", () => {
  const priv = privateRedis();

  it("a first delivery: + HINCRBY, LPUSH, LTRIM, HSET keepUntil; a replay: + HINCRBY, LPUSH, LTRIM", async () => {
    const { client, counter } = countingClient(fromIoredis(priv.redis));
    const store = new RedisStore({ client, prefix: "hookcost" });
    const timing = { delayMs: 0, recoverGraceMs: 0 };
    const hook = {
      ...timing,
      idempotencyMs: 3_600_000,
      webhook: { endpoint: "github", eventId: "d-1" },
    };
    await store.submitJob(newJob(), timing); // loads the script
    counter.roundTrips = 0;
    const plainKey = uniq("k");
    const plain = await priv.billed(() =>
      store.submitJob(newJob({ idempotencyKey: plainKey }), timing),
    );
    const plainReplay = await priv.billed(() =>
      store.submitJob(newJob({ idempotencyKey: plainKey }), timing),
    );
    const hookKey = `hook:github:body-sha256:${uniq("h")}`;
    const first = await priv.billed(() =>
      store.submitJob(newJob({ idempotencyKey: hookKey }), hook),
    );
    const replay = await priv.billed(() =>
      store.submitJob(newJob({ idempotencyKey: hookKey }), hook),
    );
    expect(counter.roundTrips).toBe(4);
    expect(delta(first.byCommand, plain.byCommand)).toEqual({
      hincrby: 1,
      lpush: 1,
      ltrim: 1,
      hset: 1,
    });
    expect(first.total - plain.total).toBe(4);
    expect(delta(replay.byCommand, plainReplay.byCommand)).toEqual({
      hincrby: 1,
      lpush: 1,
      ltrim: 1,
    });
    expect(replay.total - plainReplay.total).toBe(3);
    // The absolute figures the docs quote: a plain keyed submit 11, a first delivery 15.
    expect(plain.total).toBe(11);
    expect(first.total).toBe(15);
  });
});
