/**
 * The store's part of inbound webhooks, on memory (its clock driven by the test), Redis (ioredis)
 * and `@upstash/redis` through the REST bridge: a submit's own idempotency TTL
 * (`SubmitTiming.idempotencyMs`) keeps the key and the finished record at least that long — past
 * the store's `idempotencyMs` and `jobMs`, and through the `maxFinishedJobs` cap — while other
 * jobs keep today's retention; `timing.webhook` counts accepted and replayed deliveries and lists
 * them, newest first, capped, in the same submit; `countWebhook` adds to the same counters.
 */
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { Store, StoreRetention } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { accepted, jobSpec, uid } from "../contract/fixtures.ts";
import { deletePrefix, upstashClient } from "../redis-rest/harness.ts";
import { countingClient } from "../support/counting-client.ts";
import { REDIS_URL } from "../support/stores.ts";

const RETENTION: StoreRetention = {
  jobMs: 1_000,
  idempotencyMs: 1_000,
  maxFinishedJobs: 1,
  maxRunsPerSchedule: 0,
};
const timing = { delayMs: 0, recoverGraceMs: 60_000 };
/** Finished jobs kept 60 s but at most 1: the cap, oldest expiry first, is what drops them. */
const CAPPED: StoreRetention = { ...RETENTION, jobMs: 60_000 };

describe("memory: a webhook job's key and record outlive the store's retention", () => {
  it("replays for its own TTL, is not dropped by the count cap, then expires", async () => {
    let now = 1_000_000;
    const store = new MemoryStore({ clock: () => now, retention: RETENTION });
    const hook = accepted(
      await store.submitJob(jobSpec({ idempotencyKey: "hook:a:evt_1" }), {
        ...timing,
        idempotencyMs: 10_000,
      }),
    ).job;
    const plain = accepted(await store.submitJob(jobSpec({ idempotencyKey: "plain" }), timing)).job;
    await store.cancelJob(hook.id);
    await store.cancelJob(plain.id);
    // Finished jobs over the cap of 1: the plain one may go, the webhook job may not.
    for (let i = 0; i < 3; i++) {
      const other = accepted(await store.submitJob(jobSpec(), timing)).job;
      await store.cancelJob(other.id);
    }
    now += 5_000;
    expect(await store.getJob(hook.id)).not.toBeNull();
    const again = await store.submitJob(jobSpec({ idempotencyKey: "hook:a:evt_1" }), {
      ...timing,
      idempotencyMs: 10_000,
    });
    expect(accepted(again)).toMatchObject({ replayed: true, job: { id: hook.id } });
    // The plain key lived the store's 1 s: a new job.
    const plainAgain = accepted(
      await store.submitJob(jobSpec({ idempotencyKey: "plain" }), timing),
    );
    expect(plainAgain.replayed).toBe(false);
    now += 6_000;
    expect(await store.getJob(hook.id)).toBeNull();
    const late = accepted(
      await store.submitJob(jobSpec({ idempotencyKey: "hook:a:evt_1" }), timing),
    );
    expect(late.replayed).toBe(false);
  });
});

describe("memory: the count cap never drops a job whose key still lives", () => {
  it("drops finished jobs by age, past a webhook job while its key lives", async () => {
    let now = 1_000_000;
    const store = new MemoryStore({
      clock: () => now,
      retention: { ...RETENTION, jobMs: 60_000 },
    });
    const hook = accepted(
      await store.submitJob(jobSpec({ idempotencyKey: "hook:a:evt_2" }), {
        ...timing,
        idempotencyMs: 30_000,
      }),
    ).job;
    await store.cancelJob(hook.id);
    // Finished after it, so expiring after it: the oldest-first cap would take it first.
    for (let i = 0; i < 3; i++) {
      now += 10;
      const other = accepted(await store.submitJob(jobSpec(), timing)).job;
      await store.cancelJob(other.id);
    }
    expect(await store.getJob(hook.id)).not.toBeNull();
  });
});

