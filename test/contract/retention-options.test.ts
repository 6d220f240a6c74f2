/**
 * The stores' `retention` option, as a developer passes it to `new RedisStore(…)` or
 * `new MemoryStore(…)` (the configuration file's `retention` is checked by its schema): a value
 * out of range is refused when the store is built, naming the option. On Redis a `jobMs` of NaN,
 * Infinity or 1e300 failed every submit at run time ("ERR store settings: … NaN …"), a negative
 * or fractional one kept finished jobs 1 ms, an `idempotencyMs` of NaN failed every submit with an
 * idempotency key after its job was stored (a queued job nobody would deliver), and a negative or
 * NaN cap silently meant no cap.
 */
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { StoreRetention } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { REDIS_URL } from "../support/stores.ts";

const redis = new Redis(REDIS_URL, { lazyConnect: true });
afterAll(() => redis.disconnect());

const makers: [string, (retention: Partial<StoreRetention>) => unknown][] = [
  ["memory", (retention) => new MemoryStore({ retention })],
  ["redis", (retention) => new RedisStore({ client: fromIoredis(redis), retention })],
];

const refused: [keyof StoreRetention, number][] = [
  ["jobMs", Number.NaN],
  ["jobMs", Number.POSITIVE_INFINITY],
  ["jobMs", 1e300],
  ["jobMs", -5],
  ["jobMs", 0],
  ["jobMs", 0.5],
  ["idempotencyMs", Number.NaN],
  ["idempotencyMs", Number.POSITIVE_INFINITY],
  ["idempotencyMs", 0],
  ["maxFinishedJobs", -1],
  ["maxFinishedJobs", Number.NaN],
  ["maxFinishedJobs", 1.5],
  ["maxRunsPerSchedule", -1],
  ["maxRunsPerSchedule", Number.NaN],
];

describe.each(makers)("the %s store's retention option", (_name, make) => {
  it.each(refused)("refuses %s = %s, naming it", (key, value) => {
    expect(() => make({ [key]: value })).toThrow(new RegExp(`retention\\.${key}`));
  });

  it("accepts the documented range: durations of 1 ms to ten years, caps of 0 or Infinity (none)", () => {
    expect(() =>
      make({
        jobMs: 1,
        idempotencyMs: 10 * 365 * 86_400_000,
        maxFinishedJobs: 0,
        maxRunsPerSchedule: Number.POSITIVE_INFINITY,
      }),
    ).not.toThrow();
    expect(() => make({ maxFinishedJobs: 1_000_000_000 })).not.toThrow();
  });
});
