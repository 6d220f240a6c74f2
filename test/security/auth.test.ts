/**
 * Who may call what, over a real socket (acceptance 1, first half): no key → 401 with
 * `WWW-Authenticate`; a key without the route's scope → 403; every API route checked against the
 * route × scope table of SECURITY.md with one key per scope; a tenant's key never reaches
 * another tenant's jobs or schedules; `TICKWORK_API_KEY`-style plain keys still work; CORS is off
 * unless configured. Every refusal is problem+json and changes nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Scope } from "../../src/config/scopes.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { signDelivery } from "../../src/transport/signing.ts";
import {
  expectProblem,
  type Harness,
  SIGNING_KEY,
  startHarness,
  testHandlers,
} from "../http/harness.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import {
  bearer,
  call,
  securedApp,
  storeState,
  type TestTenant,
  TICK_SECRET,
  tenant,
} from "./support.ts";

/** Every API route, the scope it needs, and a request that would succeed with that scope. */
const ROUTES: { method: string; path: string; scope: Scope; json?: unknown }[] = [
  { method: "GET", path: "/v1/jobs", scope: "read" },
  { method: "GET", path: "/v1/jobs/{job}", scope: "read" },
  { method: "POST", path: "/v1/jobs", scope: "jobs:write", json: { handler: "echo" } },
  { method: "DELETE", path: "/v1/jobs/{job}", scope: "jobs:write" },
  { method: "GET", path: "/v1/schedules", scope: "read" },
  { method: "GET", path: "/v1/schedules/s1", scope: "read" },
  { method: "GET", path: "/v1/schedules/s1/runs", scope: "read" },
  {
    method: "POST",
    path: "/v1/schedules",
    scope: "schedules:write",
    json: { id: "s2", handler: "echo", schedule: "1h" },
  },
  { method: "PATCH", path: "/v1/schedules/s1", scope: "schedules:write", json: { priority: 2 } },
  { method: "POST", path: "/v1/schedules/s1/pause", scope: "schedules:write" },
  { method: "POST", path: "/v1/schedules/s1/resume", scope: "schedules:write" },
  { method: "DELETE", path: "/v1/schedules/s1", scope: "schedules:write" },
  { method: "GET", path: "/v1/dlq", scope: "read" },
  { method: "POST", path: "/v1/dlq/{job}/retry", scope: "admin" },
  { method: "DELETE", path: "/v1/dlq/{job}", scope: "admin" },
];

const SCOPES: Scope[] = ["read", "jobs:write", "schedules:write", "admin"];

