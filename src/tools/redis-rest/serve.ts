/**
 * @module
 * `serveRedisRest`: the REST bridge on a Node HTTP server, in front of the Redis at `redisUrl`
 * (checked with a PING first, so a wrong URL fails at start rather than on the first request).
 * Clients reach that URL's database only (`redis://host:6379/3` serves database 3).
 */
import { StartError } from "../../adapter/node/errors.ts";
import { connectIoredis } from "../../adapter/node/ioredis.ts";
import { type NodeServer, type ServeOptions, serve } from "../../adapter/node/serve.ts";
import { createRedisRestBridge } from "./bridge.ts";

/** Options of {@link serveRedisRest}. */
export interface ServeRedisRestOptions {
  /**
   * The Redis to put behind the bridge; its database (the path, default 0) is the only one
   * clients reach. @example "redis://127.0.0.1:6379"
   */
  redisUrl: string;
  /** The bearer token clients must send (their `UPSTASH_REDIS_REST_TOKEN`). */
  token: string;
  /**
   * Port to listen on; `0` picks a free one (read it from the result).
   * @default 8079
   */
  port?: number;
  /**
   * Interface to bind.
   * @default "127.0.0.1"
   * @example "0.0.0.0" // every interface, as in a container
   */
  hostname?: string;
  /**
   * Largest request body accepted, in bytes; larger ones get 413 before the rest is read.
   * @default 10_485_760 (10 MiB, Upstash's request limit on its free and pay-as-you-go plans)
   */
  maxBodyBytes?: number;
  /**
   * Most commands in one `/pipeline` or `/multi-exec` request; more get 413.
   * @default 10_000
   */
  maxCommands?: number;
  /**
   * Most arguments in one request, all its commands together; more get 413.
   * @default 500_000
   */
  maxArguments?: number;
  /**
   * How long a request holding a script may go unanswered before the bridge sends SCRIPT KILL on
   * a connection of its own (a script that never ends holds the whole server).
   * @default 5_000
   */
  scriptTimeoutMs?: number;
  /**
   * Signals that shut the bridge down and exit the process; `false` for none (call `close()`).
   * @default ["SIGINT", "SIGTERM"]
   */
  signals?: ServeOptions["signals"];
  /** Where connection and shutdown notes go. @default console.error */
  log?: (line: string) => void;
}

/** A running bridge. */
export interface RedisRestServer {
  /** What clients use as `UPSTASH_REDIS_REST_URL`, e.g. `http://127.0.0.1:8079`. */
  url: string;
  /** The port actually bound. */
  port: number;
  /** Stop accepting, let requests in flight finish, disconnect from Redis. Idempotent. */
  close(): Promise<void>;
}

/**
 * Serve the Upstash-compatible REST bridge in front of `redisUrl`. Throws a `StartError` when
 * Redis cannot be reached or the port is taken.
 *
 * @example
 * const bridge = await serveRedisRest({ redisUrl: "redis://127.0.0.1:6379", token: "dev-token" });
 * const redis = new Redis({ url: bridge.url, token: "dev-token" }); // from "@upstash/redis"
 */
export async function serveRedisRest(options: ServeRedisRestOptions): Promise<RedisRestServer> {
  const log = options.log ?? ((line: string) => console.error(line));
  const { redis, close: disconnect } = await connectIoredis({
    url: options.redisUrl,
    purpose: "the redis-rest bridge",
    // In front of a replica it serves reads (a write gets Redis's READONLY).
    refuseReplica: false,
    // During an outage a request fails after a reconnect attempt or two (503) instead of queueing:
    // the client sees the error; it does not retry on an HTTP status.
    maxRetriesPerRequest: 1,
    onOutage: (error) =>
      log(`tickwork redis-rest: Redis connection error, retrying: ${error.message}`),
    onRestored: () => log("tickwork redis-rest: Redis connection restored"),
  });

  // SCRIPT KILL goes on a connection of its own: the bridge's waits for the script.
  const { redis: killer, close: disconnectKiller } = await connectIoredis({
    url: options.redisUrl,
    purpose: "the redis-rest bridge's script watch",
    maxRetriesPerRequest: 1,
    refuseReplica: false,
  }).catch(async (error) => {
    await disconnect();
    throw error;
  });
  const disconnectAll = async () => {
    await Promise.all([disconnect(), disconnectKiller()]);
  };
  let app: ReturnType<typeof createRedisRestBridge>;
  try {
    app = createRedisRestBridge({
      redis,
      token: options.token,
      killScripts: () => killer.call("script", ["kill"]),
      ...(options.scriptTimeoutMs !== undefined
        ? { scriptTimeoutMs: options.scriptTimeoutMs }
        : {}),
      ...(options.maxBodyBytes !== undefined ? { maxBodyBytes: options.maxBodyBytes } : {}),
      ...(options.maxCommands !== undefined ? { maxCommands: options.maxCommands } : {}),
      ...(options.maxArguments !== undefined ? { maxArguments: options.maxArguments } : {}),
    });
  } catch (error) {
    // Options the bridge refuses (a token with a space, a cap that is no whole number): the
    // connections opened for it would keep the process alive.
    await disconnectAll();
    throw error;
  }
  let server: NodeServer;
  try {
    server = await serve(app, {
      port: options.port ?? 8079,
      hostname: options.hostname ?? "127.0.0.1",
      log,
      onShutdown: disconnectAll,
      ...(options.signals !== undefined ? { signals: options.signals } : {}),
    });
  } catch (error) {
    await disconnectAll();
    const code = (error as { code?: unknown }).code;
    const reason = code === "EADDRINUSE" ? "is in use" : `cannot be bound: ${String(error)}`;
    throw new StartError(`port ${options.port ?? 8079} ${reason}: choose another port`, {
      cause: error,
      atRuntime: true,
    });
  }
  return { url: server.url, port: server.port, close: server.close };
}
