/**
 * Two tenants on one store, over the HTTP API: nothing tenant A receives — bodies, headers,
 * cursors — holds an id, an input or a result of tenant B's. B's schedule runs with a secret in
 * its input, B deletes it, A creates a schedule with the same id: A sees none of B's runs. A's
 * listings page through A's records only, full pages, cursors naming A's records only; a path id
 * shaped like another key answers 404, never 500.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type Answer,
  type Harness,
  SIGNING_KEY,
  startHarness,
  testHandlers,
  until,
} from "../http/harness.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import { bearer, call, type TestTenant, TICK_SECRET, tenant } from "./support.ts";

const SECRET = "B-SECRET-5f1c9a";

describe.each(storeFactories)("tenant isolation on $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;
  let a: TestTenant;
  let b: TestTenant;

  beforeEach(async () => {
    handle = await factory.make();
    a = await tenant("tenant-a", { admin: ["admin"] });
    b = await tenant("tenant-b", { admin: ["admin"] });
    h = await startHarness({
      store: handle.store,
      handlers: testHandlers().handlers,
      app: { dev: false, tickSecret: TICK_SECRET, tenants: [a.config, b.config] },
      engine: { degradation: false },
    });
    expect(SIGNING_KEY).toBeTruthy();
  });

  afterEach(async () => {
    await h.close();
    await handle.cleanup();
  });

  it("A never receives B's ids, inputs or results — cursors, runs of a reused schedule id and key-shaped ids included", async () => {
    const asA = bearer(a.keys.admin!);
    const asB = bearer(b.keys.admin!);
    const tick = () =>
      call(h.origin, "POST", "/v1/tick", { headers: { authorization: `Bearer ${TICK_SECRET}` } });

    // B: a one-second schedule with a secret in its input, run a few times; jobs, one dead.
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "billing-sync", handler: "echo", schedule: "1s", input: { secret: SECRET } },
      headers: asB,
    });
    expect(created.status).toBe(201);
    const bJobs: string[] = [];
    for (let i = 0; i < 4; i++) {
      const job = await call(h.origin, "POST", "/v1/jobs", {
        json: { handler: "echo", input: { secret: `${SECRET}-${i}` } },
        headers: asB,
      });
      expect(job.status).toBe(202);
      bJobs.push(job.body.id);
    }
    const dead = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "gated", input: { secret: SECRET } },
      headers: asB,
    });
    bJobs.push(dead.body.id);
    const bRuns = async () =>
      (await call(h.origin, "GET", "/v1/schedules/billing-sync/runs", { headers: asB })).body
        .items as { id: string; status: string }[];
    await until(async () => {
      await tick();
      const runs = await bRuns();
      return runs.filter((r) => r.status === "succeeded").length >= 2;
    }, 15_000);
    await until(async () => {
      const list = await call(h.origin, "GET", "/v1/dlq", { headers: asB });
      return list.body.items.length === 1;
    }, 10_000);
    const runIds = (await bRuns()).map((r) => r.id);
    bJobs.push(...runIds);

    // B deletes the schedule; A creates its own under the same id.
    expect(
      (await call(h.origin, "DELETE", "/v1/schedules/billing-sync", { headers: asB })).status,
    ).toBe(200);
    const mine = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "billing-sync", handler: "echo", schedule: "1h", input: { mine: true } },
      headers: asA,
    });
    expect(mine.status).toBe(201);
    const aJob = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", input: { mine: 1 } },
      headers: asA,
    });
    expect(aJob.status).toBe(202);

    // Everything A can read, every page.
    const seen: string[] = [];
    const record = (answer: Answer) => {
      const headers = [...answer.headers].map(([k, v]) => `${k}: ${v}`).join("\n");
      seen.push(JSON.stringify(answer.body), headers);
      return answer;
    };
    const pages = async (path: string) => {
      let cursor: string | undefined;
      let count = 0;
      do {
        const sep = path.includes("?") ? "&" : "?";
        const url = cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path;
        const answer = record(await call(h.origin, "GET", url, { headers: asA }));
        expect(answer.status, url).toBe(200);
        const { items, cursor: next } = answer.body as { items: unknown[]; cursor?: string };
        if (next) {
          expect(items.length, `${url}: a page before the last is full`).toBeGreaterThan(0);
          seen.push(Buffer.from(next, "base64url").toString("utf8"));
        }
        cursor = next;
        count += items.length;
      } while (cursor && count < 1_000);
      return count;
    };
    expect(await pages("/v1/jobs?limit=1")).toBe(1);
    await pages("/v1/jobs?limit=1&handler=echo&status=succeeded");
    await pages("/v1/jobs?limit=1&handler=gated&status=dead");
    await pages("/v1/jobs?limit=2&scheduleId=billing-sync");
    expect(await pages("/v1/schedules?limit=1")).toBe(1);
    expect(await pages("/v1/schedules/billing-sync/runs?limit=1")).toBe(0);
    expect(await pages("/v1/dlq?limit=1")).toBe(0);
    record(await call(h.origin, "GET", "/v1/schedules/billing-sync", { headers: asA }));
    record(await call(h.origin, "GET", "/v1/events?limit=1000", { headers: asA }));
    for (const id of bJobs) {
      // Asked by id, B's jobs are unknown to A (not recorded: the 404 names the id asked for).
      expect((await call(h.origin, "GET", `/v1/jobs/${id}`, { headers: asA })).status).toBe(404);
    }
    // Ids shaped like other keys: 404 like any unknown id, never 500, for either tenant.
    for (const path of [
      "/v1/schedules/billing-sync:running",
      "/v1/schedules/billing-sync:running/runs",
      "/v1/schedules/tenant-b:billing-sync",
      "/v1/jobs/tenant-b:billing-sync@1",
    ]) {
      for (const headers of [asA, asB]) {
        // Not recorded: a 404's detail names the id asked for (here one spelling "tenant-b").
        expect((await call(h.origin, "GET", path, { headers })).status, path).toBe(404);
      }
    }

    // A change to a schedule it does not have names the id as asked, as every other route does
    // (before, PATCH named the stored id, which carries the tenant).
    const patched = await call(h.origin, "PATCH", "/v1/schedules/no-such-schedule", {
      headers: asA,
      json: { input: { n: 1 } },
    });
    expect(patched.status).toBe(404);
    expect(JSON.stringify(patched.body)).toContain('"no-such-schedule\\"');
    expect(JSON.stringify(patched.body)).not.toContain("tenant-a:");

    const everything = seen.join("\n");
    const at = everything.indexOf("tenant-b");
    expect(at, everything.slice(Math.max(0, at - 300), at + 100)).toBe(-1);
    expect(everything).not.toContain(SECRET);
    expect(everything).not.toContain("tenant-b");
    for (const id of bJobs) expect(everything).not.toContain(id);
  });
});