describe.each(storeFactories)("auth on $name", (factory) => {
  let handle: StoreHandle;
  let h: Awaited<ReturnType<typeof securedApp>>;
  let acme: TestTenant;
  let globex: TestTenant;
  /** A queued job and a schedule of acme's, made before each test. */
  let jobId: string;

  beforeEach(async () => {
    handle = await factory.make();
    acme = await tenant("acme", {
      read: ["read"],
      "jobs:write": ["jobs:write"],
      "schedules:write": ["schedules:write"],
      admin: ["admin"],
      client: ["jobs:write", "read"],
    });
    globex = await tenant("globex", { admin: ["admin"] });
    h = await securedApp(handle.store, [acme, globex]);
    const submitted = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", delay: "1h" },
      headers: bearer(acme.keys.admin!),
    });
    expect(submitted.status).toBe(202);
    jobId = submitted.body.id;
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "s1", handler: "echo", schedule: "1h" },
      headers: bearer(acme.keys.admin!),
    });
    expect(created.status).toBe(201);
  });

  afterEach(async () => {
    await h.close();
    await handle.cleanup();
  });

  it("401 without a key or with an unknown one, with WWW-Authenticate; nothing changes", async () => {
    const before = await storeState(h.store);
    for (const route of ROUTES) {
      const path = route.path.replace("{job}", jobId);
      const init = route.json === undefined ? {} : { json: route.json };
      const none = await call(h.origin, route.method, path, init);
      expectProblem(none, 401, /missing API key/);
      expect(none.headers.get("www-authenticate")).toBe('Bearer realm="tickwork"');
      const attempts: Record<string, string>[] = [
        { authorization: "Bearer tw_not-a-key" },
        { authorization: `Basic ${btoa("user:pass")}` },
        { authorization: "Bearer" },
        { "x-api-key": "tw_not-a-key" },
        // A key that is a prefix of a real key, or a real key with a byte more, is no key.
        { authorization: `Bearer ${acme.keys.admin!.key.slice(0, -1)}` },
        { authorization: `Bearer ${acme.keys.admin!.key}x` },
      ];
      for (const headers of attempts) {
        const bad = await call(h.origin, route.method, path, { ...init, headers });
        expectProblem(bad, 401);
        expect(bad.headers.get("www-authenticate")).toMatch(/^Bearer realm="tickwork"/);
      }
    }
    expect(await storeState(h.store)).toBe(before);
  });

  it("every route against one key per scope: allowed exactly when the table says so", async () => {
    for (const route of ROUTES) {
      for (const scope of SCOPES) {
        const path = route.path.replace("{job}", jobId);
        const before = await storeState(h.store);
        const answer = await call(h.origin, route.method, path, {
          ...(route.json === undefined ? {} : { json: route.json }),
          headers: bearer(acme.keys[scope]!),
        });
        const allowed = scope === route.scope || scope === "admin";
        if (allowed) {
          expect([401, 403], `${scope} on ${route.method} ${route.path}`).not.toContain(
            answer.status,
          );
        } else {
          expectProblem(answer, 403, new RegExp(`"${route.scope}" scope`));
          expect(answer.headers.get("www-authenticate")).toContain('error="insufficient_scope"');
          expect(await storeState(h.store)).toBe(before);
        }
      }
    }
  });

  it("a schedules:write key's writes answer without the schedule's input (no read through a no-op write)", async () => {
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "billing", handler: "echo", schedule: "1h", input: { apiToken: "SECRET" } },
      headers: bearer(acme.keys.admin!),
    });
    expect(created.status).toBe(201);
    const writeOnly = bearer(acme.keys["schedules:write"]!);
    for (const [method, path, json] of [
      ["PATCH", "/v1/schedules/billing", {}],
      ["PATCH", "/v1/schedules/billing", { priority: 6 }],
      ["POST", "/v1/schedules/billing/pause", undefined],
      ["POST", "/v1/schedules/billing/pause", undefined],
      ["POST", "/v1/schedules/billing/resume", undefined],
    ] as const) {
      const answer = await call(h.origin, method, path, {
        ...(json === undefined ? {} : { json }),
        headers: writeOnly,
      });
      expect(answer.status, `${method} ${path}`).toBe(200);
      expect(answer.body.id).toBe("billing");
      expect(JSON.stringify(answer.body), `${method} ${path}`).not.toContain("SECRET");
    }
    // A key that may read gets the whole schedule, input included.
    const admin = await call(h.origin, "POST", "/v1/schedules/billing/pause", {
      headers: bearer(acme.keys.admin!),
    });
    expect(admin.body.input).toEqual({ apiToken: "SECRET" });
  });

  it("a jobs:write key's cancel of a running job answers whether it took, not the job", async () => {
    const submitted = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", input: { apiToken: "SECRET" } },
      headers: bearer(acme.keys.admin!),
    });
    expect(submitted.status).toBe(202);
    const spec = h.queue.pending.find((p) => p.message.job.id === submitted.body.id)!.message.job;
    // A worker began it: the cancel asks it to stop (202) and answers the job as it is.
    expect((await handle.store.beginRun(spec, 60_000)).kind).toBe("run");
    for (let i = 0; i < 2; i++) {
      const cancel = await call(h.origin, "DELETE", `/v1/jobs/${spec.id}`, {
        headers: bearer(acme.keys["jobs:write"]!),
      });
      expect(cancel.status).toBe(202);
      // Not its progress, last error, node or tags: what a key that may read sees.
      expect(cancel.body).toEqual({ id: spec.id, status: "running", cancelRequested: true });
    }
    const admin = await call(h.origin, "DELETE", `/v1/jobs/${spec.id}`, {
      headers: bearer(acme.keys.admin!),
    });
    expect(admin.body.input).toEqual({ apiToken: "SECRET" });

    // A finished job: a 409 either way, the status it ended with only to a key that may read.
    await handle.store.finishRun(spec.id, 1, {
      ok: false,
      error: { name: "Error", message: "boom" },
      final: true,
    });
    const writer = await call(h.origin, "DELETE", `/v1/jobs/${spec.id}`, {
      headers: bearer(acme.keys["jobs:write"]!),
    });
    expectProblem(writer, 409);
    expect(writer.body.detail).toBe(
      `job "${spec.id}" cannot be cancelled: only queued, waiting and running jobs can be`,
    );
    const reader = await call(h.origin, "DELETE", `/v1/jobs/${spec.id}`, {
      headers: bearer(acme.keys.admin!),
    });
    expectProblem(reader, 409);
    // Its cancel was asked for while it ran: its failure ended it cancelled.
    expect(reader.body.detail).toMatch(/ is cancelled;/);
  });

  /** Runs the queued job `id`'s first attempt, which fails for good (dead). */
  async function failForGood(id: string): Promise<void> {
    const spec = h.queue.pending.find((p) => p.message.job.id === id)!.message.job;
    expect((await handle.store.beginRun(spec, 60_000)).kind).toBe("run");
    await handle.store.finishRun(id, 1, {
      ok: false,
      error: { name: "Error", message: "boom" },
      final: true,
    });
  }

  it("a jobs:write key's replay of an idempotency key answers the job, not how it ended", async () => {
    const writer = bearer(acme.keys["jobs:write"]!);
    const reader = bearer(acme.keys.client!);
    // Another key of the tenant submitted them; each then ran and failed for good.
    const single = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", idempotencyKey: "constructor" },
      headers: bearer(acme.keys.admin!),
    });
    const flow = {
      idempotencyKey: "nightly",
      children: [{ handler: "echo" }],
      parent: { handler: "echo" },
    };
    const flowed = await call(h.origin, "POST", "/v1/flows", {
      json: flow,
      headers: bearer(acme.keys.admin!),
    });
    expect([single.status, flowed.status]).toEqual([202, 202]);
    const child = flowed.body.children[0].id as string;
    for (const id of [single.body.id as string, child]) await failForGood(id);
    const outcome = ["status", "attempts"];
    const before = await storeState(h.store);
    const replays = async (headers: Record<string, string>) => {
      const again = await call(h.origin, "POST", "/v1/jobs", {
        json: { handler: "echo", idempotencyKey: "constructor" },
        headers,
      });
      expect(again.status).toBe(200);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      const batch = await call(h.origin, "POST", "/v1/jobs/batch", {
        json: { jobs: [{ handler: "echo", idempotencyKey: "constructor" }] },
        headers,
      });
      expect(batch.body.items[0].outcome).toBe("replayed");
      const flowAgain = await call(h.origin, "POST", "/v1/flows", { json: flow, headers });
      expect(flowAgain.status).toBe(200);
      return [again.body, batch.body.items[0].job, flowAgain.body.children[0]];
    };
    for (const job of await replays(writer)) {
      expect(job.id).toMatch(/^j_/);
      expect(Object.keys(job)).not.toContain("status");
      expect(Object.keys(job)).not.toContain("attempts");
      expect(Object.keys(job)).toEqual(
        expect.arrayContaining(["id", "handler", "runAt", "priority", "createdAt"]),
      );
    }
    // A key that may read gets the job as it is now.
    for (const job of await replays(reader)) {
      expect(Object.keys(job)).toEqual(expect.arrayContaining(outcome));
    }
    const [replayed, , flowChild] = await replays(reader);
    expect([replayed.status, flowChild.status]).toEqual(["dead", "dead"]);
    expect(flowChild.id).toBe(child);
    // Replays change nothing.
    expect(await storeState(h.store)).toBe(before);
  });

  it("a jobs:write key's submit naming dependencies, or part of a flow stored before, answers no outcome", async () => {
    const writer = bearer(acme.keys["jobs:write"]!);
    const reader = bearer(acme.keys.client!);
    // Another key of the tenant submitted it; it ran and failed for good.
    const dead = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", idempotencyKey: "order-42" },
      headers: bearer(acme.keys.admin!),
    });
    const deadId = dead.body.id as string;
    await failForGood(deadId);
    const submits = async (headers: Record<string, string>) => {
      const single = await call(h.origin, "POST", "/v1/jobs", {
        json: { handler: "echo", after: [deadId] },
        headers,
      });
      const batch = await call(h.origin, "POST", "/v1/jobs/batch", {
        json: { jobs: [{ handler: "echo", after: [deadId] }] },
        headers,
      });
      // A new flow whose first child names the dead job's idempotency key: that child replays.
      const flow = await call(h.origin, "POST", "/v1/flows", {
        json: {
          children: [{ handler: "echo", idempotencyKey: "order-42" }, { handler: "echo" }],
          parent: { handler: "echo" },
        },
        headers,
      });
      expect([single.status, batch.body.items[0].outcome, flow.status]).toEqual([
        202,
        "accepted",
        202,
      ]);
      return {
        single: single.body,
        batched: batch.body.items[0].job,
        replayedChild: flow.body.children[0],
        parent: flow.body.parent,
        newChild: flow.body.children[1],
      };
    };
    const asWriter = await submits(writer);
    for (const job of [
      asWriter.single,
      asWriter.batched,
      asWriter.replayedChild,
      asWriter.parent,
    ]) {
      expect(job.id).toMatch(/^j_/);
      expect(Object.keys(job)).not.toContain("status");
      expect(Object.keys(job)).not.toContain("attempts");
    }
    expect(asWriter.replayedChild.id).toBe(deadId);
    // A job new to this write and waiting for nothing answers what the write did, to every key.
    expect(asWriter.newChild.status).toBe("queued");
    const asReader = await submits(reader);
    expect([
      asReader.single.status,
      asReader.batched.status,
      asReader.replayedChild.status,
      asReader.parent.status,
    ]).toEqual(["cancelled", "cancelled", "dead", "cancelled"]);
  });

  it("X-Api-Key works like the bearer token; a client key submits and polls", async () => {
    const submitted = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", delay: "1h" },
      headers: { "x-api-key": acme.keys.client!.key },
    });
    expect(submitted.status).toBe(202);
    const read = await call(h.origin, "GET", `/v1/jobs/${submitted.body.id}`, {
      headers: bearer(acme.keys.client!),
    });
    expect(read.status).toBe(200);
    expect((await h.store.getJob(submitted.body.id))?.tenant).toBe("acme");
  });

  it("a tenant never sees or changes another tenant's jobs, schedules or dead letters", async () => {
    const other = bearer(globex.keys.admin!);
    const before = await storeState(h.store);
    for (const [method, path, json] of [
      ["GET", `/v1/jobs/${jobId}`],
      ["GET", `/v1/jobs/${jobId}?wait=5s`],
      ["DELETE", `/v1/jobs/${jobId}`],
      ["GET", "/v1/schedules/s1"],
      ["GET", "/v1/schedules/s1/runs"],
      ["PATCH", "/v1/schedules/s1", { priority: 1 }],
      ["POST", "/v1/schedules/s1/pause"],
      ["POST", "/v1/schedules/s1/resume"],
      ["DELETE", "/v1/schedules/s1"],
      ["POST", `/v1/dlq/${jobId}/retry`],
      ["DELETE", `/v1/dlq/${jobId}`],
    ] as const) {
      const answer = await call(h.origin, method, path, {
        headers: other,
        ...(json ? { json } : {}),
      });
      expectProblem(answer, 404);
    }
    // Listings hold only the tenant's own records.
    for (const path of ["/v1/jobs", "/v1/schedules", "/v1/dlq"]) {
      const list = await call(h.origin, "GET", path, { headers: other });
      expect(list.status).toBe(200);
      expect(list.body.items).toEqual([]);
      const own = await call(h.origin, "GET", path, { headers: bearer(acme.keys.read!) });
      for (const item of own.body.items) expect(item.id).not.toBe(undefined);
    }
    const ownJobs = await call(h.origin, "GET", "/v1/jobs", { headers: bearer(acme.keys.read!) });
    expect(ownJobs.body.items.map((j: { id: string }) => j.id)).toEqual([jobId]);
    expect(await storeState(h.store)).toBe(before);
    // Each tenant has its own schedule ids: the other tenant's "s1" is a schedule of its own,
    // created without learning that acme has one, and neither sees the other's.
    const twin = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "s1", handler: "echo", schedule: "1m" },
      headers: other,
    });
    expect(twin.status).toBe(201);
    const mine = await call(h.origin, "GET", "/v1/schedules/s1", {
      headers: bearer(acme.keys.read!),
    });
    const theirs = await call(h.origin, "GET", "/v1/schedules/s1", { headers: other });
    expect([mine.body.schedule, theirs.body.schedule]).toEqual(["1h", "1m"]);
  });
});

