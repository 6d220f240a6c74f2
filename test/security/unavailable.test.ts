/**
 * Acceptance 4: Redis becomes unreachable in the middle of a request → 503 with `Retry-After`, and
 * once Redis is back nothing is half-written. Redis is reached through a TCP proxy the test cuts,
 * with the ioredis client configured exactly as `tickwork start` opens it. Two cuts: the submit
 * never reaches Redis (nothing was written), or it reaches Redis and only the reply is lost (the
 * job, its outbox entry, its counters and its quota count were all written, once). Either way a
 * client retrying with its idempotency key gets one job.
 */
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/adapter/node/store.ts";
import { silentLogger } from "../../src/engine/logger.ts";
import type { Store } from "../../src/store/port.ts";
import { expectProblem, type Harness, until } from "../http/harness.ts";
import { deletePrefix } from "../redis-rest/harness.ts";
import { bearer, call, securedApp, storeState, type TestTenant, tenant } from "./support.ts";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.ts";

const LIMIT = 100;
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

async function setup(): Promise<{
  proxy: TcpProxy;
  store: Store;
  h: Harness;
  acme: TestTenant;
  prefix: string;
}> {
  const proxy = await startTcpProxy({ host: "127.0.0.1", port: 6379 });
  open.push(proxy);
  const prefix = `tu${Math.random().toString(36).slice(2, 10)}`;
  const { store, close } = await openStore({ kind: "redis", url: proxy.url, prefix }, silentLogger);
  open.push({ close: () => deletePrefix(prefix) }, { close });
  const acme = await tenant(
    "acme",
    { client: ["jobs:write", "schedules:write", "read"] },
    { quotas: { submit: { perMinute: LIMIT } } },
  );
  const h = await securedApp(store, [acme]);
  open.push(h);
  return { proxy, store, h, acme, prefix };
}

function submit(h: Harness, acme: TestTenant, idempotencyKey: string) {
  return call(h.origin, "POST", "/v1/jobs", {
    json: { handler: "echo", delay: "1h", idempotencyKey },
    headers: bearer(acme.keys.client!),
  });
}

/** Everything the submit script writes agrees: records, listing, outbox, gauges, totals. */
async function expectConsistent(store: Store, jobs: number): Promise<void> {
  const listed = await store.listJobs({ tenant: "acme", limit: 100 });
  expect(listed.items).toHaveLength(jobs);
  for (const job of listed.items) expect(await store.getJob(job.id)).toEqual(job);
  const stats = await store.stats();
  expect(stats.outbox).toBe(jobs);
  expect(stats.jobs.queued).toBe(jobs);
  expect(stats.totals.submitted).toBe(jobs);
}

describe("Redis unreachable in the middle of a request", () => {
  it("cut before Redis sees the submit: 503 + Retry-After, nothing written; a retry makes the job", async () => {
    const { proxy, store, h, acme } = await setup();
    expect((await submit(h, acme, "first")).status).toBe(202);
    proxy.mode = "cut-before";
    const failed = await submit(h, acme, "second");
    expectProblem(failed, 503, /store is unreachable/);
    expect(Number(failed.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(proxy.cuts.before).toBe(1);
    // While it is down, every API request is a 503 (never a 500).
    expectProblem(
      await call(h.origin, "GET", "/v1/jobs", { headers: bearer(acme.keys.client!) }),
      503,
    );
    expectProblem(await call(h.origin, "GET", "/ready"), 503);

    proxy.mode = "pass";
    await until(async () => (await call(h.origin, "GET", "/ready")).status === 200, 10_000);
    await expectConsistent(store, 1);
    const retried = await submit(h, acme, "second");
    expect(retried.status).toBe(202);
    // The quota counted the two jobs, not the lost attempt.
    expect(retried.headers.get("ratelimit-remaining")).toBe(String(LIMIT - 2));
    await expectConsistent(store, 2);
  });

  it("cut after Redis ran the submit: 503 + Retry-After; the job is whole, counted once, and a retry replays it", async () => {
    const { proxy, store, h, acme } = await setup();
    expect((await submit(h, acme, "first")).status).toBe(202);
    proxy.mode = "cut-after";
    const failed = await submit(h, acme, "second");
    expectProblem(failed, 503);
    expect(Number(failed.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(proxy.cuts.after).toBe(1);

    proxy.mode = "pass";
    await until(async () => (await call(h.origin, "GET", "/ready")).status === 200, 10_000);
    // The submit ran whole: job, listing, outbox entry, counters — each once.
    await expectConsistent(store, 2);
    const before = await storeState(store);
    const retried = await submit(h, acme, "second");
    expect(retried.status).toBe(200);
    expect(retried.headers.get("idempotent-replayed")).toBe("true");
    expect(await storeState(store)).toBe(before);
    // Quota: two writes counted (the lost reply's included), the replay not.
    const third = await submit(h, acme, "third");
    expect(third.status).toBe(202);
    expect(third.headers.get("ratelimit-remaining")).toBe(String(LIMIT - 3));
    await expectConsistent(store, 3);
  });

  it("a schedule write cut either way: 503; once back it is absent or whole, and the retry settles it", async () => {
    const { proxy, store, h, acme } = await setup();
    const as = bearer(acme.keys.client!);
    const create = (id: string) =>
      call(h.origin, "POST", "/v1/schedules", {
        json: { id, handler: "echo", schedule: "1h" },
        headers: as,
      });
    // A create is three requests (read the schedule, read the clock, write): cut the write.
    for (const [mode, id] of [
      ["cut-before", "before"],
      ["cut-after", "after"],
    ] as const) {
      proxy.skip = 2;
      proxy.mode = mode;
      expectProblem(await create(id), 503);
      proxy.mode = "pass";
      await until(async () => (await call(h.origin, "GET", "/ready")).status === 200, 10_000);
      // Stored under the tenant's own namespace (docs/adr/0011).
      const stored = await store.getSchedule(`acme:${id}`);
      const listed = (await store.listSchedules({ tenant: "acme", limit: 100 })).items.find(
        (x) => x.id === `acme:${id}`,
      );
      // Written whole (record, listing, due time) or not at all.
      expect(listed).toEqual(stored ?? undefined);
      if (stored) expect(stored.nextRunAt).not.toBeNull();
      expect(Boolean(stored)).toBe(mode === "cut-after");
      // Retrying the same request settles it: created, or replaced in place.
      const retried = await create(id);
      expect(retried.status).toBe(stored ? 200 : 201);
    }
    expect(
      (await store.listSchedules({ tenant: "acme", limit: 100 })).items.map((x) => x.id).sort(),
    ).toEqual(["acme:after", "acme:before"]);
  });
});
