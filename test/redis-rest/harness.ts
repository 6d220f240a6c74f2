/**
 * @module
 * The REST bridge for tests, started on a free port on first use, in front of the shared Redis at
 * 127.0.0.1:6379; plus `@upstash/redis` clients pointed at it and prefix cleanup. Test files share
 * modules (docs/adr/0044-test-files-share-modules.md): the bridge is closed after the tests of the
 * first file that loads this module, and a later file starts another, which lives as long as its
 * worker (a server in this process). For tests that send server-wide commands, `privateBridge`
 * puts a bridge in front of a private redis-server, which the file stops itself.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "@upstash/redis";
import { Redis as IORedis } from "ioredis";
import { afterAll } from "vitest";
import {
  type RedisRestServer,
  type ServeRedisRestOptions,
  serveRedisRest,
} from "../../src/tools/redis-rest/index.ts";
import { onFreePort } from "../support/free-port.ts";

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

/**
 * Deletes every key under any of `prefixes` (`{prefix}…` or `prefix:…`) in one SCAN of the whole
 * keyspace, for a file that used many prefixes: {@link deletePrefix} once per prefix scans the
 * keyspace once per prefix, and the shared server may hold many keys by then.
 */
export async function deletePrefixes(prefixes: readonly string[]): Promise<void> {
  if (prefixes.length === 0) return;
  const wanted = new Set(prefixes);
  const prefixOf = (key: string): string | undefined => {
    if (key.startsWith("{")) {
      const end = key.indexOf("}");
      return end > 0 ? key.slice(1, end) : undefined;
    }
    const colon = key.indexOf(":");
    return colon > 0 ? key.slice(0, colon) : undefined;
  };
  const redis = new IORedis(REDIS_URL);
  try {
    let cursor = "0";
    do {
      const [next, found] = await redis.scan(cursor, "COUNT", 1000);
      const mine = found.filter((key) => {
        const prefix = prefixOf(key);
        return prefix !== undefined && wanted.has(prefix);
      });
      if (mine.length > 0) await redis.del(...mine);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

afterAll(async () => {
  const started = bridge;
  bridge = undefined;
  await (await started)?.close();
});

/** A private redis-server: its URL, and how to stop it. */
export interface PrivateRedis {
  url: string;
  stop(): Promise<void>;
}

/**
 * `redis-server` on a free loopback port, without persistence, its working directory (where a
 * SAVE would write) a fresh temporary one; resolves once it logs that it accepts connections.
 */
export function startPrivateRedis(): Promise<PrivateRedis> {
  // The port taken meanwhile: it exits at once, saying so; then another port.
  return onFreePort(/Address already in use/, startPrivateRedisOn);
}

async function startPrivateRedisOn(port: number): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), "tickwork-redis-rest-"));
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { cwd: dir, stdio: ["ignore", "pipe", "ignore"] },
  );
  // `close`: its output is read to the end (the reason it stopped, e.g. the port in use).
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let log = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes("Ready to accept connections")) resolve();
    });
    exited.then(() => {
      rmSync(dir, { recursive: true, force: true });
      reject(new Error(`redis-server exited before it was ready:\n${log}`));
    });
  });
  child.stdout?.resume();
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      child.kill("SIGKILL");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A bridge in front of a private redis-server, and that server. */
export interface PrivateBridge {
  bridge: RedisRestServer;
  server: PrivateRedis;
  /** ioredis on the private server's database `db`, straight (not through the bridge). */
  direct(db?: number): IORedis;
  /** `@upstash/redis` on the bridge (no retries, no telemetry). */
  client(options?: UpstashOptions): Redis;
  /** POST `body` as JSON with the token to `path` over real HTTP. */
  post(path: string, body: unknown): Promise<{ status: number; json: unknown }>;
  /** Close the bridge and the connections, and stop the server. */
  stop(): Promise<void>;
}

/**
 * A private redis-server and a bridge on it, for commands that would harm a shared Redis: call it
 * in a `beforeAll` and its `stop` in the file's `afterAll`. (Not a hook of this module's own:
 * test files share modules (docs/adr/0044-test-files-share-modules.md), so a hook registered
 * when this module loads belongs to the first file that loads it, and the servers of the other
 * files would outlive the run.)
 */
export async function privateBridge(
  options: Partial<Omit<ServeRedisRestOptions, "redisUrl">> = {},
): Promise<PrivateBridge> {
  const server = await startPrivateRedis();
  const connections = new Map<number, IORedis>();
  const direct = (db = 0) => {
    let redis = connections.get(db);
    if (!redis) {
      redis = new IORedis(`${server.url}/${db}`);
      connections.set(db, redis);
    }
    return redis;
  };
  const token = options.token ?? BRIDGE_TOKEN;
  const bridge = await serveRedisRest({
    redisUrl: server.url,
    token,
    port: 0,
    signals: false,
    log: () => {},
    ...options,
  });
  return {
    async stop() {
      await bridge.close();
      for (const redis of connections.values()) redis.disconnect();
      await server.stop();
    },
    bridge,
    server,
    direct,
    client: (clientOptions = {}) =>
      new Redis({ url: bridge.url, token, retry: false, enableTelemetry: false, ...clientOptions }),
    async post(path, body) {
      const res = await fetch(`${bridge.url}${path}`, {
        method: "POST",
        headers: { "Content-Type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: await res.json() };
    },
  };
}
