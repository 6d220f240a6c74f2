/**
 * @module
 * The QStash path of the precision section (`bench/sections/precision.ts`), in its own process:
 * `createApp` + `createEngine` on `RedisStore` (ioredis) and `QStashTransport` publishing to the
 * QStash double at `QSTASH_URL`, which delivers back to this server's `/v1/worker` over real
 * HTTP when each message's not-before time comes. The tick runs as a platform's cron would call
 * it: once now, then at the start of every wall-clock minute (`* * * * *`), default tick
 * settings (65 s look-ahead). Handlers: `precision-handlers.ts`.
 */
import { randomBytes } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { Redis } from "ioredis";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { createApp } from "../../src/http/index.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { QStashTransport } from "../../src/transport/qstash/index.ts";
import { serveParent } from "../lib/children.ts";
import { BENCH_API_KEY } from "../lib/settings.ts";
import { handlers } from "./precision-handlers.ts";

const env = process.env;
const redisUrl = env.REDIS_URL;
if (!redisUrl || !env.QSTASH_URL || !env.QSTASH_TOKEN) {
  throw new Error("REDIS_URL, QSTASH_URL and QSTASH_TOKEN are required");
}

let fetchHandler: (request: Request) => Response | Promise<Response> = () =>
  new Response(null, { status: 503 });
const server = serve({
  fetch: (request) => fetchHandler(request),
  port: 0,
  hostname: "127.0.0.1",
}) as Server;
if (!server.listening) await new Promise((resolve) => server.once("listening", resolve));
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const engine = createEngine({
  store: new RedisStore({ client: fromIoredis(new Redis(redisUrl)), prefix: "precision-qstash" }),
  transport: new QStashTransport({
    token: env.QSTASH_TOKEN,
    baseUrl: env.QSTASH_URL,
    workerUrl: `${origin}/v1/worker`,
    failureCallbackUrl: `${origin}/v1/dead`,
    currentSigningKey: env.QSTASH_CURRENT_SIGNING_KEY ?? "",
    nextSigningKey: env.QSTASH_NEXT_SIGNING_KEY ?? "",
  }),
  handlers,
  logger: silentLogger,
});
const app = createApp({
  engine,
  publicUrl: origin,
  apiKeys: [BENCH_API_KEY],
  tickSecret: randomBytes(16).toString("hex"),
});
fetchHandler = (request) => app.fetch(request);

let ticks = 0;
let ticking: NodeJS.Timeout | undefined;
/** Tick now, then at the start of each minute, as `* * * * *` platform cron does. */
function tickEveryMinute(): void {
  void engine.ticker.tick().then(
    () => ticks++,
    (error: unknown) => console.error(`precision tick failed: ${String(error)}`),
  );
  ticking = setTimeout(tickEveryMinute, 60_000 - (Date.now() % 60_000));
}

serveParent(
  { url: origin },
  {
    start: () => {
      tickEveryMinute();
      return true;
    },
    ticks: () => ticks,
    stop: () => {
      clearTimeout(ticking);
      return true;
    },
  },
);
