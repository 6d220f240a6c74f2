/**
 * @module
 * A checked ioredis connection, as a long-lived Node process wants one: the client loaded only
 * when asked for, no retries before the first connection (a wrong URL fails at once), a PING
 * before it is handed out, reconnects with backoff afterwards, one note per outage instead
 * of ioredis's error on every reconnect attempt, and coalesced writes (the commands of one
 * event-loop turn share a socket write: `coalesceWrites`). The Node server's store (`openStore`)
 * and the REST bridge (`serveRedisRest`) both connect through it.
 */
import type { Redis } from "ioredis";
import { sendsCommandsDirectly } from "../../store/redis/script.ts";
import { loadPeer } from "../peer.ts";
import { redactRedisUrl } from "./banner.ts";
import { coalesceWrites } from "./coalesce.ts";
import { StartError } from "./errors.ts";

/** How long closing waits for QUIT's answer before it drops the connection. */
const QUIT_MS = 1_000;

/** Options of {@link connectIoredis}. */
export interface IoredisConnectOptions {
  /** The Redis to connect to. @example "redis://127.0.0.1:6379/3" */
  url: string;
  /**
   * What needs ioredis, named when the package is not installed.
   * @example "REDIS_URL (Redis over TCP)"
   */
  purpose: string;
  /**
   * During an outage, fail a command after this many reconnect attempts instead of queueing it
   * (the caller answers 503, or tries again later).
   */
  maxRetriesPerRequest: number;
  /**
   * Refuse a read-only replica (`ROLE`): a store's writes would all fail (READONLY). The REST
   * bridge passes `false`: in front of a replica it serves reads. @default true
   */
  refuseReplica?: boolean | undefined;
  /** How long the first connection may take. @default 5_000 */
  connectTimeoutMs?: number | undefined;
  /** The first error of an outage (after the first connection); later ones are not reported. */
  onOutage?: ((error: Error) => void) | undefined;
  /** The connection is back after an outage. */
  onRestored?: (() => void) | undefined;
}

/** An open, checked connection. */
export interface IoredisConnection {
  redis: Redis;
  /** Quit (disconnect if quitting fails). Idempotent, never throws. */
  close(): Promise<void>;
}

/**
 * Connect to `options.url` and PING it.
 * @throws StartError when Redis cannot be reached (the message names it, without its password);
 * MissingPeerError when ioredis is not installed.
 *
 * @example
 * const { redis, close } = await connectIoredis({
 *   url: "redis://127.0.0.1:6379",
 *   purpose: "REDIS_URL (Redis over TCP)",
 *   maxRetriesPerRequest: 2,
 * });
 */
/**
 * Whether the database a `redis://` or `rediss://` URL names (its path, and a `db` query
 * parameter, which ioredis also reads) is written as a whole number, or not given. ioredis reads
 * each with `parseInt`, so `/1e3` chose database 1, `/0x3` database 0 and `/5abc` database 5:
 * data went to another database than the one meant, without a word. Other forms (a socket path)
 * are left to ioredis.
 *
 * @example
 * databaseWritten("redis://h:6379/3");   // true
 * databaseWritten("redis://h:6379/1e3"); // false
 */
