/**
 * The Workers entry end to end in real workerd: `functions/cloudflare.ts`, bundled and run by
 * wrangler (`unstable_startWorker`, the same bundling and config as `wrangler deploy`), with its
 * Redis behind the Upstash-compatible REST bridge (real Redis, a fresh key prefix) and QStash
 * played by the double — both on loopback, which workerd may reach. The Cron Trigger is fired the
 * way `wrangler dev` fires it (`/cdn-cgi/handler/scheduled`); QStash deliveries come back over
 * HTTP to the Worker's `/v1/worker`, signed with the keys the Worker was given.
 */
import { randomBytes } from "node:crypto";
import type { Redis as IORedis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { unstable_startWorker } from "wrangler";
import type { handlers } from "../../functions/handlers.ts";
import { createClient } from "../../src/client/index.ts";
import type { RedisStore } from "../../src/store/redis/index.ts";
import type { RedisRestServer } from "../../src/tools/redis-rest/index.ts";
import type { QStashDouble } from "../support/qstash-double/index.ts";
import { freePort, secret, startQStashWithSecrets, startRedisBehindRest, text } from "./harness.ts";

type Worker = Awaited<ReturnType<typeof unstable_startWorker>>;

const API_KEY = secret("key");
const CRON_SECRET = secret("cron");
const REST_TOKEN = secret("rest");
const PREFIX = `cf${randomBytes(4).toString("hex")}`;
/** Generous: workerd, the bridge and the double share two cores with other test files. */
const WAIT = { timeout: 20_000, interval: 100 };
/** `retention.jobMs` from `TICKWORK_CONFIG` (about 1.4 days; the default is 7): a finished job's
 * key must expire after this, which shows the Worker's store read the configuration. */
const JOB_MS = 123_456_789;

let redis: IORedis;
let bridge: RedisRestServer;
let qstash: QStashDouble;
let worker: Worker | undefined;
let origin: string;
/** The store as the Worker sees it, read over TCP instead of REST. */
let store: RedisStore;

beforeAll(async () => {
  ({ redis, store, bridge } = await startRedisBehindRest(PREFIX, REST_TOKEN));
  // Non-default credentials, so a pass proves the Worker verifies with the keys it was given.
  qstash = await startQStashWithSecrets();
  // The Worker must know its own URL (TICKWORK_PUBLIC_URL) before it starts.
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  worker = await unstable_startWorker({
    config: "wrangler.toml",
    envFiles: [], // never a developer's .dev.vars
    sendMetrics: false,
    bindings: {
      UPSTASH_REDIS_REST_URL: text(bridge.url),
      UPSTASH_REDIS_REST_TOKEN: text(REST_TOKEN),
      QSTASH_TOKEN: text(qstash.token),
      QSTASH_URL: text(qstash.url),
      QSTASH_CURRENT_SIGNING_KEY: text(qstash.currentSigningKey),
      QSTASH_NEXT_SIGNING_KEY: text(qstash.nextSigningKey),
      TICKWORK_PUBLIC_URL: text(origin),
      TICKWORK_API_KEY: text(`other-key,${API_KEY}`),
      CRON_SECRET: text(CRON_SECRET),
      TICKWORK_PREFIX: text(PREFIX),
      TICKWORK_CONFIG: text(JSON.stringify({ retention: { jobMs: JOB_MS } })),
    },
    dev: {
      server: { hostname: "127.0.0.1", port },
      inspector: false,
      persist: false,
      watch: false,
      logLevel: "warn",
    },
  });
  await worker.ready;
  expect(String(await worker.url)).toBe(`${origin}/`);
}, 60_000);

afterAll(async () => {
  await worker?.dispose();
  await qstash?.close();
  await bridge?.close();
  if (redis) {
    let cursor = "0";
    do {
      const [next, found] = await redis.scan(cursor, "MATCH", `{${PREFIX}}:*`, "COUNT", 1000);
      if (found.length > 0) await redis.del(...found);
      cursor = next;
    } while (cursor !== "0");
    redis.disconnect();
  }
}, 30_000);

async function api(method: string, path: string, body?: unknown, key = API_KEY) {
  const res = await fetch(`${origin}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("functions/cloudflare.ts in workerd", () => {
  it("runs a submitted job: POST /v1/jobs → QStash → signed /v1/worker → succeeded in Redis", async () => {
    const submitted = await api("POST", "/v1/jobs", {
      handler: "echo",
      input: { from: "workerd" },
    });
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;

    await vi.waitFor(async () => {
      const job = await api("GET", `/v1/jobs/${id}`);
      expect(job.body).toMatchObject({ id, status: "succeeded", result: { from: "workerd" } });
      // The double records the Worker's answer once it has it, a moment after Redis has the result.
      const delivery = qstash.deliveries.find((d) => d.body.includes(id));
      expect(delivery).toMatchObject({ kind: "message", url: `${origin}/v1/worker`, status: 200 });
      expect(delivery?.headers["upstash-signature"]).toBeTruthy();
    }, WAIT);
    expect(await store.getJob(id)).toMatchObject({ id, status: "succeeded", attempts: 1 });
    // Kept for TICKWORK_CONFIG's retention.jobMs, not the default's 7 days.
    const ttl = await redis.pttl(`{${PREFIX}}:j:${id}`);
    expect(ttl).toBeGreaterThan(JOB_MS - 120_000);
    expect(ttl).toBeLessThanOrEqual(JOB_MS);
  });

  it("streams a sleep job over SSE: queued → running → succeeded and its result (job.updates())", async () => {
    const client = createClient<typeof handlers>({ url: origin, apiKey: API_KEY });
    const job = await client.jobs.submit({ handler: "sleep", input: { ms: 200 } });
    const seen: string[] = [];
    // The Worker polls the store over REST (no blocking reads there) until the job is final.
    for await (const update of job.updates()) {
      // <ms>-<seq>.<progressAt>.<the last status sent>
      expect(update.id).toMatch(/^\d+-\d+\.\d+\.[a-z]+$/);
      if (update.type === "status") seen.push(update.status);
      if (update.type === "done") seen.push(`done:${JSON.stringify(update.job.result)}`);
    }
    expect(seen).toEqual(["queued", "running", "succeeded", 'done:{"slept":200}']);
  });

  it("fires a schedule from the Cron Trigger: scheduled() → tick → QStash → /v1/worker", async () => {
    const scheduleId = `every-second-${PREFIX}`;
    const created = await api("POST", "/v1/schedules", {
      id: scheduleId,
      handler: "echo",
      schedule: "1s",
      maxRuns: 2,
      input: { tick: "cron" },
    });
    expect(created.status).toBe(201);

    // What the platform does once a minute; the answer waits for the tick's waitUntil.
    const fired = await fetch(`${origin}/cdn-cgi/handler/scheduled?cron=*+*+*+*+*`);
    expect(fired.status).toBe(200);
    await fired.text();

    // Both occurrences went out in that one tick (the 60 s look-ahead), each with its not-before.
    const published = qstash
      .messages()
      .filter((m) => m.settings.dedupKey?.includes(`${scheduleId}@`));
    expect(published).toHaveLength(2);

    await vi.waitFor(async () => {
      const runs = await api("GET", `/v1/jobs?scheduleId=${encodeURIComponent(scheduleId)}`);
      const items = runs.body.items as { status: string; scheduleId: string; result: unknown }[];
      expect(items).toHaveLength(2);
      for (const job of items) {
        expect(job).toMatchObject({ status: "succeeded", scheduleId, result: { tick: "cron" } });
      }
    }, WAIT);

    const direct = await store.listJobs({ scheduleId, limit: 10 });
    expect(direct.items.map((job) => job.status)).toEqual(["succeeded", "succeeded"]);
    expect(await store.getSchedule(scheduleId)).toMatchObject({ status: "completed", runs: 2 });
  });

  it("marks a job dead through the failure callback on /v1/dead", async () => {
    const submitted = await api("POST", "/v1/jobs", { handler: "fail", input: null, retries: 0 });
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;

    await vi.waitFor(async () => {
      expect((await api("GET", `/v1/jobs/${id}`)).body).toMatchObject({ id, status: "dead" });
      expect(qstash.deliveries).toContainEqual(
        expect.objectContaining({
          kind: "failure-callback",
          url: `${origin}/v1/dead`,
          status: 200,
        }),
      );
    }, WAIT);
    expect(await store.getJob(id)).toMatchObject({ id, status: "dead" });
  });

  it("serves the dashboard page and the metrics from the Worker", async () => {
    const page = await fetch(`${origin}/dashboard`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("content-security-policy")).toMatch(/script-src 'sha256-/);
    expect(await page.text()).toContain("<title>tickwork dashboard</title>");

    expect((await fetch(`${origin}/metrics`)).status).toBe(401);
    const metrics = await fetch(`${origin}/metrics`, {
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(await metrics.text()).toMatch(/^tickwork_jobs_submitted_total \d+$/m);
  });

  it("guards /v1/tick with CRON_SECRET, the API with TICKWORK_API_KEY, /v1/worker with signatures", async () => {
    const tick = (authorization?: string) =>
      fetch(`${origin}/v1/tick`, {
        method: "POST",
        ...(authorization ? { headers: { authorization } } : {}),
      });
    expect((await tick()).status).toBe(401);
    expect((await tick(`Bearer ${API_KEY}`)).status).toBe(401);
    const allowed = await tick(`Bearer ${CRON_SECRET}`);
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toHaveProperty("leader");

    expect((await api("GET", "/v1/jobs", undefined, "wrong")).status).toBe(401);
    expect((await api("GET", "/v1/jobs", undefined, "other-key")).status).toBe(200);

    const forged = await fetch(`${origin}/v1/worker`, {
      method: "POST",
      headers: { "content-type": "application/json", "upstash-signature": "not.a.jwt" },
      body: JSON.stringify({ id: "j_forged", handler: "echo", input: null }),
    });
    expect(forged.status).toBe(401);
    expect(forged.headers.get("content-type")).toBe("application/problem+json");
    expect(await forged.json()).toMatchObject({
      status: 401,
      type: "urn:tickwork:problem:unauthorized",
      detail: expect.stringContaining("signature"),
    });
  });
});
