/**
 * `createVercelApp` under a base path with the default public URL
 * (`https://$VERCEL_PROJECT_PRODUCTION_URL`). The app serves `/api/tickwork/v1/worker`, so QStash
 * must deliver there; with the default public URL it published to `/v1/worker`, a 404. And one
 * cron tick, which Vercel fires anywhere within its minute, looks 120 s ahead (it looked 65 s).
 */
import { createVercelApp } from "tickwork/vercel";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handlers } from "../../functions/handlers.ts";
import { type RedisRestServer, serveRedisRest } from "../../src/tools/redis-rest/index.ts";
import { deletePrefix, REDIS_URL } from "../dev/server.ts";
import { type QStashDouble, startQStashDouble } from "../support/qstash-double/index.ts";

const REST_TOKEN = `rest-${Math.random().toString(36).slice(2)}`;
const API_KEY = "api-key-for-vercel-audit";
const HOST = "tickwork-demo.vercel.app";

const CRON_SECRET = "cron-secret-0123456789abcdef";

describe("createVercelApp with the default public URL", () => {
  const prefixes: string[] = [];
  let bridge: RedisRestServer;
  let qstash: QStashDouble;

  beforeAll(async () => {
    bridge = await serveRedisRest({
      redisUrl: REDIS_URL,
      token: REST_TOKEN,
      port: 0,
      signals: false,
      log: () => {},
    });
    qstash = await startQStashDouble({ faults: { holdDeliveries: true } });
  });

  afterAll(async () => {
    await qstash?.close();
    await bridge?.close();
    await Promise.all(prefixes.map(deletePrefix));
  });

  /** A Vercel project's environment, on a key prefix of its own. */
  function projectEnv(extra: Record<string, string> = {}): Record<string, string> {
    const prefix = `vc${Math.random().toString(36).slice(2, 10)}`;
    prefixes.push(prefix);
    return {
      UPSTASH_REDIS_REST_URL: bridge.url,
      UPSTASH_REDIS_REST_TOKEN: REST_TOKEN,
      QSTASH_URL: qstash.url,
      QSTASH_TOKEN: qstash.token,
      QSTASH_CURRENT_SIGNING_KEY: qstash.currentSigningKey,
      QSTASH_NEXT_SIGNING_KEY: qstash.nextSigningKey,
      VERCEL_PROJECT_PRODUCTION_URL: HOST,
      CRON_SECRET,
      TICKWORK_API_KEY: API_KEY,
      TICKWORK_PREFIX: prefix,
      ...extra,
    };
  }

  for (const how of ["TICKWORK_BASE_PATH", "the basePath option"] as const) {
    it(`QStash is told to deliver under the base path (${how})`, async () => {
      const env = projectEnv(
        how === "TICKWORK_BASE_PATH" ? { TICKWORK_BASE_PATH: "/api/tickwork" } : {},
      );
      const app = createVercelApp(env, {
        handlers,
        ...(how === "the basePath option" ? { basePath: "/api/tickwork" } : {}),
      });
      const before = qstash.messages().length;
      const res = await app.fetch(
        new Request(`https://${HOST}/api/tickwork/v1/jobs`, {
          method: "POST",
          headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
          body: JSON.stringify({ handler: "echo", input: { n: 1 } }),
        }),
      );
      expect(res.status).toBe(202);
      const published = qstash.messages().slice(before);
      expect(published).toHaveLength(1);
      const url = published[0]?.url;
      const post = (path: string) =>
        app.fetch(new Request(`https://${HOST}${path}`, { method: "POST", body: "{}" }));
      // The app serves deliveries under the base path only…
      expect((await post("/api/tickwork/v1/worker")).status).not.toBe(404);
      expect((await post("/v1/worker")).status).toBe(404);
      // …and QStash must be told to deliver there.
      expect(url).toBe(`https://${HOST}/api/tickwork/v1/worker`);
    });
  }

  // Vercel Cron fires "within the minute" (Pro), so two ticks can be up to ~2 minutes apart:
  // createVercelApp looks 120 s ahead (README, Performance, "Precision").
  it("one cron tick dispatches what is due in the next 120 s, not 65 s", async () => {
    const env = projectEnv();
    const app = createVercelApp(env, { handlers });
    const created = await app.fetch(
      new Request(`https://${HOST}/v1/schedules`, {
        method: "POST",
        headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ id: "every-5s", handler: "echo", schedule: "5s" }),
      }),
    );
    expect(created.status).toBe(201);
    const at = Date.now();
    const tick = await app.fetch(
      new Request(`https://${HOST}/v1/tick`, {
        headers: { authorization: `Bearer ${CRON_SECRET}`, "user-agent": "vercel-cron/1.0" },
      }),
    );
    expect(tick.status).toBe(200);
    const after = Date.now();
    // The tick ran between `at` and `after`: it looked 120 s ahead of its own time.
    const latest = Math.max(...qstash.messages().map((m) => m.notBefore));
    expect(latest - at).toBeGreaterThanOrEqual(110_000);
    expect(latest - after).toBeLessThanOrEqual(120_000);
  });
});
