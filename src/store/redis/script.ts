/**
 * @module
 * How the Redis store runs its Lua: the narrowest client shape both `@upstash/redis` and ioredis
 * can satisfy, the ioredis adapter, and `safeEval` (EVALSHA, falling back to EVAL on NOSCRIPT).
 */

/** A generated script: see `scripts.generated.ts` (built by `scripts/gen-lua.ts`). */
export interface LuaScript {
  /** The Store operation it implements. */
  readonly name: string;
  /** How many leading arguments are KEYS. */
  readonly numberOfKeys: number;
  /** Lua source, includes inlined. */
  readonly source: string;
  /** SHA-1 of `source`, computed at generation time. */
  readonly sha1: string;
}

/**
 * What the Redis store needs from a client: EVAL and EVALSHA with keys and arguments as arrays.
 * This is exactly the shape of `@upstash/redis`'s `Redis#eval` / `Redis#evalsha`, so an Upstash
 * client is passed as is (no adapter; `test/contract/upstash.test.ts` runs the Store contract on
 * it, against the `tickwork redis-rest` bridge); wrap ioredis with {@link fromIoredis}.
 *
 * Results may arrive raw (ioredis) or already JSON-parsed (`@upstash/redis` parses string results
 * by default); the store decodes both.
 *
 * @example
 * import { Redis } from "@upstash/redis";
 * const store = new RedisStore({ client: Redis.fromEnv() });
 */
export interface ScriptClient {
  evalsha(sha1: string, keys: string[], args: (string | number)[]): Promise<unknown>;
  eval(script: string, keys: string[], args: (string | number)[]): Promise<unknown>;
}

/** The part of an ioredis client {@link fromIoredis} uses (its `eval` takes `numkeys`). */
export interface IoredisScripting {
  eval(script: string, numkeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  evalsha(sha1: string, numkeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
}

/**
 * Adapts an ioredis client (or cluster) to {@link ScriptClient}.
 *
 * @example
 * import { Redis } from "ioredis";
 * const store = new RedisStore({ client: fromIoredis(new Redis(process.env.REDIS_URL)) });
 */
export function fromIoredis(client: IoredisScripting): ScriptClient {
  return {
    evalsha: (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args),
    eval: (script, keys, args) => client.eval(script, keys.length, ...keys, ...args),
  };
}

/**
 * Runs `script` by its SHA-1 and, when Redis does not have it cached (a NOSCRIPT error, e.g.
 * after a restart, a SCRIPT FLUSH or on an Upstash replica), once more with its source, which
 * also caches it. Costs one round trip when cached.
 *
 * @example
 * const now = await safeEval(client, scripts.now, [], []);
 */
export async function safeEval(
  client: ScriptClient,
  script: LuaScript,
  keys: string[],
  args: (string | number)[],
): Promise<unknown> {
  try {
    return await client.evalsha(script.sha1, keys, args);
  } catch (error) {
    if (!isNoScript(error)) throw error;
    return client.eval(script.source, keys, args);
  }
}

function isNoScript(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return message.toLowerCase().includes("noscript");
}
