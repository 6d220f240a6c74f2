/**
 * @module
 * `createRedisRestBridge`: the Upstash Redis REST API, as `@upstash/redis` speaks it, in front of
 * any Redis. Three routes, all `POST` with a JSON body and `Authorization: Bearer <token>`:
 * `/` runs one command (`{ result }`, or 400 `{ error }` with Redis's message), `/pipeline` runs
 * commands in order (200, one `{ result }` or `{ error }` each) and `/multi-exec` runs them as one
 * MULTI … EXEC transaction (200 as a pipeline, or 400 `{ error }` when Redis discards it).
 *
 * What the token reaches: the data and scripting commands of the one database the Redis client is
 * on (`commands.ts`: everything server-wide, administrative or cross-database is refused with
 * Upstash's `ERR Command is not available: …`), scripts kept in that database (`scripts.ts`), and
 * requests of bounded size (`body.ts`: 413 past `maxBodyBytes`, `maxCommands` or `maxArguments`).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { readBoundedJson } from "./body.ts";
import { parseCommand, parseCommands } from "./commands.ts";
import { encodeReply, type JsonReply, wantsBase64 } from "./encoding.ts";
import { RedisRestError } from "./errors.ts";
import {
  type BridgeRedis,
  type Outcome,
  runCommand,
  runPipeline,
  runTransaction,
  type Target,
} from "./execute.ts";
import { ScriptSandbox } from "./scripts.ts";

/** Options of {@link createRedisRestBridge}. */
export interface RedisRestBridgeOptions {
  /**
   * The Redis to forward to: an ioredis client. One connection serves every request (commands
   * are pipelined on it; a transaction is written in one piece, so nothing interleaves). Its
   * database (`redis://…/3`, or `db`) is the only one clients reach.
   * @example new Redis("redis://127.0.0.1:6379")
   */
  redis: BridgeRedis;
  /**
   * The token clients must send as `Authorization: Bearer <token>`: what they have as
   * `UPSTASH_REDIS_REST_TOKEN`. Compared in constant time.
   */
  token: string;
  /**
   * Largest request body accepted, in bytes; larger ones get 413 (`ERR max request size
   * exceeded`), before the rest is read.
   * @default 10_485_760 (10 MiB, Upstash's request limit on its free and pay-as-you-go plans)
   */
  maxBodyBytes?: number;
  /**
   * Most commands in one `/pipeline` or `/multi-exec` request; more get 413, counted while the
   * body arrives (before it is parsed). Upstash documents no count limit; this bounds the
   * bridge's memory (a command costs far more parsed and in flight than its bytes on the wire).
   * @default 10_000 (ten of `@upstash/redis`'s auto-pipelining batches, at most 1,000 each)
   */
  maxCommands?: number;
  /**
   * Most arguments in one request, all its commands together (their names included); more get
   * 413, counted while the body arrives. What an argument costs the bridge (about 100 bytes
   * parsed and in flight, however short it is on the wire) is what this bounds: 10 MiB of
   * one-letter keys would be 2.5 million arguments and 400 MB.
   * @default 500_000 (measured: 70 to 90 MB of the bridge's memory at the most)
   */
  maxArguments?: number;
  /**
   * Sends `SCRIPT KILL` on a connection other than `redis` (which is waiting for the script).
   * Given, a request holding a script that has had no answer for `scriptTimeoutMs` calls it: a
   * script that never ends (`while true do end`) holds the whole Redis server, every database and
   * every other client, and the bridge refuses SCRIPT KILL to its clients. Redis can kill only a
   * script that has not written; one that has runs on (only `SHUTDOWN NOSAVE` stops it).
   * `serveRedisRest` passes one. @default none: no watch
   * @example () => killer.call("script", ["kill"])
   */
  killScripts?: (() => Promise<unknown>) | undefined;
  /**
   * How long a request holding a script may go unanswered before `killScripts` is called, in
   * ms. Redis itself runs nothing else for another client before its `busy-reply-threshold`
   * (5 s by default), so a kill lands then at the earliest.
   * @default 5_000
   */
  scriptTimeoutMs?: number;
}

