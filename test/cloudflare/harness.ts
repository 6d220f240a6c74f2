/**
 * What the workerd tests share: random secrets, a free loopback port for the Worker, and the
 * Redis side — real Redis over TCP (the store as the Worker sees it, read directly) behind the
 * Upstash-compatible REST bridge the Worker talks to — plus the QStash double with keys of its own.
 */
import { randomBytes } from "node:crypto";
import { Redis as IORedis } from "ioredis";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { type RedisRestServer, serveRedisRest } from "../../src/tools/redis-rest/index.ts";
import { type QStashDouble, startQStashDouble } from "../support/qstash-double/index.ts";

export const REDIS_URL = "redis://127.0.0.1:6379";

/** `<label>_<24 random hex digits>`. */
export const secret = (label: string) => `${label}_${randomBytes(12).toString("hex")}`;

/** A plain-text binding for `unstable_startWorker`. */
export const text = (value: string) => ({ type: "plain_text" as const, value });

/**
 * A loopback port nothing listens on right now (the Worker must know its URL before it starts).
 * Not retried when taken meanwhile: wrangler then waits without an error.
 */
export { freePort } from "../support/free-port.ts";

/** Redis under `prefix`, over TCP and behind the REST bridge (bearer `restToken`). */
export async function startRedisBehindRest(
  prefix: string,
  restToken: string,
): Promise<{ redis: IORedis; store: RedisStore; bridge: RedisRestServer }> {
  const redis = new IORedis(REDIS_URL);
  const store = new RedisStore({ client: fromIoredis(redis), prefix });
  const bridge = await serveRedisRest({
    redisUrl: REDIS_URL,
    token: restToken,
    port: 0,
    signals: false,
    log: () => {},
  });
  return { redis, store, bridge };
}

/** The QStash double with non-default credentials: a pass proves the Worker verifies with its own. */
export function startQStashWithSecrets(): Promise<QStashDouble> {
  return startQStashDouble({
    token: secret("qstash"),
    currentSigningKey: secret("sig_current"),
    nextSigningKey: secret("sig_next"),
    backoffScale: 0.001,
  });
}