describe("deliveries: /v1/worker and /v1/dead need the queue's signature", () => {
  const open: Harness[] = [];
  afterEach(async () => {
    for (const h of open.splice(0)) await h.close();
  });

  it("unsigned, wrongly signed, re-targeted or tampered deliveries are 401 and run nothing", async () => {
    const { handlers, runs } = testHandlers();
    const store = new MemoryStore();
    const h = await startHarness({
      store,
      handlers,
      app: { dev: false, tickSecret: TICK_SECRET, apiKeys: ["k"] },
    });
    open.push(h);
    // A real job, so a delivery that got through would have something to run.
    const submitted = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", input: "x", delay: "1h" },
      headers: bearer("k"),
    });
    const job = await store.getJob(submitted.body.id);
    const body = JSON.stringify(job);
    const before = await storeState(store);
    for (const route of ["/v1/worker", "/v1/dead"]) {
      const url = `${h.origin}${route}`;
      const attempts: [string, Record<string, string>][] = [
        [body, {}],
        [body, { "upstash-signature": "not.a.jwt" }],
        [body, { "upstash-signature": await signDelivery({ signingKey: "other", url, body }) }],
        [
          body,
          {
            "upstash-signature": await signDelivery({
              signingKey: SIGNING_KEY,
              url: `${h.origin}/elsewhere`,
              body,
            }),
          },
        ],
        [
          body.replace('"x"', '"y"'),
          { "upstash-signature": await signDelivery({ signingKey: SIGNING_KEY, url, body }) },
        ],
      ];
      for (const [sent, headers] of attempts) {
        const answer = await call(h.origin, "POST", route, {
          body: sent,
          headers: { ...headers, "content-type": "application/json" },
        });
        expect(answer.status, `${route} ${JSON.stringify(headers)}`).toBe(401);
      }
    }
    expect(runs).toEqual([]);
    expect(await storeState(store)).toBe(before);
    // The API key is not a delivery credential either.
    const withKey = await call(h.origin, "POST", "/v1/worker", { body, headers: bearer("k") });
    expect(withKey.status).toBe(401);
  });
});

