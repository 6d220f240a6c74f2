/**
 * `/metrics`, `/v1/stats` and `/v1/events` over a real socket, on the memory store and on Redis:
 * the exposition is read by a strict parser of the Prometheus text format and its counters move
 * as jobs run through the real local queue (HTTP deliveries to the app's own `/v1/worker`).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TickworkError } from "../../src/core/errors.ts";
import type { Scope } from "../../src/engine/broker.ts";
import { jsonLogger } from "../../src/engine/logger.ts";
import type { Authorize } from "../../src/http/index.ts";
import {
  call,
  expectProblem,
  type Harness,
  snapshot,
  startHarness,
  testHandlers,
  twoTenants,
  until,
} from "../http/harness.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import { type Family, parsePrometheus, sampleValue } from "./prometheus-parser.ts";

const factories = storeFactories.filter((f) => f.name === "memory" || f.name === "redis");

/** Keys of the auth tests and the scopes they carry. */
const KEYS: Record<string, Scope[]> = {
  reader: ["read"],
  admin: ["admin"],
  writer: ["jobs:write", "schedules:write"],
};
const authorize: Authorize = (c) => {
  const key = /^Bearer (\S+)$/.exec(c.req.header("authorization") ?? "")?.[1];
  const scopes = key === undefined ? undefined : KEYS[key];
  if (!scopes) throw new TickworkError(401, "unauthorized", "missing or invalid API key");
  return { tenant: "t1", scopes };
};

