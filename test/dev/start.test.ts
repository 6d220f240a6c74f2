/**
 * `tickwork start` as deployments run it, on Redis: split by role into an api+worker server and a
 * tick-only server (the Kubernetes and Compose layout, on the local queue with a shared signing
 * key), and with QStash (the double) delivering to the server's public URL.
 */
import { afterAll, describe, expect, test } from "vitest";
import { createClient } from "../../src/client/index.ts";
import { onFreePort } from "../support/free-port.ts";
import { type QStashDouble, startQStashDouble } from "../support/qstash-double/index.ts";
import {
  type DevServer,
  deletePrefix,
  REDIS_URL,
  randomPrefix,
  startDevServer,
  waitFor,
} from "./server.ts";

const API_KEY = "start-test-key";

async function status(url: string, init: RequestInit = {}): Promise<number> {
  return (await fetch(url, init)).status;
}

describe.concurrent("tickwork start", () => {
  const servers: DevServer[] = [];
  const prefixes: string[] = [];
  let qstash: QStashDouble | undefined;
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await qstash?.close();
    await Promise.all(prefixes.map(deletePrefix));
  });

  /**
   * Starts a server whose URL must be known before it starts, on a port picked beforehand; the
   * port taken meanwhile, it goes again on another (test/support/free-port.ts).
   */
  function startOnFreePort(
    launch: (port: number) => Promise<DevServer>,
  ): Promise<{ server: DevServer; port: number }> {
    return onFreePort(/port \d+ is in use/, async (port) => ({ server: await launch(port), port }));
  }

  async function start(bin: string[], env: Record<string, string>): Promise<DevServer> {
    const server = await startDevServer({
      command: { bin: ["start", "--host", "127.0.0.1", ...bin] },
      env: { REDIS_URL, ...env },
    });
    servers.push(server);
    return server;
  }

  test("--role api,worker and --role tick: a split deployment runs a schedule across servers", async () => {
    const prefix = randomPrefix();
    prefixes.push(prefix);
    // The local queue across servers (with Redis over TCP the default would be Redis Streams).
    const shared = { TICKWORK_PREFIX: prefix, TICKWORK_TRANSPORT: "local" };
    const signingKey = `key-${prefix}`;
    const { server: api, port } = await startOnFreePort((port) =>
      start(["--role", "api", "--role", "worker", "--port", String(port)], {
        ...shared,
        TICKWORK_PUBLIC_URL: `http://127.0.0.1:${port}`,
        TICKWORK_API_KEY: API_KEY,
        TICKWORK_SIGNING_KEY: signingKey,
      }),
    );
    const workers = `http://127.0.0.1:${port}`;
    const tick = await start(["--role", "tick"], {
      ...shared,
      TICKWORK_PUBLIC_URL: workers,
      TICKWORK_SIGNING_KEY: signingKey,
    });

    expect(api.banner).toContain("  roles      api, worker\n");
    expect(api.banner).toMatch(/ {2}tick {7}no timer here \(roles without tick\)/);
    expect(api.curls).toHaveLength(2);
    expect(tick.banner).toContain("  roles      tick\n");
    expect(tick.banner).toContain(
      `  transport  local queue, delivers to ${workers}/v1/worker (signed with TICKWORK_SIGNING_KEY)`,
    );
    expect(tick.banner).toContain("  tick       internal timer every 1 s");
    expect(tick.curls).toHaveLength(0);

    // Each serves its routes only.
    expect(await status(`${api.url}/v1/tick`)).toBe(404);
    expect(await status(`${tick.url}/v1/jobs`)).toBe(404);
    expect(await status(`${tick.url}/ready`)).toBe(200);

    // The tick server dispatches; the api+worker server runs what it delivers.
    const client = createClient({ url: api.url, apiKey: API_KEY });
    const schedule = await client.schedules.create({
      handler: "echo",
      schedule: "1s",
      input: "split",
      maxRuns: 2,
    });
    const runs = await waitFor(async () => {
      const done = await client.jobs
        .list({ scheduleId: schedule.id, status: "succeeded" })
        .toArray();
      return done.length === 2 ? done : undefined;
    }, "2 runs dispatched by the tick server");
    for (const run of runs) expect(run).toMatchObject({ result: "split", attempts: 1 });
    // A submitted job is delivered by the api server's own queue to the worker route.
    const job = await client.jobs.submit({ handler: "echo", input: 7 });
    expect(await job.result({ timeout: "10s" })).toBe(7);
  });

  test("on Redis Streams: api, worker and tick servers apart, with no URL or key between them", async () => {
    const prefix = randomPrefix();
    prefixes.push(prefix);
    const shared = { TICKWORK_PREFIX: prefix };
    const [api, worker, tick] = await Promise.all([
      start(["--role", "api"], { ...shared, TICKWORK_API_KEY: API_KEY }),
      start(["--role", "worker", "--concurrency", "4"], shared),
      start(["--role", "tick"], shared),
    ]);
    // The api server pulls nothing: its banner says so rather than name a concurrency.
    expect(api.banner).toContain(
      "transport  Redis Streams (durable; servers with the worker role pull, this one does not)",
    );
    expect(worker.banner).toMatch(/transport {2}Redis Streams \(durable; workers pull, 4 at once/);
    expect(tick.banner).toContain("  tick       internal timer every 1 s");
    // Its submits are answered by the direct route (docs/adr/0046-direct-submit.md), which alone
    // closes the connection of a submit it refused before reading the body.
    const refused = await fetch(`${api.url}/v1/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ handler: "echo" }),
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("connection")).toBe("close");
    await refused.body?.cancel();
    // Jobs submitted to the api server run on the worker server.
    const client = createClient({ url: api.url, apiKey: API_KEY });
    const job = await client.jobs.submit({ handler: "echo", input: "pulled" });
    expect(await job.result({ timeout: "10s" })).toBe("pulled");
    // Occurrences dispatched by the tick server run there too.
    const schedule = await client.schedules.create({
      handler: "echo",
      schedule: "1s",
      input: "tick",
      maxRuns: 2,
    });
    await waitFor(async () => {
      const done = await client.jobs
        .list({ scheduleId: schedule.id, status: "succeeded" })
        .toArray();
      return done.length === 2 ? done : undefined;
    }, "2 occurrences run by the worker server");
  });

  test("with QSTASH_TOKEN: jobs go through QStash to TICKWORK_PUBLIC_URL", async () => {
    const prefix = randomPrefix();
    prefixes.push(prefix);
    qstash = await startQStashDouble({ backoffScale: 0.001 });
    const double = qstash;
    const { server, port } = await startOnFreePort((port) =>
      start(["--port", String(port)], {
        TICKWORK_PREFIX: prefix,
        TICKWORK_API_KEY: API_KEY,
        TICKWORK_PUBLIC_URL: `http://127.0.0.1:${port}`,
        QSTASH_URL: double.url,
        QSTASH_TOKEN: double.token,
        QSTASH_CURRENT_SIGNING_KEY: double.currentSigningKey,
        QSTASH_NEXT_SIGNING_KEY: double.nextSigningKey,
      }),
    );
    const publicUrl = `http://127.0.0.1:${port}`;
    expect(server.banner).toContain(
      `  transport  QStash ${qstash.url}, delivers to ${publicUrl}/v1/worker\n`,
    );
    expect(server.banner).toContain("  roles      all\n");

    const client = createClient({ url: server.url, apiKey: API_KEY });
    const job = await client.jobs.submit({ handler: "echo", input: { via: "qstash" } });
    expect(await job.result({ timeout: "10s" })).toEqual({ via: "qstash" });
    expect(qstash.deliveries.some((d) => d.url === `${publicUrl}/v1/worker`)).toBe(true);
    // The worker route checks QStash's signature: an unsigned delivery is refused.
    expect(await status(`${server.url}/v1/worker`, { method: "POST", body: "{}" })).toBe(401);
  });
});
