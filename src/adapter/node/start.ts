/**
 * @module
 * `startServer`: the whole Node topology in one call (DESIGN §1): a store (memory, or Redis over
 * TCP with ioredis), the local transport delivering to this server's own worker route, the
 * engine, the HTTP app, a tick timer every second, graceful shutdown, and the start banner.
 * Configuration comes in explicitly; the entry files (`functions/node.ts`, the CLI) read the
 * environment.
 */
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import type { Handlers } from "../../engine/handlers.ts";
import { createEngine, type Engine, type EngineOptions } from "../../engine/index.ts";
import { jsonLogger, type Logger } from "../../engine/logger.ts";
import { createApp } from "../../http/index.ts";
import { MemoryStore } from "../../store/memory/index.ts";
import type { Store } from "../../store/port.ts";
import { fromIoredis, RedisStore } from "../../store/redis/index.ts";
import { LocalTransport } from "../../transport/local/index.ts";
import { apiKeyAuthorize } from "./api-key.ts";
import { formatBanner, redactRedisUrl } from "./banner.ts";
import { type FetchApp, serve } from "./serve.ts";
import { startTicker } from "./ticker.ts";

/** Options of {@link startServer}. */
export interface StartServerOptions {
  /** The handlers jobs and schedules may name. */
  handlers: Handlers;
  /**
   * Development mode: no API key needed (the banner says so), 500s name their error.
   * Outside dev, `apiKeys` is required.
   * @default false
   */
  dev?: boolean;
  /** @default 8787 (`0` picks a free port; the banner shows it) */
  port?: number;
  /**
   * Interface to bind.
   * @default "127.0.0.1" in dev, "0.0.0.0" otherwise
   */
  hostname?: string;
  /**
   * Redis over TCP (ioredis) for state; without it the in-memory store.
   * @example "redis://127.0.0.1:6379"
   */
  redisUrl?: string;
  /**
   * Key prefix in Redis (every key lives under the hash tag `{prefix}`).
   * @default "tw"
   */
  prefix?: string;
  /** Accepted `Authorization: Bearer` keys for the API routes. Required outside dev. */
  apiKeys?: readonly string[];
  /** Required as `Authorization: Bearer <tickSecret>` on `/v1/tick` when set. */
  tickSecret?: string;
  /**
   * Period of the internal tick timer; also the tick's look-ahead horizon unless
   * `engine.tick.horizonMs` says otherwise.
   * @default 1_000
   */
  tickEveryMs?: number;
  /** Engine settings (tick, job defaults, logger). */
  engine?: EngineOptions;
  /**
   * Key signing the local transport's deliveries.
   * @default 32 random bytes per process
   */
  signingKey?: string;
  /** Signals that shut the server down (see {@link serve}). @default ["SIGINT", "SIGTERM"] */
  signals?: readonly NodeJS.Signals[] | false;
  /** How long requests in flight may finish at shutdown. @default 2_000 in dev, 10_000 otherwise */
  shutdownTimeoutMs?: number;
  /** Where the banner goes; `false` for none. @default console.log */
  print?: ((text: string) => void) | false;
}

/** A running server. */
export interface RunningServer {
  url: string;
  port: number;
  engine: Engine;
  /** The banner text (also printed, unless `print: false`). */
  banner: string;
  /** Shut down gracefully: ticker, server, queue, store. Idempotent. */
  close(): Promise<void>;
}

/** A configuration the server cannot start with (missing key, unreachable Redis, port in use). */
export class StartError extends Error {
  override name = "StartError";
}

