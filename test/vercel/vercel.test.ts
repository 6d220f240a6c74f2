/**
 * The Vercel entry (`functions/vercel/index.ts`) as Vercel runs it: its default export, built from
 * `process.env`, answering the requests Vercel sends. State in "Upstash" (the REST bridge in front
 * of the local Redis), delivery through the QStash double. Cron requests are made exactly as
 * Vercel Cron makes them and handed to the exported app; for jobs, the same app is served on a
 * real socket (@hono/node-server, port 0) so the double can deliver to it.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { Redis } from "ioredis";
import { createVercelApp } from "tickwork/vercel";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { handlers } from "../../functions/handlers.ts";
import { createClient } from "../../src/client/index.ts";
import { type RedisRestServer, serveRedisRest } from "../../src/tools/redis-rest/index.ts";
import { deletePrefix, REDIS_URL } from "../dev/server.ts";
import {
  BRIDGE_TOKEN,
  deletePrefix as deleteBridgePrefix,
  freshPrefix,
  sharedBridge,
} from "../redis-rest/harness.ts";
import { type QStashDouble, startQStashDouble } from "../support/qstash-double/index.ts";

const REST_TOKEN = `rest-${Math.random().toString(36).slice(2)}`;
const CRON_SECRET = "cron-secret-0123456789abcdef";
const API_KEY = "api-key-for-vercel-test";
const DEPLOYMENT = "https://tickwork-demo.vercel.app";
/** `retention.jobMs` from `TICKWORK_CONFIG` (about 1.4 days; the default is 7). */
const JOB_MS = 123_456_789;

type App = { fetch(request: Request): Response | Promise<Response> };

/** The request Vercel Cron sends for `{ path: "/v1/tick", schedule: "* * * * *" }`. */
function cronRequest(authorization?: string): Request {
  return new Request(`${DEPLOYMENT}/v1/tick`, {
    method: "GET",
    headers: {
      "user-agent": "vercel-cron/1.0",
      "x-vercel-cron-schedule": "* * * * *",
      ...(authorization !== undefined ? { authorization } : {}),
    },
  });
}