/** Defaults of {@link RedisRestBridgeOptions}. */
export const REDIS_REST_DEFAULTS = {
  maxBodyBytes: 10 * 1024 * 1024,
  maxCommands: 10_000,
  maxArguments: 500_000,
  scriptTimeoutMs: 5_000,
} as const;

/** Content types a body is read as JSON under. */
const READ_AS_JSON = new Set([
  "application/json",
  "text/plain",
  "application/x-www-form-urlencoded",
]);

/** The longest a Node timer waits (2^31 − 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;

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
  // A client presents it as `Authorization: Bearer <token>`, one word: a token with a space
  // could never be presented.
  if (!/^\S+$/.test(options.token)) {
    throw new RangeError("createRedisRestBridge needs a non-empty token without spaces");
  }
  const limits = {
    maxBytes: positiveInteger(
      "maxBodyBytes",
      options.maxBodyBytes,
      REDIS_REST_DEFAULTS.maxBodyBytes,
    ),
    maxCommands: positiveInteger(
      "maxCommands",
      options.maxCommands,
      REDIS_REST_DEFAULTS.maxCommands,
    ),
    maxArguments: positiveInteger(
      "maxArguments",
      options.maxArguments,
      REDIS_REST_DEFAULTS.maxArguments,
    ),
  };
  const scriptTimeoutMs = positiveInteger(
    "scriptTimeoutMs",
    options.scriptTimeoutMs,
    REDIS_REST_DEFAULTS.scriptTimeoutMs,
  );
  const target: Target = {
    redis: options.redis,
    scripts: new ScriptSandbox(),
    scriptWatch: options.killScripts && {
      timeoutMs: Math.min(scriptTimeoutMs, MAX_TIMER_MS),
      kill: options.killScripts,
    },
  };
  const guard = requireToken(options.token);
  const readJson = (c: Context, commands: boolean) => {
    checkContentType(c);
    return readBoundedJson(c.req.raw, limits, commands);
  };

  const app = new Hono();
  app.post("/", guard, async (c) => {
    const outcome = await runCommand(target, parseCommand(await readJson(c, false)));
    if ("error" in outcome) return c.json(outcome, 400);
    return c.json(encodeOutcome(outcome, wantsBase64(c.req.header("upstash-encoding"))));
  });
  app.post("/pipeline", guard, async (c) => {
    const outcomes = await runPipeline(target, parseCommands(await readJson(c, true)));
    const base64 = wantsBase64(c.req.header("upstash-encoding"));
    return c.json(outcomes.map((outcome) => encodeOutcome(outcome, base64)));
  });
  app.post("/multi-exec", guard, async (c) => {
    const outcomes = await runTransaction(target, parseCommands(await readJson(c, true)));
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

/** An outcome as JSON: its reply's strings as text, or with `base64` as the base64 of their bytes. */
function encodeOutcome(
  outcome: Outcome,
  base64: boolean,
): { result: JsonReply } | { error: string } {
  return "result" in outcome ? { result: encodeReply(outcome.result, base64) } : outcome;
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

/** A whole number ≥ 1, or `fallback` when not given; a RangeError otherwise. */
function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`createRedisRestBridge: ${name} must be a whole number ≥ 1, got ${value}`);
  }
  return value;
}

/**
 * 400 for a body that says it is something JSON is not (`text/html`, `multipart/form-data`…).
 * None, `application/json`, `text/plain` and curl's default form type are read as JSON, as
 * Upstash reads them: its own examples send `curl -d '["SET","k","v"]'`. No browser form can
 * send the bearer token, so this is no cross-site gate.
 */
function checkContentType(c: Context): void {
  const type = c.req.header("content-type")?.split(";")[0]?.trim().toLowerCase();
  if (type !== undefined && type !== "" && !READ_AS_JSON.has(type)) {
    throw new RedisRestError(
      400,
      `Content-Type must be application/json (or none), got ${JSON.stringify(type)}`,
    );
  }
}
