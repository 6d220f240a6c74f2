/**
 * The app answers right wherever it is mounted — at the root, under its own `basePath`, inside an
 * app of the user's own with `outer.route(prefix, app)` (the app is not told the prefix), both at
 * once, and under a mount point with a parameter: every `Location` it writes leads back to the
 * resource, the queue delivers to `/v1/worker` under the prefix, the dashboard is served with a
 * policy that pins its script, and the typed client works against `https://host/<prefix>`. Over a
 * real socket, with the real local queue delivering to the prefixed worker route.
 */
import { createHash } from "node:crypto";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { createTickwork } from "../../src/adapter/cloudflare/tickwork.ts";
import { startServer } from "../../src/adapter/node/start.ts";
import { createClient } from "../../src/client/index.ts";
import { silentLogger } from "../../src/engine/index.ts";
import type { AppOptions } from "../../src/http/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { QStashTransport } from "../../src/transport/qstash/index.ts";
import {
  call,
  expectProblem,
  type Harness,
  type HarnessOptions,
  startHarness,
  testHandlers,
} from "./harness.ts";

/** One way of serving the app, and the path prefix its routes end up under. */
interface Mounting {
  name: string;
  prefix: string;
  app?: Omit<AppOptions, "engine">;
  wrap?: HarnessOptions["wrap"];
}

const mountings: Mounting[] = [
  { name: "at the root", prefix: "" },
  {
    name: "under the basePath option",
    prefix: "/api/tickwork",
    app: { basePath: "/api/tickwork" },
  },
  {
    name: 'under outer.route("/api/tickwork", app)',
    prefix: "/api/tickwork",
    wrap: (app) => new Hono().route("/api/tickwork", app),
  },
  {
    name: 'with basePath "/tickwork" under outer.basePath("/api").route("/v2", app)',
    prefix: "/api/v2/tickwork",
    app: { basePath: "/tickwork" },
    wrap: (app) => new Hono().basePath("/api").route("/v2", app),
  },
  {
    // The parameter's value has a space and a non-ASCII letter: Hono hands them over decoded.
    name: 'under outer.route("/orgs/:org/tickwork", app)',
    prefix: "/orgs/ac%20m%C3%A9/tickwork",
    wrap: (app) => new Hono().route("/orgs/:org/tickwork", app),
  },
  {
    name: 'under new Hono({ strict: false }).route("/api/tickwork/", app)',
    prefix: "/api/tickwork",
    wrap: (app) => new Hono({ strict: false }).route("/api/tickwork/", app),
  },
];