export function databaseWritten(url: string): boolean {
  if (!/^rediss?:\/\//i.test(url)) return true;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  const numbers = [parsed.pathname.replace(/^\//, ""), ...parsed.searchParams.getAll("db")];
  return numbers.every((text, i) => (i === 0 && text === "") || /^\d{1,9}$/.test(text));
}

export async function connectIoredis(options: IoredisConnectOptions): Promise<IoredisConnection> {
  // Loaded only when asked for: a setup without Redis over TCP needs no Redis client installed.
  const { Redis, Command } = await loadPeer("ioredis", options.purpose, () => import("ioredis"));
  let connected = false;
  const connectOptions = {
    // RESP2, as ioredis 5 speaks it: ioredis 6 speaks RESP3 by default, where some replies take
    // other shapes (XREADGROUP's; src/store/redis/read-reply.ts reads both).
    protocol: 2,
    lazyConnect: true,
    maxRetriesPerRequest: options.maxRetriesPerRequest,
    connectTimeout: options.connectTimeoutMs ?? 5_000,
    // No retries before the first connection (a wrong URL fails the start at once); then back off.
    retryStrategy: (times: number) => (connected ? Math.min(times * 100, 2_000) : null),
  };
  const redis = new Redis(options.url, connectOptions);
  // The commands of one event-loop turn (the submits of concurrent requests) go out in one socket
  // write instead of one each: a write is a system call (docs/adr/0039-coalesced-writes.md).
  coalesceWrites(redis);
  // Its script calls skip ioredis's copy of their arguments
  // (docs/adr/0055-script-commands-without-flat.md).
  sendsCommandsDirectly(redis, Command);
  // ioredis emits an error on every reconnect attempt: report the first of each outage only.
  let lastError: Error | undefined;
  // The first failure of the start says why: a wrong password is WRONGPASS, then NOAUTH for
  // every command after it.
  let firstError: Error | undefined;
  redis.on("error", (error: Error) => {
    if (connected && lastError === undefined) options.onOutage?.(error);
    if (!connected) firstError ??= error;
    lastError = error;
  });
  redis.on("ready", () => {
    if (connected && lastError) options.onRestored?.();
    lastError = undefined;
  });
  // The database the URL names (ioredis reads the path after the port as a number): one it
  // cannot parse would crash the first connection, one Redis does not have would leave every
  // command on database 0 (ioredis only reports the failed SELECT as an error event).
  const db = (redis.options as { db?: number }).db ?? 0;
  if (!Number.isInteger(db) || db < 0 || !databaseWritten(options.url)) {
    redis.disconnect();
    throw new StartError(
      `the database in ${redactRedisUrl(options.url)} must be a whole number (the path after the port, e.g. redis://host:6379/0)`,
    );
  }
  const timeoutMs = options.connectTimeoutMs ?? 5_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let selecting = false;
  const check = (async () => {
    await redis.connect();
    await redis.ping();
    // A replica refuses every write (READONLY): the start's first write failed with a stack, and
    // a server of the `api` role started, then answered every submit 500. A Redis that does not
    // let this client ask (ROLE renamed, or an ACL without it) is taken as a primary.
    if (options.refuseReplica !== false) {
      const role = await redis.call("ROLE").catch(() => undefined);
      if (Array.isArray(role) && (role[0] === "slave" || role[0] === "replica")) {
        throw new StartError(
          `Redis at ${redactRedisUrl(options.url)} is a read-only replica: point the URL at its primary`,
          { atRuntime: true },
        );
      }
    }
    selecting = true;
    if (db > 0) await redis.select(db);
  })();
  check.catch(() => {});
  try {
    // Bounded: a Redis that accepts the connection but never answers (paused, a partition, a
    // proxy whose backend is gone) fails the start instead of hanging it without a word.
    await Promise.race([
      check,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    connected = true;
  } catch (error) {
    if (error instanceof StartError) {
      redis.disconnect();
      throw error;
    }
    redis.disconnect();
    if (selecting && !(error instanceof Error && error.message.startsWith("no answer"))) {
      throw new StartError(
        `cannot use database ${db} of Redis at ${redactRedisUrl(options.url)}: ${(error as Error).message}`,
        { cause: error, atRuntime: true },
      );
    }
    const first = firstError ?? lastError ?? (error as Error);
    // A Redis that answered with an error (a password it refused) was reached.
    const verb = first.name === "ReplyError" ? "cannot use" : "cannot reach";
    throw new StartError(`${verb} Redis at ${redactRedisUrl(options.url)}: ${first.message}`, {
      cause: error,
      atRuntime: true,
    });
  } finally {
    clearTimeout(timer);
  }
  let closing: Promise<void> | undefined;
  return {
    redis,
    close: () => {
      // Bounded too: QUIT waits for an answer a Redis that does not answer never gives.
      let quitTimer: ReturnType<typeof setTimeout> | undefined;
      closing ??= Promise.race([
        redis.quit().catch(() => {}),
        new Promise<void>((resolve) => {
          quitTimer = setTimeout(resolve, QUIT_MS);
        }),
      ]).then(() => {
        clearTimeout(quitTimer);
        redis.disconnect();
      });
      return closing;
    },
  };
}
