/**
 * @module
 * Opening the store of a Node server: memory, Redis over TCP (ioredis), or Redis over Upstash's
 * REST API (`@upstash/redis`) — each checked at start, so a wrong URL or token fails the start
 * instead of every request after it.
 */
import type { Logger } from "../../engine/logger.ts";
import { MemoryStore } from "../../store/memory/index.ts";
import type { Store, StoreRetention } from "../../store/port.ts";
import {
  type BlockingClient,
  fromIoredis,
  RedisStore,
  type StreamsClient,
} from "../../store/redis/index.ts";
import { loadPeer } from "../peer.ts";
import { redactRedisUrl } from "./banner.ts";
import { StartError } from "./errors.ts";
import { connectIoredis } from "./ioredis.ts";

/** Where state lives. */
export type StoreTarget = (
  | { kind: "memory" }
  | { kind: "redis"; url: string; prefix: string; dispatch?: "outbox" | "streams" }
  | { kind: "upstash"; url: string; token: string; prefix: string }
) & {
  /** What finished jobs, runs and idempotency keys are kept (the store's defaults where left out). */
  retention?: Partial<StoreRetention>;
};

/** An open store, and how to let go of its connection. */
export interface OpenStore {
  store: Store;
  /** Close the connection (idempotent, never throws). */
  close(): Promise<void>;
  /** The ioredis client, for Redis over TCP (the Streams transport shares it). */
  redis?: StreamsClient;
}

/** How long the start-up check may take before the store counts as unreachable. */
const CHECK_TIMEOUT_MS = 5_000;

/**
 * Open `target` and check that it answers.
 * @throws StartError when it does not (the message names it, without its password).
 *
 * @example
 * const { store, close } = await openStore({ kind: "redis", url: "redis://127.0.0.1:6379", prefix: "tw" }, logger);
 */
export async function openStore(target: StoreTarget, logger: Logger): Promise<OpenStore> {
  if (target.kind === "memory") {
    const retention = target.retention ? { retention: target.retention } : {};
    return { store: new MemoryStore(retention), close: async () => {} };
  }
  if (target.kind === "upstash") return openUpstash(target);
  return openIoredis(target, logger);
}

/** `@upstash/redis` fits the store's script client as is; checked by reading the server's clock. */
async function openUpstash(target: {
  url: string;
  token: string;
  prefix: string;
  retention?: Partial<StoreRetention>;
}): Promise<OpenStore> {
  // Loaded only when asked for, like ioredis.
  const { Redis } = await loadPeer(
    "@upstash/redis",
    "UPSTASH_REDIS_REST_URL (Upstash Redis over REST)",
    () => import("@upstash/redis"),
  );
  const client = (retry?: false) =>
    new Redis({ url: target.url, token: target.token, ...(retry === false ? { retry } : {}) });
  // The check fails at once (the client's default retries take seconds); the store keeps them.
  const check = new RedisStore({ client: client(false), prefix: target.prefix });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    // `now` runs a script: this checks the URL, the token and EVAL support in one request.
    await Promise.race([
      check.now(),
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)),
          CHECK_TIMEOUT_MS,
        );
      }),
    ]);
  } catch (error) {
    throw new StartError(
      `cannot use Upstash Redis at ${redactRedisUrl(target.url)}: ${(error as Error).message}`,
      { cause: error, atRuntime: true },
    );
  } finally {
    clearTimeout(timer);
  }
  const store = new RedisStore({
    client: client(),
    prefix: target.prefix,
    ...(target.retention ? { retention: target.retention } : {}),
  });
  return { store, close: async () => {} };
}

/** ioredis, checked with a PING; reconnects with backoff after the first connection. */
async function openIoredis(
  target: {
    url: string;
    prefix: string;
    dispatch?: "outbox" | "streams";
    retention?: Partial<StoreRetention>;
  },
  logger: Logger,
): Promise<OpenStore> {
  const { redis, close } = await connectIoredis({
    url: target.url,
    purpose: "REDIS_URL (Redis over TCP)",
    // Fail a command after a few reconnect attempts instead of queueing it for long: the API
    // answers 503 and the tick timer tries again a second later.
    maxRetriesPerRequest: 2,
    connectTimeoutMs: CHECK_TIMEOUT_MS,
    onOutage: (error) => logger.warn("redis connection error; retrying", { error: error.message }),
    onRestored: () => logger.info("redis connection restored"),
  });
  const store = new RedisStore({
    client: fromIoredis(redis),
    prefix: target.prefix,
    dispatch: target.dispatch ?? "outbox",
    ...(target.retention ? { retention: target.retention } : {}),
    // The realtime streams block on a duplicate connection (XREAD BLOCK), never on this one.
    blocking: redis as unknown as BlockingClient,
  });
  return { store, close, redis: redis as unknown as StreamsClient };
}
