/**
 * @module
 * The REST bridge for tests: one per test file (vitest gives each file its own modules), started
 * on a free port on first use, in front of the shared Redis at 127.0.0.1:6379, and closed after
 * the file's tests; plus `@upstash/redis` clients pointed at it and prefix cleanup.
 */
import { Redis } from "@upstash/redis";
import { Redis as IORedis } from "ioredis";
import { afterAll } from "vitest";
import { type RedisRestServer, serveRedisRest } from "../../src/adapter/redis-rest/index.ts";

export const REDIS_URL = "redis://127.0.0.1:6379";
export const BRIDGE_TOKEN = `test-${Math.random().toString(36).slice(2)}`;

let bridge: Promise<RedisRestServer> | undefined;

/** The file's bridge, started on first call. */
export function sharedBridge(): Promise<RedisRestServer> {
  bridge ??= serveRedisRest({
    redisUrl: REDIS_URL,
    token: BRIDGE_TOKEN,
    port: 0,
    signals: false,
    log: () => {},
  });
  return bridge;
}

/** The `@upstash/redis` options the tests vary. */
export interface UpstashOptions {
  enableAutoPipelining?: boolean;
  responseEncoding?: false | "base64";
  automaticDeserialization?: boolean;
}

/**
 * An `@upstash/redis` client on the file's bridge: defaults as in production (auto-pipelining,
 * base64 answers), but no retries (a failure shows at once) and no telemetry headers.
 */
export async function upstashClient(options: UpstashOptions = {}): Promise<Redis> {
  const { url } = await sharedBridge();
  return new Redis({ url, token: BRIDGE_TOKEN, retry: false, enableTelemetry: false, ...options });
}

/** A fresh key prefix (a hash tag, as the store uses). */
export function freshPrefix(tag = "rr"): string {
  return `${tag}${Math.random().toString(36).slice(2, 10)}`;
}

/** Deletes every key under `{prefix}` and `prefix:` (SCAN, never FLUSH: the server is shared). */
export async function deletePrefix(prefix: string): Promise<void> {
  const redis = new IORedis(REDIS_URL);
  try {
    for (const match of [`{${prefix}}:*`, `${prefix}:*`]) {
      let cursor = "0";
      do {
        const [next, found] = await redis.scan(cursor, "MATCH", match, "COUNT", 1000);
        if (found.length > 0) await redis.del(...found);
        cursor = next;
      } while (cursor !== "0");
    }
  } finally {
    redis.disconnect();
  }
}

afterAll(async () => {
  const started = bridge;
  bridge = undefined;
  await (await started)?.close();
});