describe("the Vercel entry", () => {
  const prefix = `vc${Math.random().toString(36).slice(2, 10)}`;
  let bridge: RedisRestServer;
  let qstash: QStashDouble;
  let server: Server;
  let origin: string;
  let app: App;

  beforeAll(async () => {
    bridge = await serveRedisRest({
      redisUrl: REDIS_URL,
      token: REST_TOKEN,
      port: 0,
      signals: false,
      log: () => {},
    });
    qstash = await startQStashDouble({ backoffScale: 0.001 });
    // The socket first: its URL is the deployment's public URL, which the app reads at import.
    let handler: App["fetch"] = () => new Response(null, { status: 503 });
    server = serve({
      fetch: (request) => handler(request),
      port: 0,
      hostname: "127.0.0.1",
    }) as Server;
    if (!server.listening) await new Promise((resolve) => server.once("listening", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    for (const [name, value] of Object.entries({
      UPSTASH_REDIS_REST_URL: bridge.url,
      UPSTASH_REDIS_REST_TOKEN: REST_TOKEN,
      QSTASH_URL: qstash.url,
      QSTASH_TOKEN: qstash.token,
      QSTASH_CURRENT_SIGNING_KEY: qstash.currentSigningKey,
      QSTASH_NEXT_SIGNING_KEY: qstash.nextSigningKey,
      TICKWORK_PUBLIC_URL: origin,
      CRON_SECRET,
      TICKWORK_API_KEY: API_KEY,
      TICKWORK_PREFIX: prefix,
      TICKWORK_CONFIG: JSON.stringify({ retention: { jobMs: JOB_MS } }),
    })) {
      vi.stubEnv(name, value);
    }
    vi.resetModules();
    app = (await import("../../functions/vercel/index.ts")).default;
    handler = (request) => app.fetch(request);
  });

  afterAll(async () => {
    vi.unstubAllEnvs();
    await qstash?.close();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await bridge?.close();
    await deletePrefix(prefix);
  });

  async function api(method: string, path: string, body?: unknown) {
    const res = await fetch(`${origin}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${API_KEY}`,
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely
    return { status: res.status, body: (await res.json()) as any };
  }

  it("Vercel Cron's request with the CRON_SECRET runs a tick: 200 with the tick result", async () => {
    const res = await app.fetch(cronRequest(`Bearer ${CRON_SECRET}`));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ leader: true, dispatched: 0, recovered: 0 });
  });

  it("without the secret, or with a wrong one, the cron request is a 401 problem", async () => {
    for (const authorization of [
      undefined,
      "Bearer wrong-secret",
      CRON_SECRET,
      `Bearer ${API_KEY}`,
    ]) {
      const res = await app.fetch(cronRequest(authorization));
      expect(res.status, String(authorization)).toBe(401);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="tickwork"');
      expect(await res.text()).not.toContain(CRON_SECRET);
    }
  });

  it("the API needs TICKWORK_API_KEY", async () => {
    const res = await app.fetch(new Request(`${DEPLOYMENT}/v1/jobs`));
    expect(res.status).toBe(401);
    expect((await app.fetch(new Request(`${DEPLOYMENT}/health`))).status).toBe(200);
  });

  it("streams a sleep job over SSE from the Vercel app: queued → running → succeeded", async () => {
    const client = createClient<typeof handlers>({ url: origin, apiKey: API_KEY });
    const job = await client.jobs.submit({ handler: "sleep", input: { ms: 100 } });
    const seen: string[] = [];
    // Upstash over REST: the app polls the store (no blocking reads) until the job is final.
    for await (const update of job.updates()) {
      if (update.type === "status") seen.push(update.status);
      if (update.type === "done") seen.push(`done:${JSON.stringify(update.job.result)}`);
    }
    expect(seen).toEqual(["queued", "running", "succeeded", 'done:{"slept":100}']);
  });

  it("runs a job: submit → QStash → /v1/worker on the socket → succeeded", async () => {
    const submitted = await api("POST", "/v1/jobs", { handler: "echo", input: { via: "vercel" } });
    expect(submitted.status).toBe(202);
    const done = await api("GET", `/v1/jobs/${submitted.body.id}?wait=10s`);
    expect(done.body).toMatchObject({
      status: "succeeded",
      result: { via: "vercel" },
      attempts: 1,
    });
    const deliveries = qstash.deliveries.filter((d) => d.url === `${origin}/v1/worker`);
    expect(deliveries.length).toBeGreaterThanOrEqual(1);
    // Kept for TICKWORK_CONFIG's retention.jobMs, not the default's 7 days.
    const redis = new Redis(REDIS_URL);
    try {
      const ttl = await redis.pttl(`{${prefix}}:j:${submitted.body.id}`);
      expect(ttl).toBeGreaterThan(JOB_MS - 120_000);
      expect(ttl).toBeLessThanOrEqual(JOB_MS);
    } finally {
      redis.disconnect();
    }
  });

  it("a cron tick dispatches a due schedule a minute ahead; QStash delivers each run on time", async () => {
    const created = await api("POST", "/v1/schedules", {
      id: `every-second-${prefix}`,
      handler: "echo",
      schedule: "1s",
      maxRuns: 2,
      input: "tick",
    });
    expect(created.status).toBe(201);
    const res = await app.fetch(cronRequest(`Bearer ${CRON_SECRET}`));
    expect(await res.json()).toMatchObject({ leader: true, dispatched: 2 });
    const deadline = Date.now() + 10_000;
    let runs: { status: string; fireAt: string; startedAt?: string }[] = [];
    while (Date.now() < deadline) {
      runs = (await api("GET", `/v1/schedules/${created.body.id}/runs`)).body.items;
      if (runs.length === 2 && runs.every((run) => run.status === "succeeded")) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(runs.map((run) => run.status)).toEqual(["succeeded", "succeeded"]);
    for (const run of runs) {
      // Published with notBefore = fireAt (QStash's whole seconds, rounded up): never early.
      expect(Date.parse(run.startedAt ?? "")).toBeGreaterThanOrEqual(Date.parse(run.fireAt));
    }
  });
});

describe("the Vercel entry, misconfigured", () => {
  it("answers every request with a 500 problem naming what to set, never the values", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const app = createVercelApp(
        { REDIS_URL: "redis://:hunter2@cache:6379", CRON_SECRET: "s" },
        { handlers },
      );
      for (const path of ["/v1/tick", "/health", "/v1/jobs"]) {
        const res = await app.fetch(new Request(`${DEPLOYMENT}${path}`));
        expect(res.status).toBe(500);
        expect(res.headers.get("content-type")).toBe("application/problem+json");
        const body = (await res.json()) as { detail: string };
        expect(body.detail).toContain(
          "UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN, QSTASH_TOKEN, QSTASH_CURRENT_SIGNING_KEY, QSTASH_NEXT_SIGNING_KEY, TICKWORK_PUBLIC_URL, TICKWORK_API_KEY",
        );
        expect(body.detail).toContain("REDIS_URL, Redis over TCP, is for Node servers");
        expect(body.detail).not.toContain("hunter2");
        expect(body.detail).not.toContain("CRON_SECRET");
      }
      expect(errors).toHaveBeenCalledTimes(1);
    } finally {
      errors.mockRestore();
    }
  });

  const CONFIGURED = {
    UPSTASH_REDIS_REST_URL: "https://eu1-example.upstash.io",
    UPSTASH_REDIS_REST_TOKEN: "t",
    QSTASH_TOKEN: "q",
    QSTASH_CURRENT_SIGNING_KEY: "c",
    QSTASH_NEXT_SIGNING_KEY: "n",
    TICKWORK_PUBLIC_URL: DEPLOYMENT,
    CRON_SECRET,
    TICKWORK_API_KEY: API_KEY,
  };

  /** The detail of the 500 an unauthenticated `GET /health` gets from an app built on `env`. */
  async function misconfiguredDetail(env: Record<string, string>): Promise<string> {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const app = createVercelApp(env, { handlers });
      const res = await app.fetch(new Request(`${DEPLOYMENT}/health`));
      expect(res.status).toBe(500);
      const detail = ((await res.json()) as { detail: string }).detail;
      // Logged once, without the value either.
      expect(String(errors.mock.calls[0]?.[0])).toContain(detail);
      return detail;
    } finally {
      errors.mockRestore();
    }
  }

  it.each([
    // The TCP connection string the Upstash console shows beside the REST URL, pasted instead.
    ["rediss://default:SuperSecretPw@eu1-x.upstash.io:6379", "SuperSecretPw"],
    // The URL and the token swapped.
    ["AXyzTOKENvalueSECRET", "AXyzTOKENvalueSECRET"],
  ])("UPSTASH_REDIS_REST_URL=%s: named, its value never shown", async (url, secret) => {
    const detail = await misconfiguredDetail({ ...CONFIGURED, UPSTASH_REDIS_REST_URL: url });
    expect(detail).toContain("UPSTASH_REDIS_REST_URL");
    expect(detail).not.toContain(secret);
  });

  it("QSTASH_URL, TICKWORK_PUBLIC_URL, TICKWORK_BASE_PATH and TICKWORK_ROLES holding a credential: named, never shown", async () => {
    for (const [name, value] of [
      ["QSTASH_URL", "sk_live_SECRETVALUE"],
      ["TICKWORK_PUBLIC_URL", "sk_live_SECRETVALUE"],
      ["TICKWORK_BASE_PATH", "token=SECRETVALUE?"],
      ["TICKWORK_ROLES", "api,SECRETVALUE"],
    ] as const) {
      const detail = await misconfiguredDetail({ ...CONFIGURED, [name]: value });
      expect(detail).toContain(name);
      expect(detail.toLowerCase()).not.toContain("secretvalue");
    }
  });

  it("an UPSTASH_REDIS_REST_URL the Upstash client refuses (one slash) is named, not a crash at import", async () => {
    const detail = await misconfiguredDetail({
      ...CONFIGURED,
      UPSTASH_REDIS_REST_URL: "https:/eu1-x.upstash.io",
    });
    expect(detail).toContain("UPSTASH_REDIS_REST_URL");
  });

  it("a blank CRON_SECRET is missing, and one with a space inside is refused", async () => {
    expect(await misconfiguredDetail({ ...CONFIGURED, CRON_SECRET: "   " })).toContain(
      "CRON_SECRET",
    );
    expect(await misconfiguredDetail({ ...CONFIGURED, CRON_SECRET: "two words" })).toContain(
      "CRON_SECRET must be one token",
    );
  });

  it("a CRON_SECRET stored with its line break (echo s | vercel env add) still accepts Vercel Cron's bearer", async () => {
    const prefix = freshPrefix("vcs");
    try {
      const app = createVercelApp(
        {
          ...CONFIGURED,
          UPSTASH_REDIS_REST_URL: (await sharedBridge()).url,
          UPSTASH_REDIS_REST_TOKEN: BRIDGE_TOKEN,
          TICKWORK_PREFIX: prefix,
          CRON_SECRET: `${CRON_SECRET}\n`,
        },
        { handlers },
      );
      const res = await app.fetch(cronRequest(`Bearer ${CRON_SECRET}`));
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ leader: true });
    } finally {
      await deleteBridgePrefix(prefix);
    }
  });

  it("takes the public URL from VERCEL_PROJECT_PRODUCTION_URL when TICKWORK_PUBLIC_URL is unset", async () => {
    const app = createVercelApp(
      {
        UPSTASH_REDIS_REST_URL: "https://eu1-example.upstash.io",
        UPSTASH_REDIS_REST_TOKEN: "t",
        QSTASH_TOKEN: "q",
        QSTASH_CURRENT_SIGNING_KEY: "c",
        QSTASH_NEXT_SIGNING_KEY: "n",
        VERCEL_PROJECT_PRODUCTION_URL: "tickwork-demo.vercel.app",
        CRON_SECRET,
        TICKWORK_API_KEY: API_KEY,
      },
      { handlers },
    );
    // Configured: the tick route exists and checks the secret (no store is called for a 401).
    expect((await app.fetch(cronRequest())).status).toBe(401);
  });
  it("serves under TICKWORK_BASE_PATH (a Next.js route handler at app/api/tickwork/[...route])", async () => {
    const env = {
      UPSTASH_REDIS_REST_URL: "https://eu1-example.upstash.io",
      UPSTASH_REDIS_REST_TOKEN: "t",
      QSTASH_TOKEN: "q",
      QSTASH_CURRENT_SIGNING_KEY: "c",
      QSTASH_NEXT_SIGNING_KEY: "n",
      TICKWORK_PUBLIC_URL: `${DEPLOYMENT}/api/tickwork`,
      TICKWORK_BASE_PATH: "/api/tickwork",
      CRON_SECRET,
      TICKWORK_API_KEY: API_KEY,
    };
    const app = createVercelApp(env, { handlers });
    const tick = (path: string) =>
      app.fetch(
        new Request(`${DEPLOYMENT}${path}`, { headers: { "user-agent": "vercel-cron/1.0" } }),
      );
    // The tick route exists under the base path (401 without the secret), not at the root.
    expect((await tick("/api/tickwork/v1/tick")).status).toBe(401);
    expect((await tick("/v1/tick")).status).toBe(404);
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const bad = createVercelApp({ ...env, TICKWORK_BASE_PATH: "api tickwork?" }, { handlers });
      const res = await bad.fetch(new Request(`${DEPLOYMENT}/health`));
      expect(res.status).toBe(500);
      expect(((await res.json()) as { detail: string }).detail).toContain("basePath");
    } finally {
      errors.mockRestore();
    }
  });
});
