/**
 * Quotas over a real socket (acceptance 1, second half): with 5 submits a minute the 6th is 429
 * with `Retry-After` and the `RateLimit-*` headers, and the window slides (the memory store's
 * clock is moved, so the slide is exact); admitted writes carry the headers too; a replay is not
 * counted; schedule writes have their own quota. On Redis, a short window slides in real time,
 * and two app instances on one Redis admit exactly the quota out of 200 concurrent submits.
 */
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { expectProblem, type Harness, until } from "../http/harness.ts";
import { makeRedisStore, REDIS_URL } from "../support/stores.ts";
import { bearer, call, securedApp, storeState, type TestTenant, tenant } from "./support.ts";

const open: Harness[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** Submit an `echo` job far in the future (nothing runs), as `key`. */
function submit(origin: string, who: TestTenant, extra: Record<string, unknown> = {}) {
  return call(origin, "POST", "/v1/jobs", {
    json: { handler: "echo", delay: "1h", ...extra },
    headers: bearer(who.keys.client!),
  });
}

function rateLimit(headers: Headers) {
  return {
    limit: headers.get("ratelimit-limit"),
    remaining: headers.get("ratelimit-remaining"),
    reset: headers.get("ratelimit-reset"),
    policy: headers.get("ratelimit-policy"),
  };
}

/** The stores the quota tests below run on. */
const STORES = [
  { name: "memory", make: async () => ({ store: new MemoryStore(), cleanup: async () => {} }) },
  { name: "redis", make: () => makeRedisStore() },
];

describe("a 5/minute submit quota on the memory store (its clock moved by the test)", () => {
  it("admits 5 with RateLimit headers, refuses the 6th with 429, and the window slides", async () => {
    // 10.5 s into a second-aligned minute: the minute window counts in 1 s buckets.
    const T = Date.UTC(2026, 0, 1, 12, 0, 10, 500);
    let now = T;
    const store = new MemoryStore({ clock: () => now });
    const acme = await tenant(
      "acme",
      { client: ["jobs:write", "read"] },
      { quotas: { submit: { perMinute: 5, perHour: 100 } } },
    );
    const h = await securedApp(store, [acme]);
    open.push(h);

    // Three at T, two 30 s later.
    const remaining: (string | null)[] = [];
    for (let i = 0; i < 5; i++) {
      if (i === 3) now = T + 30_000;
      const answer = await submit(h.origin, acme);
      expect(answer.status).toBe(202);
      const headers = rateLimit(answer.headers);
      expect(headers.limit).toBe("5");
      expect(headers.policy).toBe("5;w=60, 100;w=3600");
      remaining.push(headers.remaining);
    }
    expect(remaining).toEqual(["4", "3", "2", "1", "0"]);

    const before = await storeState(store);
    const sixth = await submit(h.origin, acme);
    expectProblem(sixth, 429, /submit quota of 5 per minute exceeded/);
    expect(sixth.body.type).toBe("urn:tickwork:problem:quota_exceeded");
    // The first three (bucket 12:00:10) leave the window at 12:01:10: 29.5 s from now.
    expect(sixth.headers.get("retry-after")).toBe("30");
    expect(rateLimit(sixth.headers)).toEqual({
      limit: "5",
      remaining: "0",
      reset: "30",
      policy: "5;w=60, 100;w=3600",
    });
    expect(await storeState(store)).toBe(before);

    // One millisecond before the bucket leaves: still refused.
    now = T - 500 + 60_000 - 1;
    expectProblem(await submit(h.origin, acme), 429);
    expect(await storeState(store)).toBe(before);
    // Then exactly the three that left are admitted again; the two of T + 30 s still count.
    now = T - 500 + 60_000;
    for (let i = 0; i < 3; i++) expect((await submit(h.origin, acme)).status).toBe(202);
    const again = await submit(h.origin, acme);
    expectProblem(again, 429);
    // Now the two submits at T + 30 s (bucket 12:00:40) must leave: at 12:01:40, 30 s from now.
    expect(again.headers.get("retry-after")).toBe("30");
  });

  it("a replay is not counted and carries no RateLimit headers; other tenants count apart", async () => {
    let now = Date.UTC(2026, 0, 1, 12, 0, 0);
    const store = new MemoryStore({ clock: () => now });
    const quotas = { quotas: { submit: { perMinute: 2 } } };
    const acme = await tenant("acme", { client: ["jobs:write", "read"] }, quotas);
    const globex = await tenant("globex", { client: ["jobs:write", "read"] }, quotas);
    const h = await securedApp(store, [acme, globex]);
    open.push(h);
    const first = await submit(h.origin, acme, { idempotencyKey: "order-1" });
    expect(first.status).toBe(202);
    expect(first.headers.get("ratelimit-remaining")).toBe("1");
    for (let i = 0; i < 3; i++) {
      const replay = await submit(h.origin, acme, { idempotencyKey: "order-1" });
      expect(replay.status).toBe(200);
      expect(replay.body.id).toBe(first.body.id);
      expect(replay.headers.get("ratelimit-remaining")).toBeNull();
    }
    expect((await submit(h.origin, acme)).headers.get("ratelimit-remaining")).toBe("0");
    expectProblem(await submit(h.origin, acme), 429);
    expect((await submit(h.origin, globex)).status).toBe(202);
    now += 60_000;
    expect((await submit(h.origin, acme)).status).toBe(202);
  });
});

describe.each(STORES)("schedule quota on $name", ({ make }) => {
  it("schedule writes have their own quota; pause and resume are not counted", async () => {
    const { store, cleanup } = await make();
    cleanups.push(cleanup);
    const acme = await tenant(
      "acme",
      { client: ["jobs:write", "schedules:write", "read"] },
      { quotas: { schedule: { perMinute: 2 }, submit: { perMinute: 100 } } },
    );
    const h = await securedApp(store, [acme]);
    open.push(h);
    const as = bearer(acme.keys.client!);
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "a", handler: "echo", schedule: "1h" },
      headers: as,
    });
    expect(created.status).toBe(201);
    expect(rateLimit(created.headers)).toMatchObject({ limit: "2", remaining: "1" });
    for (const action of ["pause", "resume", "pause", "resume"]) {
      expect(
        (await call(h.origin, "POST", `/v1/schedules/a/${action}`, { headers: as })).status,
      ).toBe(200);
    }
    const patched = await call(h.origin, "PATCH", "/v1/schedules/a", {
      json: { priority: 9 },
      headers: as,
    });
    expect(patched.status).toBe(200);
    // A change counts, and its answer says so as a create's does.
    expect(rateLimit(patched.headers)).toMatchObject({ limit: "2", remaining: "0" });
    const before = await storeState(store);
    const third = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "b", handler: "echo", schedule: "1h" },
      headers: as,
    });
    expectProblem(third, 429, /schedule quota of 2 per minute/);
    // The first write's bucket leaves a minute after it was written: 59–60 s from now.
    expect(["59", "60"]).toContain(third.headers.get("retry-after"));
    expectProblem(
      await call(h.origin, "PATCH", "/v1/schedules/a", { json: { priority: 1 }, headers: as }),
      429,
    );
    expect(await storeState(store)).toBe(before);
    // Submits are counted apart.
    expect((await submit(h.origin, acme)).status).toBe(202);
  });
});