/**
 * Start tickwork on Node.
 *
 * @example
 * const server = await startServer({ handlers, dev: true, port: 8787 });
 * // … later
 * await server.close();
 *
 * @example
 * await startServer({ handlers, redisUrl: process.env.REDIS_URL, apiKeys: [process.env.TICKWORK_API_KEY!] });
 */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const dev = options.dev ?? false;
  const apiKeys = (options.apiKeys ?? []).filter((key) => key.length > 0);
  if (!dev && apiKeys.length === 0) {
    throw new StartError(
      "no API key configured: outside dev every API request needs one. Set TICKWORK_API_KEY (or pass apiKeys).",
    );
  }
  const port = options.port ?? 8787;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new StartError(
      `port must be a whole number from 0 to 65535, got ${String(options.port)}`,
    );
  }
  const tickEveryMs = options.tickEveryMs ?? 1_000;
  const engineOptions: EngineOptions = {
    ...options.engine,
    tick: { horizonMs: tickEveryMs, ...options.engine?.tick },
  };
  const prefix = options.prefix ?? "tw";
  const logger: Logger = options.engine?.logger ?? jsonLogger();
  engineOptions.logger = logger;

  const { store, redis } = await openStore(options.redisUrl, prefix, logger);
  let app: FetchApp = { fetch: () => new Response("starting", { status: 503 }) };
  let server: Awaited<ReturnType<typeof serve>>;
  const cleanups: Array<() => unknown> = [];
  try {
    server = await serve(
      { fetch: (request) => app.fetch(request) },
      {
        port,
        hostname: options.hostname ?? (dev ? "127.0.0.1" : "0.0.0.0"),
        signals: options.signals ?? ["SIGINT", "SIGTERM"],
        shutdownTimeoutMs: options.shutdownTimeoutMs ?? (dev ? 2_000 : 10_000),
        onShutdown: async () => {
          for (const cleanup of cleanups) await cleanup();
        },
      },
    );
  } catch (error) {
    await redis?.quit().catch(() => undefined);
    const code = (error as { code?: unknown }).code;
    if (code === "EADDRINUSE") {
      throw new StartError(`port ${port} is in use: set PORT (or --port) to another one`, {
        cause: error,
      });
    }
    throw error;
  }

  const transport = new LocalTransport({
    workerUrl: `${server.url}/v1/worker`,
    failureCallbackUrl: `${server.url}/v1/dead`,
    signingKey: options.signingKey ?? randomBytes(32).toString("base64url"),
  });
  const engine = createEngine({ store, transport, handlers: options.handlers, ...engineOptions });
  app = createApp({
    engine,
    dev,
    publicUrl: server.url,
    ...(options.tickSecret ? { tickSecret: options.tickSecret } : {}),
    ...(apiKeys.length > 0 ? { authorize: apiKeyAuthorize(apiKeys) } : {}),
  });
  const ticker = startTicker(engine, tickEveryMs, { signal: server.signal, logger });
  cleanups.push(
    () => ticker.stop(),
    () => transport.close(),
    () => store.close?.(),
    () => redis?.quit().catch(() => undefined),
  );
  if (!dev && !redis)
    logger.warn("tickwork: in-memory store outside dev: state is lost on restart");

  const banner = formatBanner({
    mode: dev ? "dev" : "start",
    url: server.url,
    store: options.redisUrl ? { redisUrl: options.redisUrl, prefix } : "memory",
    tickEveryMs,
    horizonMs: engine.options.tick.horizonMs,
    auth: apiKeys.length > 0,
    handlers: Object.keys(options.handlers),
  });
  if (options.print !== false) (options.print ?? console.log)(banner);
  return { url: server.url, port: server.port, engine, banner, close: server.close };
}

/** Memory, or Redis over ioredis (checked with a PING so a wrong URL fails at start, not later). */
async function openStore(
  redisUrl: string | undefined,
  prefix: string,
  logger: Logger,
): Promise<{ store: Store; redis?: Redis }> {
  if (!redisUrl) return { store: new MemoryStore() };
  // Loaded only when asked for: the memory setup needs no Redis client installed.
  const { Redis } = await import("ioredis");
  let connected = false;
  const redis = new Redis(redisUrl, {
    lazyConnect: true,
    // Fail a command after a few reconnect attempts instead of queueing it for long: the API
    // answers 503 and the tick timer tries again a second later.
    maxRetriesPerRequest: 2,
    connectTimeout: 5_000,
    // No retries before the first connection (a wrong URL fails the start at once); then back off.
    retryStrategy: (times) => (connected ? Math.min(times * 100, 2_000) : null),
  });
  // ioredis emits an error on every reconnect attempt: log the first of each outage only.
  let lastError: Error | undefined;
  redis.on("error", (error: Error) => {
    if (connected && lastError === undefined) {
      logger.warn("redis connection error; retrying", { error: error.message });
    }
    lastError = error;
  });
  redis.on("ready", () => {
    if (connected && lastError) logger.info("redis connection restored");
    lastError = undefined;
  });
  try {
    await redis.connect();
    await redis.ping();
    connected = true;
  } catch (error) {
    redis.disconnect();
    const reason = (lastError ?? (error as Error)).message;
    throw new StartError(`cannot reach Redis at ${redactRedisUrl(redisUrl)}: ${reason}`, {
      cause: error,
    });
  }
  return { store: new RedisStore({ client: fromIoredis(redis), prefix }), redis };
}