describe.each([
  {
    name: "redis",
    make: async () => {
      const redis = new Redis(REDIS_URL);
      const prefix = uid("wh");
      const store = new RedisStore({ client: fromIoredis(redis), prefix, retention: CAPPED });
      return {
        store,
        prefix,
        redis,
        cleanup: async () => {
          await deletePrefix(prefix);
          redis.disconnect();
        },
      };
    },
  },
  {
    name: "upstash",
    make: async () => {
      const redis = new Redis(REDIS_URL);
      const prefix = uid("whu");
      const store = new RedisStore({ client: await upstashClient(), prefix, retention: CAPPED });
      return {
        store,
        prefix,
        redis,
        cleanup: async () => {
          await deletePrefix(prefix);
          redis.disconnect();
        },
      };
    },
  },
])("$name: webhook submits", ({ make }) => {
  it("keep the key and the finished record for the webhook's TTL, through the count cap", async () => {
    const { store, prefix, redis, cleanup } = await make();
    try {
      const hook = accepted(
        await store.submitJob(jobSpec({ idempotencyKey: "hook:a:evt_1" }), {
          ...timing,
          idempotencyMs: 30_000,
        }),
      ).job;
      const plain = accepted(await store.submitJob(jobSpec({ idempotencyKey: "p" }), timing)).job;
      const idemTtl = await redis.pttl(`{${prefix}}:idem:7:default:hook:a:evt_1`);
      expect(idemTtl).toBeGreaterThan(25_000);
      expect(await redis.pttl(`{${prefix}}:idem:7:default:p`)).toBeLessThanOrEqual(1_000);
      await store.cancelJob(hook.id);
      await store.cancelJob(plain.id);
      for (let i = 0; i < 3; i++) {
        const other = accepted(await store.submitJob(jobSpec(), timing)).job;
        await store.cancelJob(other.id);
      }
      // The webhook job expires first (60 s after it finished) so the oldest-first cap would take
      // it first; it stays while its key lives, and the plain one was dropped instead.
      expect(await redis.pttl(`{${prefix}}:j:${hook.id}`)).toBeGreaterThan(25_000);
      expect(await store.getJob(plain.id)).toBeNull();
      const again = accepted(
        await store.submitJob(jobSpec({ idempotencyKey: "hook:a:evt_1" }), {
          ...timing,
          idempotencyMs: 30_000,
        }),
      );
      expect(again).toMatchObject({ replayed: true, job: { id: hook.id } });
    } finally {
      await cleanup();
    }
  });

  it("count and list deliveries inside the submit; countWebhook adds to the same counters", async () => {
    const { store, cleanup } = await make();
    try {
      await exerciseLog(store);
    } finally {
      await cleanup();
    }
  });
});

describe("redis: a webhook submit is one round trip", () => {
  it("accepted and replayed alike, key, job, counter, history and event included", async () => {
    const redis = new Redis(REDIS_URL);
    const prefix = uid("whc");
    const { client, counter } = countingClient(fromIoredis(redis));
    const store = new RedisStore({ client, prefix });
    try {
      const via = {
        ...timing,
        idempotencyMs: 3 * 86_400_000,
        webhook: { endpoint: "s", eventId: "e" },
      };
      await store.now();
      const before = counter.roundTrips;
      const first = accepted(await store.submitJob(jobSpec({ idempotencyKey: "hook:s:e" }), via));
      expect(counter.roundTrips - before).toBe(1);
      const again = accepted(await store.submitJob(jobSpec({ idempotencyKey: "hook:s:e" }), via));
      expect(counter.roundTrips - before).toBe(2);
      expect(again.job.id).toBe(first.job.id);
    } finally {
      await deletePrefix(prefix);
      redis.disconnect();
    }
  });
});

describe("memory: webhook log", () => {
  it("counts and lists deliveries inside the submit", async () => {
    await exerciseLog(new MemoryStore());
  });
});

async function exerciseLog(store: Store) {
  const webhook = { endpoint: "stripe", eventId: "evt_1" };
  const first = accepted(
    await store.submitJob(jobSpec({ idempotencyKey: "hook:stripe:evt_1" }), { ...timing, webhook }),
  );
  const second = accepted(
    await store.submitJob(jobSpec({ idempotencyKey: "hook:stripe:evt_1" }), { ...timing, webhook }),
  );
  expect(second).toMatchObject({ replayed: true, job: { id: first.job.id } });
  for (let i = 0; i < 25; i++) {
    await store.submitJob(jobSpec(), { ...timing, webhook: { endpoint: "gh" } });
  }
  await store.countWebhook!("stripe", "unauthorized");
  await store.countWebhook!("_unknown", "not_found");
  const counts = await store.webhookCounts!();
  expect(Object.fromEntries(counts.get("stripe")!)).toEqual({
    accepted: 1,
    replayed: 1,
    unauthorized: 1,
  });
  expect(Object.fromEntries(counts.get("gh")!)).toEqual({ accepted: 25 });
  expect(Object.fromEntries(counts.get("_unknown")!)).toEqual({ not_found: 1 });
  const log = await store.webhookDeliveries!(["stripe", "gh", "none"], 20);
  expect(log.get("stripe")).toEqual([
    { at: expect.any(Number), eventId: "evt_1", outcome: "replayed", jobId: first.job.id },
    { at: expect.any(Number), eventId: "evt_1", outcome: "accepted", jobId: first.job.id },
  ]);
  expect(log.get("gh")).toHaveLength(20);
  expect(log.get("gh")?.[0]).not.toHaveProperty("eventId");
  expect(log.get("none")).toEqual([]);
  const created = (await store.events({ limit: 1_000, types: ["job.created"] })).events;
  expect(created.find((e) => e.jobId === first.job.id)?.webhook).toEqual(webhook);
}