describe.each(STORES)("a flow's jobs on the submit quota, on $name", ({ make }) => {
  it("each job counts; the answer carries the RateLimit headers, a refusal the 429's", async () => {
    const { store, cleanup } = await make();
    cleanups.push(cleanup);
    const acme = await tenant(
      "acme",
      { client: ["jobs:write", "read"] },
      { quotas: { submit: { perMinute: 5 } } },
    );
    const h = await securedApp(store, [acme]);
    open.push(h);
    const as = bearer(acme.keys.client!);
    const flow = {
      children: [
        { handler: "echo", delay: "1h" },
        { handler: "echo", delay: "1h" },
      ],
      parent: { handler: "echo" },
    };
    const first = await call(h.origin, "POST", "/v1/flows", { json: flow, headers: as });
    expect(first.status).toBe(202);
    expect(rateLimit(first.headers)).toMatchObject({ limit: "5", remaining: "2" });
    const refused = await call(h.origin, "POST", "/v1/flows", { json: flow, headers: as });
    expectProblem(refused, 429);
    expect(rateLimit(refused.headers)).toMatchObject({ limit: "5", remaining: "0" });
    expect(refused.headers.get("retry-after")).not.toBeNull();
  });
});

describe("quotas on Redis", () => {
  it("a 3-per-2-seconds window refuses the 4th and admits again once it has slid", async () => {
    const redis = await makeRedisStore();
    cleanups.push(redis.cleanup);
    const acme = await tenant(
      "acme",
      { client: ["jobs:write", "read"] },
      { quotas: { submit: { windows: [{ limit: 3, windowMs: 2_000 }] } } },
    );
    const h = await securedApp(redis.store, [acme]);
    open.push(h);
    for (let i = 0; i < 3; i++) expect((await submit(h.origin, acme)).status).toBe(202);
    const refused = await submit(h.origin, acme);
    expectProblem(refused, 429, /quota of 3 per 2 s/);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(2);
    expect(refused.headers.get("ratelimit-policy")).toBe("3;w=2");
    // The window slides: within about 2 s the first writes leave it and submits are admitted.
    let admitted = 0;
    await until(async () => {
      if ((await submit(h.origin, acme)).status === 202) admitted++;
      return admitted === 3;
    }, 10_000);
    expect((await h.store.listJobs({ tenant: "acme", limit: 100 })).items).toHaveLength(6);
  });

  it("two app instances on one Redis admit exactly the quota of 200 concurrent submits", async () => {
    const first = await makeRedisStore();
    cleanups.push(first.cleanup);
    const otherClient = new Redis(REDIS_URL);
    cleanups.push(async () => otherClient.disconnect());
    const second = new RedisStore({ client: fromIoredis(otherClient), prefix: first.prefix });
    const LIMIT = 37;
    const acme = await tenant(
      "acme",
      { client: ["jobs:write", "read"] },
      { quotas: { submit: { perMinute: LIMIT, perDay: 10_000 } } },
    );
    const a = await securedApp(first.store, [acme]);
    const b = await securedApp(second, [acme]);
    open.push(a, b);
    // One submit through each instance first: both admit (the quota is shared, not per
    // instance). Which instance admits the rest of a burst depends on which requests come first.
    const firsts = [await submit(a.origin, acme), await submit(b.origin, acme)];
    expect(firsts.map((answer) => answer.status)).toEqual([202, 202]);
    const burst = await Promise.all(
      Array.from({ length: 198 }, (_, i) => submit(i % 2 === 0 ? a.origin : b.origin, acme)),
    );
    const answers = [...firsts, ...burst];
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(200 - LIMIT);
    // Each admitted answer saw a distinct remaining count: LIMIT - 1 … 0.
    const remaining = answers
      .filter((x) => x.status === 202)
      .map((x) => Number(x.headers.get("ratelimit-remaining")))
      .sort((x, y) => x - y);
    expect(remaining).toEqual(Array.from({ length: LIMIT }, (_, i) => i));
    let stored = 0;
    let cursor: string | undefined;
    do {
      const page = await first.store.listJobs({ tenant: "acme", limit: 100, cursor });
      stored += page.items.length;
      cursor = page.cursor;
    } while (cursor);
    expect(stored).toBe(LIMIT);
  });
});
