/**
 * `GET /v1/events?jobId=` over a real socket, on the memory store and on Redis: one job's
 * lifecycle (a retried job's attempts and error) read from its creation time, read on with `more`
 * and `last`, hidden from another tenant's key, and bad `jobId` values answered 400 problem+json
 * with nothing stored.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hashKey } from "../../src/config/keys.ts";
import type { TenantConfig } from "../../src/config/schema.ts";
import type { Scope } from "../../src/engine/broker.ts";
import {
  call,
  expectProblem,
  type Harness,
  snapshot,
  startHarness,
  testHandlers,
} from "../http/harness.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";

const factories = storeFactories.filter((f) => f.name === "memory" || f.name === "redis");

interface EventItem {
  id: string;
  type: string;
  at: string;
  jobId?: string;
  tenant?: string;
  attempt?: number;
  error?: { name: string; message: string };
}

describe.each(factories)("GET /v1/events?jobId= on $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;
  const as = (tenant: string) => ({ authorization: `Bearer ${tenant}-key` });

  beforeEach(async () => {
    handle = await factory.make();
    const key = async (id: string) => ({
      hash: await hashKey(`${id}-key`),
      scopes: ["read", "jobs:write"] as Scope[],
    });
    const tenants: TenantConfig[] = [
      { id: "t1", keys: [await key("t1")] },
      { id: "t2", keys: [await key("t2")] },
    ];
    h = await startHarness({
      store: handle.store,
      handlers: testHandlers().handlers,
      app: { tenants },
    });
  });

  afterEach(async () => {
    await h.close();
    await handle.cleanup();
  });

  /** Submits as `tenant` and waits (long-poll) until the job is final. */
  async function runJob(tenant: string, body: unknown) {
    const submitted = await call(h.origin, "POST", "/v1/jobs", { json: body, headers: as(tenant) });
    expect(submitted.status).toBe(202);
    const done = await call(h.origin, "GET", `/v1/jobs/${submitted.body.id}?wait=10s`, {
      headers: as(tenant),
    });
    expect(done.status).toBe(200);
    return done.body as { id: string; status: string; attempts: number; createdAt: string };
  }

  const eventsOf = (query: string, tenant: string) =>
    call(h.origin, "GET", `/v1/events?${query}`, { headers: as(tenant) });

  it("lists one job's lifecycle from its creation, with attempts and the error", async () => {
    const other = await runJob("t1", { handler: "echo", input: 1 });
    const job = await runJob("t1", { handler: "flaky", input: { times: 1 } });
    expect(job).toMatchObject({ status: "succeeded", attempts: 2 });

    const since = encodeURIComponent(job.createdAt);
    const res = await eventsOf(`jobId=${encodeURIComponent(job.id)}&since=${since}`, "t1");
    expect(res.status).toBe(200);
    const items = res.body.items as EventItem[];
    expect(items.map((e) => [e.type, e.attempt ?? null])).toEqual([
      ["job.created", null],
      ["job.started", 1],
      ["job.failed", 1],
      ["job.started", 2],
      ["job.succeeded", null],
    ]);
    expect(items.every((e) => e.jobId === job.id && e.tenant === "t1")).toBe(true);
    expect(items[2]?.error).toMatchObject({
      name: expect.any(String),
      message: expect.any(String),
    });
    expect(res.body.more).toBeUndefined();
    // Without `since` the scan starts at the oldest event and still finds only this job's.
    const fromStart = await eventsOf(`jobId=${encodeURIComponent(job.id)}`, "t1");
    expect(fromStart.body.items).toEqual(items);
    expect((fromStart.body.items as EventItem[]).some((e) => e.jobId === other.id)).toBe(false);

    // One at a time: `more` until the last, each page going on from `last`.
    const seen: EventItem[] = [];
    let after = "";
    for (let i = 0; i < 10; i++) {
      const page = await eventsOf(
        `jobId=${encodeURIComponent(job.id)}&limit=1${after ? `&since=${after}` : ""}`,
        "t1",
      );
      seen.push(...(page.body.items as EventItem[]));
      if (!page.body.more) break;
      after = page.body.last;
    }
    expect(seen).toEqual(items);
  });

  it("gives another tenant's key nothing for a job of the first tenant", async () => {
    const job = await runJob("t1", { handler: "flaky", input: { times: 1 } });
    const mine = await eventsOf(`jobId=${encodeURIComponent(job.id)}`, "t1");
    expect((mine.body.items as EventItem[]).length).toBe(5);

    const theirs = await eventsOf(`jobId=${encodeURIComponent(job.id)}`, "t2");
    expect(theirs.status).toBe(200);
    expect(theirs.body.items).toEqual([]);
    const since = encodeURIComponent(job.createdAt);
    const withSince = await eventsOf(`jobId=${encodeURIComponent(job.id)}&since=${since}`, "t2");
    expect(withSince.body.items).toEqual([]);
    // Nor does the page's end tell it: one event at a time, t1's job reads as one that does not
    // exist (before, the scan stopped at its event: `more`, and `last` that event's id).
    // Nor does `last` name one of t1's events (before, it was t1's latest event's id: when t1's
    // jobs ran, to the millisecond).
    const one = await eventsOf(`jobId=${encodeURIComponent(job.id)}&limit=1`, "t2");
    const nothing = await eventsOf("jobId=j_0nosuchjob0000000000000&limit=1", "t2");
    const dead = await eventsOf("type=job.failed&limit=1", "t2");
    const t1Ids = new Set((mine.body.items as EventItem[]).map((e) => e.id));
    expect(t1Ids.size).toBe(5);
    for (const page of [theirs, withSince, one, nothing, dead]) {
      expect(page.body.items).toEqual([]);
      expect(page.body.more).toBeUndefined();
      expect(t1Ids.has(page.body.last)).toBe(false);
    }
    // Its own job's id is no way in either: the job itself is not found.
    expectProblem(await call(h.origin, "GET", `/v1/jobs/${job.id}`, { headers: as("t2") }), 404);
  });

  it("answers a bad jobId with 400 problem+json and stores nothing", async () => {
    await runJob("t1", { handler: "echo", input: null });
    const state = await snapshot(handle.store);
    const bad = [
      "jobId=",
      "jobId=__proto__",
      "jobId=constructor",
      `jobId=j_${"a".repeat(300)}`,
      `jobId=${"a".repeat(200)}@${"1".repeat(60)}`,
      "jobId=j_%ED%A0%80aaaaaaaaaaaaaaaaaaaa",
      "jobId=%F0%9F",
      "jobId=j_abcdefghijklmnopqrstu%00",
      "jobId=report%3Arunning",
      "jobId=j_0mwxa9xfphc7zv0crypps&limit=0",
    ];
    for (const query of bad) {
      const res = await eventsOf(query, "t1");
      expectProblem(res, 400);
      const said = (res.body.errors as { path: string; message: string }[])
        .map((e) => `${e.path}: ${e.message}`)
        .join("\n");
      expect(said, query).toMatch(/jobId|limit/);
    }
    expect(await snapshot(handle.store)).toBe(state);
    // A well-formed id of no job: no items.
    const none = await eventsOf("jobId=j_0mwxa9xfphc7zv0crypps", "t1");
    expect(none.status).toBe(200);
    expect(none.body.items).toEqual([]);
  });
});