describe.each(mountings)("the app $name", (mounting) => {
  const { prefix } = mounting;
  let h: Harness;
  let handlers: ReturnType<typeof testHandlers>;

  async function start(): Promise<string> {
    handlers = testHandlers();
    h = await startHarness({
      store: new MemoryStore(),
      handlers: handlers.handlers,
      basePath: prefix,
      ...(mounting.app ? { app: mounting.app } : {}),
      ...(mounting.wrap ? { wrap: mounting.wrap } : {}),
    });
    return `${h.origin}${prefix}`;
  }

  afterEach(async () => {
    await h?.close();
  });

  it("POST /v1/jobs answers a Location under the prefix; GET there returns the job", async () => {
    const base = await start();
    const submitted = await call(base, "POST", "/v1/jobs", { json: { handler: "echo", input: 7 } });
    expect(submitted.status).toBe(202);
    const location = submitted.headers.get("location");
    expect(location).toBe(`${prefix}/v1/jobs/${submitted.body.id}`);
    // The queue delivered to the prefixed /v1/worker (the long-poll ends once the job is final).
    const read = await call(h.origin, "GET", `${location}?wait=10s`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: submitted.body.id, status: "succeeded", result: 7 });
    // A replayed submit points at the same job.
    const key = { handler: "echo", input: 1, idempotencyKey: "k-1" };
    const first = await call(base, "POST", "/v1/jobs", { json: key });
    const again = await call(base, "POST", "/v1/jobs", { json: key });
    expect(again.status).toBe(200);
    expect(again.headers.get("location")).toBe(first.headers.get("location"));
    expect((await call(h.origin, "GET", again.headers.get("location")!)).body.id).toBe(
      first.body.id,
    );
  });

  it("POST /v1/schedules answers a Location under the prefix; GET there returns it", async () => {
    const base = await start();
    const created = await call(base, "POST", "/v1/schedules", {
      json: { id: "nightly.report", handler: "echo", schedule: "0 3 * * *" },
    });
    expect(created.status).toBe(201);
    const location = created.headers.get("location");
    expect(location).toBe(`${prefix}/v1/schedules/nightly.report`);
    const read = await call(h.origin, "GET", location!);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: "nightly.report", status: "active" });
    const runs = await call(h.origin, "GET", `${location}/runs`);
    expect(runs.body).toEqual({ items: [] });
  });

  it("answers errors under the prefix as problems: 404, 405, 400", async () => {
    const base = await start();
    expectProblem(await call(base, "GET", "/v1/jobs/j_unknown"), 404, /j_unknown/);
    expectProblem(await call(base, "PUT", "/v1/jobs"), 405);
    expectProblem(await call(base, "GET", "/v1/jobs?limit=nope"), 400);
  });

  it("serves the dashboard with a policy that pins its inline script", async () => {
    const base = await start();
    const res = await fetch(`${base}/dashboard`);
    expect(res.status).toBe(200);
    const html = await res.text();
    const script = /<script>([\s\S]*)<\/script>/.exec(html)?.[1];
    expect(script).toBeDefined();
    const hash = createHash("sha256").update(script!).digest("base64");
    expect(res.headers.get("content-security-policy")).toContain(`script-src 'sha256-${hash}'`);
  });

  it("the client works against the prefix: every call, and the Location it is answered", async () => {
    const base = await start();
    const seen: { method: string; url: URL; response: Response }[] = [];
    const client = createClient({
      url: `${base}/`,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        seen.push({
          method: init?.method ?? "GET",
          url: new URL(input instanceof Request ? input.url : String(input)),
          response: response.clone(),
        });
        return response;
      },
    });

    // Jobs: submit, read, wait for, list, cancel.
    const job = await client.jobs.submit({ handler: "echo", input: { n: 1 } });
    expect(await job.result({ timeout: "10s" })).toEqual({ n: 1 });
    expect((await client.jobs.get(job.id)).status).toBe("succeeded");
    expect((await client.jobs.list({ limit: 10 }).toArray()).map((j) => j.id)).toContain(job.id);
    const later = await client.jobs.submit({ handler: "echo", input: 2, delay: "1h" });
    expect(await later.cancel()).toEqual({ id: later.id, status: "cancelled" });
    // The Location of the submit, resolved against the URL the client called, is the job.
    const submit = seen.find((s) => s.method === "POST" && s.url.pathname.endsWith("/v1/jobs"))!;
    const location = new URL(submit.response.headers.get("location")!, submit.url);
    const there = await fetch(location);
    expect(((await there.json()) as { id: string }).id).toBe(job.id);

    // Schedules: create, read, change, pause, resume, runs, list, delete.
    const schedule = await client.schedules.create({
      id: "every-5m",
      handler: "echo",
      schedule: "5m",
    });
    expect(schedule.created).toBe(true);
    expect((await schedule.get()).id).toBe("every-5m");
    expect((await schedule.update({ priority: 3 })).priority).toBe(3);
    expect((await schedule.pause()).status).toBe("paused");
    expect((await schedule.resume()).status).toBe("active");
    expect((await schedule.runs().first()).items).toEqual([]);
    expect((await client.schedules.list().toArray()).map((s) => s.id)).toEqual(["every-5m"]);
    expect((await client.schedules.get("every-5m")).handler).toBe("echo");
    expect(await schedule.delete()).toEqual({ id: "every-5m", status: "deleted" });

    // Dead letters: list, retry, delete; and the tick.
    const doomed = await client.jobs.submit({ handler: "gated", input: null, retries: 0 });
    const other = await client.jobs.submit({ handler: "gated", input: null, retries: 0 });
    await expect(doomed.result({ timeout: "10s" })).rejects.toThrow(/gate is closed/);
    await expect(other.result({ timeout: "10s" })).rejects.toThrow(/gate is closed/);
    expect((await client.dlq.list().toArray()).map((j) => j.id).sort()).toEqual(
      [doomed.id, other.id].sort(),
    );
    handlers.gate.open = true;
    expect(await (await client.dlq.retry(doomed.id)).result({ timeout: "10s" })).toBe("passed");
    expect(await client.dlq.delete(other.id)).toEqual({ id: other.id, status: "deleted" });
    expect(await client.tick()).toMatchObject({ leader: true });

    // Every call went under the prefix, and none was refused.
    expect(seen.length).toBeGreaterThan(20);
    for (const { method, url, response } of seen) {
      expect(url.pathname, `${method} ${url.pathname}`).toMatch(
        new RegExp(`^${prefix.replaceAll("/", "\\/")}\\/v1\\/`),
      );
      expect(response.ok, `${method} ${url.pathname} → ${response.status}`).toBe(true);
    }
  });
});

describe("the adapters deliver under a publicUrl with a path", () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  it("createTickwork (Workers): QStash delivers to <publicUrl>/v1/worker", () => {
    const tickwork = createTickwork({
      handlers: {},
      // Never called: building the deployment does no I/O.
      redis: { eval: () => Promise.reject(new Error("unused")), evalsha: () => Promise.reject() },
      qstash: { token: "t", currentSigningKey: "c", nextSigningKey: "n" },
      publicUrl: "https://x.com/api/tickwork/",
      apiKeys: ["k"],
    });
    expect((tickwork.engine.transport as QStashTransport).workerUrl).toBe(
      "https://x.com/api/tickwork/v1/worker",
    );
  });

  it("startServer (Node): the local queue delivers to <publicUrl>/v1/worker", async () => {
    const server = await startServer({
      handlers: {},
      dev: true,
      port: 0,
      hostname: "127.0.0.1",
      signals: false,
      print: false,
      publicUrl: "https://x.com/api/tickwork",
      signingKey: "shared-signing-key",
      engine: { logger: silentLogger },
    });
    close = () => server.close();
    expect(server.banner).toContain("delivers to https://x.com/api/tickwork/v1/worker");
  });
});

describe("an outer app's own routes next to the mounted app", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
  });

  it("a route the outer app adds after the mount, under the same prefix, still answers", async () => {
    h = await startHarness({
      store: new MemoryStore(),
      handlers: testHandlers().handlers,
      basePath: "/api/tickwork",
      wrap: (app) =>
        new Hono()
          .route("/api/tickwork", app)
          .get("/api/tickwork/custom", (c) => c.text("mine"))
          .get("/api/tickwork/v1/jobs/:id/extra", (c) => c.text("extra")),
    });
    const base = `${h.origin}/api/tickwork`;
    expect(await (await fetch(`${base}/custom`)).text()).toBe("mine");
    expect(await (await fetch(`${base}/v1/jobs/j_1/extra`)).text()).toBe("extra");
    // The mounted app's own 405 still holds, and an unknown path is the outer app's 404.
    expectProblem(await call(base, "PUT", "/v1/jobs"), 405);
    expect((await fetch(`${base}/nothing-here`)).status).toBe(404);
  });
});
