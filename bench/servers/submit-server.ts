/**
 * @module
 * One contender of the submit benchmark, in its own process (the load generator must not share
 * its event loop): `POST /v1/jobs` on a Node HTTP server, backed by a private Redis.
 *
 * tickwork is imported by its name: the built package, as an app that installed it runs it (see
 * `bench/lib/children.ts`).
 *
 * - `tickwork`: `createApp` (with an API key, as `tickwork start` requires) + `createEngine`,
 *   served by tickwork's own `serve` (tickwork/node) as `tickwork start` serves it (the submit
 *   route answered without a web `Request`; every other contender is a Hono route on
 *   `@hono/node-server`),
 *   the store opened as `tickwork start` opens it (`openStore`: ioredis, writes coalesced),
 *   `QStashTransport` (the real `@upstash/qstash` client) publishing to the QStash double at
 *   `QSTASH_URL`. Production defaults, except the degradation thresholds:
 *   the controller still evaluates on every submit, but a backlog of undelivered jobs cannot push
 *   it out of `normal`. Publishes run in the background (`backgroundPublish`), as `tickwork start`
 *   runs them; the run still counts every message the double accepted.
 * - `streams`: as `tickwork`, but the Redis Streams transport: `openStore` with `dispatch:
 *   "streams"` (the submit script adds the job to the stream) and
 *   `RedisStreams` as the transport, no queue double. No worker runs, so the stream only grows.
 * - `direct_qstash`: what users write without tickwork, as Upstash's docs show it: a Hono route
 *   calling `@upstash/qstash`'s `publishJSON` for each request (one HTTP request to the QStash
 *   double per job; no Redis).
 * - `ceiling`: a bare Hono route doing one Redis `SET`.
 * - `bullmq`: a Hono route doing BullMQ `queue.add` (default job options).
 *
 * Requests: `info` (tickwork, streams: the controller's level and backlog from `store.stats()`),
 * and the built-in `cpu` and `exit` (see `serveParent`).
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { Client } from "@upstash/qstash";
import { Queue } from "bullmq";
import { Hono } from "hono";
import { Redis } from "ioredis";
// The package by name, as users import it: the built dist/ when started by bench/run.ts (see
// bench/lib/children.ts), the sources under a plain `tsx`.
import { createEngine, type Store, silentLogger, type Transport } from "tickwork";
import { createApp } from "tickwork/http";
import { nodeQStashHttp, openStore, serve as serveTickworkApp } from "tickwork/node";
import { QStashTransport } from "tickwork/qstash";
import { RedisStreams } from "tickwork/redis";
import { serveParent } from "../lib/children.ts";
import { BENCH_API_KEY, BENCH_DEGRADATION } from "../lib/settings.ts";

type Fetch = (request: Request) => Response | Promise<Response>;

const kind = process.argv[2];
const redisUrl = process.env.REDIS_URL;
if (!redisUrl) throw new Error("REDIS_URL is required");

let fetchHandler: Fetch = () => new Response(null, { status: 503 });
/** tickwork's app once built (`tickwork`, `streams`): served by tickwork's own `serve`. */
let app: { fetch: Fetch } | undefined;
let origin: string;
if (kind === "tickwork" || kind === "streams") {
  // As `tickwork start` serves it: `serve` of tickwork/node, which answers the submit route
  // without a web Request (src/adapter/node/direct.ts) and everything else through
  // `@hono/node-server`.
  const placeholder = { fetch: (request: Request) => fetchHandler(request) };
  const node = await serveTickworkApp(() => app ?? placeholder, {
    port: 0,
    hostname: "127.0.0.1",
    signals: false,
    log: () => {},
  });
  origin = node.url;
} else {
  // What a user of the others writes: a Hono app on `@hono/node-server`.
  const server = serve({
    fetch: (request) => fetchHandler(request),
    port: 0,
    hostname: "127.0.0.1",
  }) as Server;
  if (!server.listening) await new Promise((resolve) => server.once("listening", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let info: () => Promise<unknown> = async () => ({});

/** The store as `tickwork start` opens it (`openStore`: the writes of one turn coalesced). */
function startStore(url: string, dispatch: "outbox" | "streams") {
  return openStore({ kind: "redis", url, prefix: "bench", dispatch }, silentLogger);
}

/** The QStash double's address, token and signing keys (from the parent). */
function qstashEnv() {
  const url = process.env.QSTASH_URL;
  const token = process.env.QSTASH_TOKEN;
  const currentSigningKey = process.env.QSTASH_CURRENT_SIGNING_KEY;
  const nextSigningKey = process.env.QSTASH_NEXT_SIGNING_KEY;
  if (!url || !token || !currentSigningKey || !nextSigningKey) {
    throw new Error("QSTASH_URL, QSTASH_TOKEN and both signing keys are required");
  }
  return { url, token, currentSigningKey, nextSigningKey };
}

if (kind === "tickwork") {
  const { url: qstashUrl, token, currentSigningKey, nextSigningKey } = qstashEnv();
  const { store } = await startStore(redisUrl, "outbox");
  const transport = new QStashTransport({
    token,
    baseUrl: qstashUrl,
    workerUrl: `${origin}/v1/worker`,
    failureCallbackUrl: `${origin}/v1/dead`,
    currentSigningKey,
    nextSigningKey,
    // As `tickwork start` sends its batches.
    http: nodeQStashHttp(),
  });
  serveTickwork(store, transport);
} else if (kind === "streams") {
  const { store, redis } = await startStore(redisUrl, "streams");
  if (!redis) throw new Error("openStore gave no ioredis client for Redis Streams");
  serveTickwork(store, new RedisStreams({ redis, prefix: "bench" }));
} else if (kind === "direct_qstash") {
  // What Upstash's docs show: one `publishJSON` (one HTTP request to QStash) per submitted job.
  const { token, url: qstashUrl } = qstashEnv();
  const client = new Client({ token, baseUrl: qstashUrl });
  const app = new Hono();
  app.post("/v1/jobs", async (c) => {
    const body = (await c.req.json()) as { handler: string; input?: unknown };
    const published = await client.publishJSON({ url: `${origin}/v1/worker`, body });
    return c.json({ id: published.messageId, status: "queued" }, 202);
  });
  fetchHandler = (request) => app.fetch(request);
} else if (kind === "ceiling") {
  const redis = new Redis(redisUrl);
  const app = new Hono();
  app.post("/v1/jobs", async (c) => {
    const body = await c.req.json();
    const id = randomUUID();
    await redis.set(`ceiling:${id}`, JSON.stringify(body));
    return c.json({ id, status: "queued" }, 202);
  });
  fetchHandler = (request) => app.fetch(request);
  info = async () => ({ keys: await redis.dbsize() });
} else if (kind === "bullmq") {
  const queue = new Queue("bench", { connection: new Redis(redisUrl) });
  const app = new Hono();
  app.post("/v1/jobs", async (c) => {
    const body = (await c.req.json()) as { handler: string; input?: unknown };
    const job = await queue.add(body.handler, body.input ?? null);
    return c.json({ id: job.id, status: "queued" }, 202);
  });
  fetchHandler = (request) => app.fetch(request);
  info = async () => ({ waiting: await queue.getWaitingCount() });
} else {
  throw new Error(
    `unknown contender ${kind}: tickwork | streams | direct_qstash | ceiling | bullmq`,
  );
}

/** tickwork's app (`createApp` + `createEngine`) on `store` and `transport`, as `tickwork start`. */
function serveTickwork(store: Store, transport: Transport): void {
  const engine = createEngine({
    store,
    transport,
    handlers: { "bench.work": { run: () => null } },
    degradation: BENCH_DEGRADATION,
    backgroundPublish: true,
  });
  app = createApp({
    engine,
    publicUrl: origin,
    apiKeys: [BENCH_API_KEY],
    tickSecret: randomBytes(16).toString("hex"),
  });
  info = async () => {
    // The last publishes of the run may still be under way: the counts below include them.
    await engine.broker.settled();
    const stats = await store.stats(engine.options.degradation);
    return {
      level: stats.degradation.level,
      backlog: stats.backlog,
      submitted: stats.totals.submitted,
      outbox: stats.outbox,
    };
  };
}

serveParent({ url: origin }, { info: () => info() });
