/**
 * Webhook jobs and finished-job retention, on memory (its clock driven by the test), Redis
 * (ioredis) and `@upstash/redis` through the REST bridge:
 *
 * - jobs kept while their key lives (`keepUntil`) at the front of the expiring index do not stop
 *   the `maxFinishedJobs` cap from dropping the plain finished jobs behind them;
 * - a webhook key shorter than the store's `idempotencyMs` (Slack's 1 h, Shopify's 4 h) still
 *   keeps its record from the cap, so a redelivery replays the first job instead of making a
 *   second one;
 * - an endpoint's history holds `WEBHOOK_HISTORY` deliveries, on Redis as on memory, and the
 *   script takes that size as an argument (no second copy of the number in Lua).
 */
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { type Store, type StoreRetention, WEBHOOK_HISTORY } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { scripts } from "../../src/store/redis/scripts.generated.ts";
import { accepted, jobSpec, uid } from "../contract/fixtures.ts";
import { deletePrefix, upstashClient } from "../redis-rest/harness.ts";
import { REDIS_URL } from "../support/stores.ts";

const timing = { delayMs: 0, recoverGraceMs: 60_000 };

interface Made {
  store: Store;
  /** Milliseconds of the store's clock to pass (memory only; Redis keeps real time). */
  advance: (ms: number) => void;
  cleanup: () => Promise<void>;
}

const factories: { name: string; make: (retention: StoreRetention) => Promise<Made> }[] = [
  {
    name: "memory",
    make: async (retention) => {
      let now = 1_000_000;
      const store = new MemoryStore({ clock: () => now, retention });
      const advance = (ms: number) => {
        now += ms;
      };
      return { store, advance, cleanup: async () => {} };
    },
  },
  {
    name: "redis",
    make: async (retention) => {
      const redis = new Redis(REDIS_URL);
      const prefix = uid("whr");
      const store = new RedisStore({ client: fromIoredis(redis), prefix, retention });
      return {
        store,
        advance: () => {},
        cleanup: async () => {
          await deletePrefix(prefix);
          redis.disconnect();
        },
      };
    },
  },
  {
    name: "upstash",
    make: async (retention) => {
      const prefix = uid("whru");
      const store = new RedisStore({ client: await upstashClient(), prefix, retention });
      return { store, advance: () => {}, cleanup: () => deletePrefix(prefix) };
    },
  },
];

describe.each(factories)("$name: webhook jobs and the finished-job cap", ({ make }) => {
  it("kept webhook jobs at the front of the index do not stop the cap dropping plain jobs", async () => {
    // Finished jobs live 10 min, at most 2; the webhook keys live 30 s, so the kept jobs expire
    // (and sort) first.
    const { store, advance, cleanup } = await make({
      jobMs: 600_000,
      idempotencyMs: 1_000,
      maxFinishedJobs: 2,
      maxRunsPerSchedule: 0,
    });
    try {
      const kept: string[] = [];
      for (const n of [1, 2]) {
        const job = accepted(
          await store.submitJob(jobSpec({ idempotencyKey: `hook:a:evt_${n}` }), {
            ...timing,
            idempotencyMs: 30_000,
          }),
        ).job;
        await store.cancelJob(job.id);
        kept.push(job.id);
        advance(10);
      }
      const plain: string[] = [];
      for (let i = 0; i < 12; i++) {
        const job = accepted(await store.submitJob(jobSpec(), timing)).job;
        await store.cancelJob(job.id);
        plain.push(job.id);
        advance(10);
      }
      for (const id of kept) expect(await store.getJob(id), "a kept job").not.toBeNull();
      const left = [];
      for (const id of plain) if (await store.getJob(id)) left.push(id);
      // The cap (2) is over by the kept jobs alone: each finish drops the plain ones before it.
      expect(left.length).toBeLessThanOrEqual(2);
      expect(left).toContain(plain.at(-1));
      // Both kept jobs still answer their key.
      const again = accepted(
        await store.submitJob(jobSpec({ idempotencyKey: "hook:a:evt_1" }), {
          ...timing,
          idempotencyMs: 30_000,
        }),
      );
      expect(again).toMatchObject({ replayed: true, job: { id: kept[0] } });
    } finally {
      await cleanup();
    }
  });

  it("a webhook key shorter than the store's idempotencyMs still keeps its record from the cap", async () => {
    // The store keeps keys 24 h; a Slack-like sender's key lives 1 h. Finished jobs: at most 1.
    const { store, advance, cleanup } = await make({
      jobMs: 60_000,
      idempotencyMs: 86_400_000,
      maxFinishedJobs: 1,
      maxRunsPerSchedule: 0,
    });
    try {
      const via = { ...timing, idempotencyMs: 3_600_000 };
      const hook = accepted(
        await store.submitJob(jobSpec({ idempotencyKey: "hook:s:e1" }), via),
      ).job;
      await store.cancelJob(hook.id);
      for (let i = 0; i < 4; i++) {
        advance(10);
        const other = accepted(await store.submitJob(jobSpec(), timing)).job;
        await store.cancelJob(other.id);
      }
      expect(await store.getJob(hook.id)).not.toBeNull();
      // The redelivery replays the first job: no second job.
      const again = accepted(await store.submitJob(jobSpec({ idempotencyKey: "hook:s:e1" }), via));
      expect(again).toMatchObject({ replayed: true, job: { id: hook.id } });
    } finally {
      await cleanup();
    }
  });

  it(`an endpoint's history holds WEBHOOK_HISTORY (${WEBHOOK_HISTORY}) deliveries`, async () => {
    const { store, cleanup } = await make({
      jobMs: 60_000,
      idempotencyMs: 60_000,
      maxFinishedJobs: 0,
      maxRunsPerSchedule: 0,
    });
    try {
      for (let i = 0; i < WEBHOOK_HISTORY + 3; i++) {
        await store.submitJob(jobSpec(), {
          ...timing,
          webhook: { endpoint: "h", eventId: `${i}` },
        });
      }
      const log = (await store.webhookDeliveries!(["h"], WEBHOOK_HISTORY + 10)).get("h") ?? [];
      expect(log).toHaveLength(WEBHOOK_HISTORY);
      expect(log[0]?.eventId).toBe(`${WEBHOOK_HISTORY + 2}`);
    } finally {
      await cleanup();
    }
  });
});

describe("redis: the history's size is the script's argument", () => {
  it("submitJob's Lua trims to an argument, not to a number of its own", () => {
    const { source } = scripts.submitJob;
    expect(source).toContain("LTRIM");
    expect(source).not.toMatch(/'LTRIM', log, 0, \d+\)/);
  });
});