describe("plain API keys (TICKWORK_API_KEY) and CORS", () => {
  const open: Harness[] = [];
  afterEach(async () => {
    for (const h of open.splice(0)) await h.close();
  });

  it("a plain key is an admin key of the tenant default; others are 401", async () => {
    const h = await startHarness({
      store: new MemoryStore(),
      handlers: testHandlers().handlers,
      app: { dev: false, tickSecret: TICK_SECRET, apiKeys: ["k-one", " k-two "] },
    });
    open.push(h);
    for (const key of ["k-one", "k-two"]) {
      const answer = await call(h.origin, "POST", "/v1/jobs", {
        json: { handler: "echo", delay: "1h" },
        headers: bearer(key),
      });
      expect(answer.status).toBe(202);
      expect((await h.store.getJob(answer.body.id))?.tenant).toBe("default");
      expect((await call(h.origin, "GET", "/v1/dlq", { headers: bearer(key) })).status).toBe(200);
    }
    expectProblem(await call(h.origin, "GET", "/v1/jobs", { headers: bearer("k-three") }), 401);
    expectProblem(await call(h.origin, "GET", "/v1/jobs", { headers: bearer("k-on") }), 401);
  });

  it("tenants and plain keys together: the plain key acts as tenant default with its manifest", async () => {
    const defaults = await tenant("default", { reader: ["read"] }, { submit: ["echo"] });
    const h = await startHarness({
      store: new MemoryStore(),
      handlers: testHandlers().handlers,
      app: { dev: false, tickSecret: TICK_SECRET, tenants: [defaults.config], apiKeys: ["plain"] },
    });
    open.push(h);
    const echo = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", delay: "1h" },
      headers: bearer("plain"),
    });
    expect(echo.status).toBe(202);
    const flaky = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "flaky", input: { times: 0 } },
      headers: bearer("plain"),
    });
    expectProblem(flaky, 403, /may not submit jobs for handler "flaky"/);
    const list = await call(h.origin, "GET", "/v1/jobs", {
      headers: bearer(defaults.keys.reader!),
    });
    expect(list.body.items.map((j: { id: string }) => j.id)).toEqual([echo.body.id]);
  });

  it("CORS is off unless configured; configured, it answers preflights for the listed origins", async () => {
    const acme = await tenant("acme", { client: ["jobs:write", "read"] });
    const off = await securedApp(new MemoryStore(), [acme]);
    open.push(off);
    const preflight = {
      origin: "https://app.example.com",
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type",
    };
    const refused = await fetch(`${off.origin}/v1/jobs`, { method: "OPTIONS", headers: preflight });
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
    const plain = await call(off.origin, "GET", "/v1/jobs", {
      headers: { ...bearer(acme.keys.client!), origin: "https://app.example.com" },
    });
    expect(plain.headers.get("access-control-allow-origin")).toBeNull();

    const on = await securedApp(new MemoryStore(), [acme], {
      app: { cors: { origins: ["https://app.example.com"] } },
    });
    open.push(on);
    const allowed = await fetch(`${on.origin}/v1/jobs`, { method: "OPTIONS", headers: preflight });
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(allowed.headers.get("access-control-allow-headers")?.toLowerCase()).toContain(
      "authorization",
    );
    const other = await fetch(`${on.origin}/v1/jobs`, {
      method: "OPTIONS",
      headers: { ...preflight, origin: "https://evil.example" },
    });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    const read = await call(on.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", delay: "1h" },
      headers: { ...bearer(acme.keys.client!), origin: "https://app.example.com" },
    });
    expect(read.status).toBe(202);
    expect(read.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(read.headers.get("access-control-expose-headers")).toContain("RateLimit-Remaining");
  });
});
