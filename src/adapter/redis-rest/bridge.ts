/**
 * @module
 * `createRedisRestBridge`: the Upstash Redis REST API, as `@upstash/redis` speaks it, in front of
 * any Redis. Three routes, all `POST` with a JSON body and `Authorization: Bearer <token>`:
 * `/` runs one command (`{ result }`, or 400 `{ error }` with Redis's message), `/pipeline` runs
 * commands in order (200, one `{ result }` or `{ error }` each) and `/multi-exec` runs them as one
 * MULTI … EXEC transaction (200 as a pipeline, or 400 `{ error }` when Redis discards it).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { parseCommand, parseCommands } from "./commands.ts";
import { encodeBase64, wantsBase64 } from "./encoding.ts";
import { RedisRestError } from "./errors.ts";
import {
  type BridgeRedis,
  type Outcome,
  runCommand,
  runPipeline,
  runTransaction,
} from "./execute.ts";

/** Options of {@link createRedisRestBridge}. */
export interface RedisRestBridgeOptions {
  /**
   * The Redis to forward to: an ioredis client. One connection serves every request (commands
   * are pipelined on it; a transaction is written in one piece, so nothing interleaves).
   * @example new Redis("redis://127.0.0.1:6379")
   */
  redis: BridgeRedis;
  /**
   * The token clients must send as `Authorization: Bearer <token>`: what they have as
   * `UPSTASH_REDIS_REST_TOKEN`. Compared in constant time.
   */
  token: string;
  /**
   * Largest request body accepted, in bytes; larger ones get 413.
   * @default 10_485_760 (10 MiB, Upstash's request limit on its free and pay-as-you-go plans)
   */
  maxBodyBytes?: number;
}

/** The paths the bridge serves, each with `POST` only. */
const ROUTES = ["/", "/pipeline", "/multi-exec"] as const;

/**
 * The bridge as a Hono app (`app.fetch` is a Web handler; serve it with `serveRedisRest`, or mount
 * it in your own server).
 *
 * @example
 * import { Redis as IORedis } from "ioredis";
 * const bridge = createRedisRestBridge({ redis: new IORedis(process.env.REDIS_URL!), token });
 * // then: new Redis({ url: "http://127.0.0.1:8079", token }) from "@upstash/redis"
 */
export function createRedisRestBridge(options: RedisRestBridgeOptions): Hono {
  if (options.token === "") throw new RangeError("createRedisRestBridge needs a non-empty token");
  const { redis } = options;
  const guard = [
    requireToken(options.token),
    limitBody(options.maxBodyBytes ?? 10 * 1024 * 1024),
  ] as const;

  const app = new Hono();
  app.post("/", ...guard, async (c) => {
    const outcome = await runCommand(redis, parseCommand(await readJson(c)));
    if ("error" in outcome) return c.json(outcome, 400);
    return c.json(encodeOutcome(outcome, wantsBase64(c.req.header("upstash-encoding"))));
  });
  app.post("/pipeline", ...guard, async (c) => {
    const outcomes = await runPipeline(redis, parseCommands(await readJson(c)));
    const base64 = wantsBase64(c.req.header("upstash-encoding"));
    return c.json(outcomes.map((outcome) => encodeOutcome(outcome, base64)));
  });
  app.post("/multi-exec", ...guard, async (c) => {
    const outcomes = await runTransaction(redis, parseCommands(await readJson(c)));
    const base64 = wantsBase64(c.req.header("upstash-encoding"));
    return c.json(outcomes.map((outcome) => encodeOutcome(outcome, base64)));
  });
  for (const path of ROUTES) {
    app.all(path, function methodNotAllowed(c) {
      c.header("Allow", "POST");
      throw new RedisRestError(405, `method ${c.req.method} is not allowed: send POST`);
    });
  }
  app.notFound((c) =>
    c.json(
      {
        error: `not found: ${c.req.path}. This bridge serves POST /, /pipeline and /multi-exec (no path-style commands)`,
      },
      404,
    ),
  );
  app.onError((error, c) => {
    if (error instanceof RedisRestError) return c.json({ error: error.message }, error.status);
    return c.json({ error: `ERR internal error in the REST bridge: ${error.message}` }, 500);
  });
  return app;
}

function encodeOutcome(outcome: Outcome, base64: boolean): Outcome {
  return base64 && "result" in outcome ? { result: encodeBase64(outcome.result) } : outcome;
}

/**
 * 401 unless `Authorization: Bearer <token>` carries exactly `token`. Compares SHA-256 digests in
 * constant time (equal lengths whatever was sent); node:crypto, since every request pays for it.
 */
function requireToken(token: string): MiddlewareHandler {
  const expected = sha256(token);
  return async function requireToken(c, next) {
    const presented = /^Bearer +(\S+) *$/i.exec(c.req.header("authorization") ?? "")?.[1];
    if (presented === undefined || !timingSafeEqual(sha256(presented), expected)) {
      c.header("WWW-Authenticate", 'Bearer realm="redis-rest"');
      throw new RedisRestError(401, "Unauthorized: missing or invalid token");
    }
    await next();
  };
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/** 413 for a body over `maxBytes` (declared or actually sent). */
function limitBody(maxBytes: number): MiddlewareHandler {
  return bodyLimit({
    maxSize: maxBytes,
    onError: (c) => c.json({ error: `request body is larger than ${maxBytes} bytes` }, 413),
  });
}

/** The JSON body; 400 unless the request says `Content-Type: application/json` and is JSON. */
async function readJson(c: Context): Promise<unknown> {
  const type = c.req.header("content-type")?.split(";")[0]?.trim().toLowerCase();
  if (type !== "application/json") {
    throw new RedisRestError(
      400,
      `Content-Type must be application/json, got ${type ? JSON.stringify(type) : "none"}`,
    );
  }
  try {
    return await c.req.json();
  } catch (error) {
    throw new RedisRestError(400, "ERR the request body is not valid JSON", { cause: error });
  }
}