describe.each(factories)("observability routes on $name", (factory) => {
  let handle: StoreHandle;
  let t: ReturnType<typeof testHandlers>;
  const servers: Harness[] = [];

  async function start(options: Partial<Parameters<typeof startHarness>[0]> = {}) {
    const h = await startHarness({ store: handle.store, handlers: t.handlers, ...options });
    servers.push(h);
    return h;
  }

  async function metrics(h: Harness, headers: Record<string, string> = {}) {
    const res = await call(h.origin, "GET", "/metrics", { headers });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    return parsePrometheus(res.body as string);
  }

  /** Submit and wait (long-poll) until the job is final. */
  async function runJob(h: Harness, body: unknown) {
    const submitted = await call(h.origin, "POST", "/v1/jobs", { json: body });
    expect(submitted.status).toBe(202);
    const done = await call(h.origin, "GET", `/v1/jobs/${submitted.body.id}?wait=10s`);
    return done.body as { id: string; status: string; attempts: number };
  }

  beforeEach(async () => {
    handle = await factory.make();
    t = testHandlers();
  });

  afterEach(async () => {
    await Promise.all(servers.splice(0).map((h) => h.close()));
    await handle.cleanup();
  });

  it("counts jobs as they run: submitted, attempts, outcomes and the histograms move", async () => {
    const h = await start();
    const before = await metrics(h);
    const value = (m: Map<string, Family>, name: string, labels?: Record<string, string>) =>
      sampleValue(m, name, labels);

    expect(await runJob(h, { handler: "echo", input: { n: 1 } })).toMatchObject({
      status: "succeeded",
      attempts: 1,
    });
    expect(await runJob(h, { handler: "flaky", input: { times: 1 } })).toMatchObject({
      status: "succeeded",
      attempts: 2,
    });
    expect(await runJob(h, { handler: "gated", input: null, retries: 0 })).toMatchObject({
      status: "dead",
      attempts: 1,
    });

    const after = await metrics(h);
    const delta = (name: string, labels?: Record<string, string>) =>
      value(after, name, labels) - value(before, name, labels);
    expect({
      submitted: delta("tickwork_jobs_submitted_total"),
      started: delta("tickwork_job_attempts_started_total"),
      succeeded: delta("tickwork_jobs_succeeded_total"),
      failed: delta("tickwork_job_attempts_failed_total"),
      dead: delta("tickwork_jobs_dead_total"),
      durations: delta("tickwork_handler_duration_seconds_count"),
      durationsInf: delta("tickwork_handler_duration_seconds_bucket", { le: "+Inf" }),
      lags: delta("tickwork_dispatch_lag_seconds_count"),
    }).toEqual({
      submitted: 3,
      started: 4,
      succeeded: 2,
      failed: 2,
      dead: 1,
      durations: 4,
      durationsInf: 4,
      lags: 3, // first attempts only
    });
    // Nothing is left waiting.
    expect({
      queued: value(after, "tickwork_jobs", { status: "queued" }),
      running: value(after, "tickwork_jobs", { status: "running" }),
      failed: value(after, "tickwork_jobs", { status: "failed" }),
      depth: value(after, "tickwork_queue_depth"),
    }).toEqual({ queued: 0, running: 0, failed: 0, depth: 0 });

    // /v1/stats says the same in JSON.
    const stats = await call(h.origin, "GET", "/v1/stats");
    expect(stats.status).toBe(200);
    expect(stats.body.instance).toBe(h.engine.options.instanceId);
    expect(Date.parse(stats.body.now)).not.toBeNaN();
    expect(stats.body.totals).toMatchObject({
      submitted: value(after, "tickwork_jobs_submitted_total"),
      succeeded: value(after, "tickwork_jobs_succeeded_total"),
      dead: value(after, "tickwork_jobs_dead_total"),
    });
    expect(stats.body.histograms.handlerDurationMs.count).toBe(
      value(after, "tickwork_handler_duration_seconds_count"),
    );
    expect(stats.body.degradation.level).toBe("normal");
  });

  it("a leader tick moves dispatched, ticks, the tick histograms and the leader metrics", async () => {
    const h = await start();
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "every-second", handler: "echo", schedule: "1s", maxRuns: 2 },
    });
    expect(created.status).toBe(201);
    const before = await metrics(h);
    expect(before.has("tickwork_leader_info")).toBe(false);

    const tick = await call(h.origin, "POST", "/v1/tick");
    expect(tick.body).toMatchObject({ leader: true });
    expect(tick.body.dispatched).toBeGreaterThan(0);

    const after = await metrics(h);
    const delta = (name: string) => sampleValue(after, name) - sampleValue(before, name);
    expect(delta("tickwork_occurrences_dispatched_total")).toBe(tick.body.dispatched);
    expect(delta("tickwork_ticks_total")).toBe(1);
    expect(delta("tickwork_tick_duration_seconds_count")).toBe(1);
    expect(delta("tickwork_leader_lease_acquisition_seconds_count")).toBe(1);
    expect(sampleValue(after, "tickwork_leader_changes_total")).toBe(1);
    const holder = h.engine.options.instanceId;
    expect(sampleValue(after, "tickwork_leader_info", { holder })).toBe(1);
    // The tick released its lease at the end.
    expect(sampleValue(after, "tickwork_leader_active")).toBe(0);

    const events = await call(h.origin, "GET", "/v1/events?type=leader.changed");
    expect(events.status).toBe(200);
    expect(events.body.items).toEqual([
      expect.objectContaining({ type: "leader.changed", holder, previous: null }),
    ]);
  });

  it("/v1/events lists a job's lifecycle in order, filtered by type, paged by since", async () => {
    const h = await start();
    const job = await runJob(h, { handler: "echo", input: null });
    expect(job.status).toBe("succeeded");

    const all = await call(h.origin, "GET", "/v1/events");
    expect(all.status).toBe(200);
    const mine = (all.body.items as { jobId?: string; type: string }[]).filter(
      (e) => e.jobId === job.id,
    );
    expect(mine.map((e) => e.type)).toEqual(["job.created", "job.started", "job.succeeded"]);
    expect(mine[1]).toMatchObject({ handler: "echo", attempt: 1 });
    const ids = (all.body.items as { id: string }[]).map((e) => e.id);
    expect(all.body.last).toBe(ids.at(-1));

    const onlyDone = await call(h.origin, "GET", "/v1/events?type=job.succeeded, job.dead");
    expect(onlyDone.body.items.map((e: { type: string }) => e.type)).toEqual(["job.succeeded"]);

    // Page by page with the id of the last event, then by time.
    const first = await call(h.origin, "GET", "/v1/events?limit=1");
    expect(first.body.items).toHaveLength(1);
    const second = await call(h.origin, "GET", `/v1/events?limit=1&since=${first.body.last}`);
    expect(second.body.items.map((e: { id: string }) => e.id)).toEqual([ids[1]]);
    const at = all.body.items[1].at as string;
    for (const since of [at, String(Date.parse(at))]) {
      const byTime = await call(h.origin, "GET", `/v1/events?since=${encodeURIComponent(since)}`);
      expect(byTime.status).toBe(200);
      expect(byTime.body.items[0].at >= at).toBe(true);
      // Every event at or after that time is there: the one at `at` itself included.
      expect(byTime.body.items.map((e: { id: string }) => e.id)).toContain(ids[1]);
    }
    const future = await call(h.origin, "GET", `/v1/events?since=${Date.now() + 3_600_000}`);
    expect(future.body.items).toEqual([]);
  });

  it("answers a bad events query with 400 problem+json and changes nothing", async () => {
    const h = await start();
    await runJob(h, { handler: "echo", input: null });
    const state = await snapshot(handle.store);
    const bad = [
      ["type=job.nope", /job\.nope/],
      ["type=", /type/],
      ["type=job.created,leader", /unknown event type "leader"/],
      ["since=yesterday", /since/],
      ["since=1-2-3", /since/],
      ["limit=0", /limit/],
      ["limit=5000", /limit/],
      ["limit=ten", /limit/],
    ] as const;
    for (const [query, detail] of bad) {
      const res = await call(h.origin, "GET", `/v1/events?${query}`);
      expectProblem(res, 400);
      const said = (res.body.errors as { path: string; message: string }[])
        .map((e) => `${e.path}: ${e.message}`)
        .join("\n");
      expect(said, query).toMatch(detail);
    }
    expect(await snapshot(handle.store)).toBe(state);
  });

  it("needs the read scope: 401 without a key, 403 for a write-only key", async () => {
    const h = await start({ app: { authorize } });
    for (const path of ["/metrics", "/v1/stats", "/v1/events"]) {
      expectProblem(await call(h.origin, "GET", path), 401);
      const writer = await call(h.origin, "GET", path, {
        headers: { authorization: "Bearer writer" },
      });
      expectProblem(writer, 403, /read/);
      for (const key of ["reader", "admin"]) {
        const ok = await call(h.origin, "GET", path, {
          headers: { authorization: `Bearer ${key}` },
        });
        expect(ok.status, `${path} with ${key}`).toBe(200);
      }
    }
    // The page holds no data: it is served without a key (it asks for one when the API says 401).
    const page = await call(h.origin, "GET", "/dashboard");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
  });

  it("shows a tenant's key the events of its own jobs only (and the deployment's)", async () => {
    const tenants = await twoTenants();
    const h = await start({ app: { tenants } });
    const as = (tenant: string) => ({ authorization: `Bearer ${tenant}-key` });
    const ids: Record<string, string> = {};
    for (const tenant of ["t1", "t2"]) {
      const submitted = await call(h.origin, "POST", "/v1/jobs", {
        json: { handler: "echo", input: tenant },
        headers: as(tenant),
      });
      ids[tenant] = submitted.body.id;
      await call(h.origin, "GET", `/v1/jobs/${submitted.body.id}?wait=10s`, {
        headers: as(tenant),
      });
    }
    await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "t1-often", handler: "echo", schedule: "1s", maxRuns: 1 },
      headers: as("t1"),
    });
    await call(h.origin, "POST", "/v1/tick");

    const seen = await call(h.origin, "GET", "/v1/events", { headers: as("t1") });
    const items = seen.body.items as { type: string; jobId?: string; tenant?: string }[];
    expect(items.filter((e) => e.jobId === ids.t1).map((e) => e.type)).toEqual([
      "job.created",
      "job.started",
      "job.succeeded",
    ]);
    expect(items.some((e) => e.jobId === ids.t2)).toBe(false);
    expect(items.every((e) => e.tenant === undefined || e.tenant === "t1")).toBe(true);
    expect(items.some((e) => e.type === "leader.changed")).toBe(true);
  });

  it("serves /dashboard as one self-contained page whose policy admits exactly its inline code", async () => {
    const h = await start();
    const page = await call(h.origin, "GET", "/dashboard");
    expect(page.status).toBe(200);
    const html = page.body as string;
    // No external assets: nothing loaded by URL (the empty icon is a data: URL).
    expect(html).not.toMatch(/<(script|link|img|iframe)[^>]+(src|href)="(?!data:)/i);
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1] ?? "");
    const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1] ?? "");
    expect(scripts).toHaveLength(1);
    expect(styles).toHaveLength(1);
    expect(csp).toContain(`script-src 'sha256-${await sha256(scripts[0] ?? "")}'`);
    expect(csp).toContain(`style-src 'sha256-${await sha256(styles[0] ?? "")}'`);
    // The script parses (the browser test runs it).
    expect(() => new Function(scripts[0] ?? "")).not.toThrow();
    // Never markup built from data.
    expect(scripts[0]).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  });

  it("is served by the roles that read: observer yes, worker no", async () => {
    const observer = await start({ app: { roles: ["observer"] } });
    expect((await call(observer.origin, "GET", "/metrics")).status).toBe(200);
    expect((await call(observer.origin, "GET", "/dashboard")).status).toBe(200);
    const worker = await start({ app: { roles: ["worker"] } });
    for (const path of ["/metrics", "/v1/stats", "/v1/events", "/dashboard"]) {
      expectProblem(await call(worker.origin, "GET", path), 404);
    }
  });

  it("logs JSON lines that carry the request id, from the route down to the handler", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = jsonLogger({
      level: "debug",
      sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
    });
    t.handlers.chatty = {
      run: (_input, ctx) => {
        ctx.logger.info("hello from the handler");
        throw new Error("always fails");
      },
    };
    const h = await start({ engine: { logger } });
    await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "chatty-once", handler: "chatty", schedule: "1s", maxRuns: 1, retries: 0 },
    });
    const tick = await call(h.origin, "POST", "/v1/tick", {
      headers: { "x-request-id": "tick-request-1" },
    });
    expect(tick.body.dispatched).toBe(1);
    // The occurrence runs at its fire time (within a second); its record exists from then.
    await until(() => lines.some((l) => l.msg === "job attempt failed"), 10_000);
    const run = (await call(h.origin, "GET", "/v1/jobs?scheduleId=chatty-once")).body.items[0];

    const leader = lines.find((l) => l.msg === "leader changed");
    expect(leader).toMatchObject({
      level: "info",
      requestId: "tick-request-1",
      holder: h.engine.options.instanceId,
      previous: null,
    });
    const said = lines.find((l) => l.msg === "hello from the handler");
    const failed = lines.find((l) => l.msg === "job attempt failed");
    expect(said).toMatchObject({ jobId: run?.id, handler: "chatty", attempt: 1 });
    expect(typeof said?.requestId).toBe("string");
    expect(failed?.requestId).toBe(said?.requestId);
    // That id is the worker request's: its access line has it.
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: "request",
        level: "debug",
        requestId: said?.requestId,
        method: "POST",
        path: "/v1/worker",
      }),
    );
    // Every line written while serving a request carries one.
    for (const line of lines) expect(typeof line.requestId, JSON.stringify(line)).toBe("string");
  });
});

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Buffer.from(digest).toString("base64");
}
