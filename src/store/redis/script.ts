/**
 * @module
 * How the Redis store runs its Lua: the narrowest client shape both `@upstash/redis` and ioredis
 * can satisfy, the ioredis adapter, and `safeEval` (FCALL of a Redis function where the client
 * offers it, else EVALSHA, falling back to EVAL on NOSCRIPT).
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
  /**
   * Where the script's own code starts in `source`: before it, its header and the includes it
   * uses (definitions only); from it on, what runs per call.
   */
  readonly bodyStart: number;
  /** It never writes: its function is registered `no-writes` (runs over `maxmemory`). */
  readonly readOnly?: boolean;
}

/**
 * What the Redis store needs from a client: EVAL and EVALSHA with keys and arguments as arrays.
 * This is exactly the shape of `@upstash/redis`'s `Redis#eval` / `Redis#evalsha`, so an Upstash
 * client is passed as is (no adapter; the test suite runs the store contract on
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
  /**
   * Redis 7 functions, when the client can use them: `FCALL` of a function by name, and
   * `FUNCTION LOAD REPLACE` of a library. With both, each script runs as a function of its own
   * library (see {@link functionLibrary}), which defines the script's helpers once per server
   * instead of once per call. {@link fromIoredis} offers them on a single Redis server (not a
   * cluster).
   */
  fcall?(name: string, keys: string[], args: (string | number)[]): Promise<unknown>;
  functionLoad?(library: string): Promise<unknown>;
}

/** The part of an ioredis client {@link fromIoredis} uses (its `eval` takes `numkeys`). */
export interface IoredisScripting {
  eval(script: string, numkeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  evalsha(sha1: string, numkeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  fcall?(name: string, numkeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  function?(subcommand: "LOAD", replace: "REPLACE", code: string): Promise<unknown>;
  /** `true` on an ioredis `Cluster`: functions would have to be loaded on every node. */
  readonly isCluster?: boolean;
}

/**
 * Adapts an ioredis client (or cluster) to {@link ScriptClient}.
 *
 * @example
 * import { Redis } from "ioredis";
 * const store = new RedisStore({ client: fromIoredis(new Redis(process.env.REDIS_URL)) });
 */
export function fromIoredis(client: IoredisScripting): ScriptClient {
  const direct = directCommands(client);
  const adapted: ScriptClient = direct
    ? {
        evalsha: (sha1, keys, args) => direct("evalsha", sha1, keys, args),
        eval: (script, keys, args) => direct("eval", script, keys, args),
      }
    : {
        evalsha: (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args),
        eval: (script, keys, args) => client.eval(script, keys.length, ...keys, ...args),
      };
  const { fcall, function: fn } = client;
  if (client.isCluster === true || typeof fcall !== "function" || typeof fn !== "function") {
    return adapted;
  }
  adapted.fcall = direct
    ? (name, keys, args) => direct("fcall", name, keys, args)
    : (name, keys, args) => fcall.call(client, name, keys.length, ...keys, ...args);
  adapted.functionLoad = (library) => fn.call(client, "LOAD", "REPLACE", library);
  return adapted;
}

/** ioredis's `Command` class, as {@link directCommands} uses it. */
type IoredisCommandClass = new (
  name: string,
  args: string[],
  options: { replyEncoding: "utf8" },
) => { promise: Promise<unknown> };

/** The `Command` class of each client {@link sendsCommandsDirectly} was told of. */
const commandClasses = new WeakMap<object, IoredisCommandClass>();

/**
 * Let {@link fromIoredis} build the script commands of `client` itself, with `Command`, the class
 * of the ioredis module that made `client`. ioredis's command methods copy their arguments with
 * `Array.prototype.flat`, which on Node 20 costs about 150 ns an argument (a group of 32 submits,
 * some 350 arguments, about 50 µs); in a CPU profile of submits in pairs it was the largest single
 * item (docs/adr/0055-script-commands-without-flat.md). The arguments built here are flat already
 * and say so. `connectIoredis` (tickwork/node) calls this for the connections it makes.
 */
export function sendsCommandsDirectly(
  client: object,
  Command: abstract new (...args: never[]) => unknown,
): void {
  commandClasses.set(client, Command as unknown as IoredisCommandClass);
}

/** An argument list ioredis need not flatten: its `flat` answers the list itself. */
function flatList(): string[] {
  const list: string[] = [];
  // Assigned, not defined: `Object.defineProperty` made the list cost twice as much to build.
  (list as unknown as { flat: typeof returnThis }).flat = returnThis;
  return list;
}

function returnThis<T>(this: T): T {
  return this;
}

/**
 * `send(command, first, keys, args)`: `command first numkeys ...keys ...args` on `client` through
 * its `Command` class, when {@link sendsCommandsDirectly} gave one.
 */
function directCommands(client: IoredisScripting) {
  const Command = commandClasses.get(client);
  const sender = client as unknown as {
    sendCommand?: (command: unknown) => unknown;
    options?: { keyPrefix?: string; showFriendlyErrorStack?: boolean };
  };
  // A key prefix or friendly error stacks: the client's own methods handle those.
  if (!Command || typeof sender.sendCommand !== "function") return undefined;
  if (sender.options?.keyPrefix || sender.options?.showFriendlyErrorStack) return undefined;
  return (command: string, first: string, keys: string[], args: (string | number)[]) => {
    const list = flatList();
    list.push(first, String(keys.length));
    for (const key of keys) list.push(key);
    for (const arg of args) list.push(typeof arg === "string" ? arg : String(arg));
    const built = new Command(command, list, { replyEncoding: "utf8" });
    // Read at each call: a wrapper (coalesceWrites) may be installed after this adapter.
    sender.sendCommand!(built);
    return built.promise;
  };
}

/**
 * The name of `script`'s function, and of its library: one per source (`_r` for a read-only
 * one, registered `no-writes`, so a server holding it unflagged from an earlier version loads it
 * anew).
 */
export function functionName(script: LuaScript): string {
  let name = functionNames.get(script);
  if (name === undefined) {
    name = `tickwork_${script.name}_${script.sha1}${script.readOnly ? "_r" : ""}`;
    functionNames.set(script, name);
  }
  return name;
}

/** Names already written (one per script object; a call would otherwise build it each time). */
const functionNames = new WeakMap<LuaScript, string>();

/**
 * `script` as a Redis function library (`FUNCTION LOAD`): its includes run once, when the
 * library loads; its own code becomes the function's body. `KEYS` and `ARGV` are the library's
 * locals, set at the start of each call, so the includes that read them see the call's.
 */
export function functionLibrary(script: LuaScript): string {
  const name = functionName(script);
  return [
    `#!lua name=${name}`,
    "local KEYS, ARGV",
    script.source.slice(0, script.bodyStart),
    `redis.register_function{function_name='${name}', callback=function(keys, argv)`,
    "KEYS, ARGV = keys, argv",
    script.source.slice(script.bodyStart),
    // A script that never writes still runs over `maxmemory` (Redis refuses an unflagged one).
    script.readOnly ? "end, flags={'no-writes'}}" : "end}",
    "",
  ].join("\n");
}

/**
 * Per client: whether it uses functions (`undefined` until the first answer tells), and the
 * scripts Redis would not load as a library (they run as EVAL on that client).
 */
const functionState = new WeakMap<ScriptClient, { usable?: boolean; refused: Set<string> }>();

/**
 * Runs `script` by its SHA-1 and, when Redis does not have it cached (a NOSCRIPT error, e.g.
 * after a restart, a SCRIPT FLUSH or on an Upstash replica), once more with its source, which
 * also caches it. Costs one round trip when cached.
 *
 * @example
 * const now = await safeEval(client, scripts.now, [], []);
 */
export function safeEval(
  client: ScriptClient,
  script: LuaScript,
  keys: string[],
  args: (string | number)[],
): Promise<unknown> {
  if (client.fcall && client.functionLoad) {
    let state = functionState.get(client);
    if (!state) {
      state = { refused: new Set() };
      functionState.set(client, state);
    }
    if (state.usable !== false && !state.refused.has(script.sha1)) {
      const known = state;
      const failed = (error: unknown) => afterFailedCall(client, known, script, keys, args, error);
      let called: Promise<unknown>;
      try {
        called = client.fcall(functionName(script), keys, args);
      } catch (error) {
        return failed(error);
      }
      // Once functions are known to work, the call's own promise (no async layer per call).
      if (state.usable === true) return called.catch(failed);
      return called.then((answer) => {
        known.usable = true;
        return answer;
      }, failed);
    }
  }
  return evalScript(client, script, keys, args);
}

/** EVALSHA, and EVAL with the source when Redis does not have the script cached. */
async function evalScript(
  client: ScriptClient,
  script: LuaScript,
  keys: string[],
  args: (string | number)[],
): Promise<unknown> {
  try {
    try {
      return await client.evalsha(script.sha1, keys, args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return await client.eval(script.source, keys, args);
    }
  } catch (error) {
    throw unreachable(error) ?? error;
  }
}

/**
 * A failure to reach Redis through a REST client (`@upstash/redis`), which reports one as a plain
 * error (no socket code): the request's `fetch` failed (on Workers no code says why), the
 * endpoint's answer was not JSON (a gateway's error page), or it answered that Redis is
 * unavailable. Answered 503 `store_unavailable` (src/http/unavailable.ts), like a socket error.
 */
export class StoreUnreachableError extends Error {
  override name = "StoreUnreachableError";
}

/** Messages of `@upstash/redis` errors (and of Redis through it) that mean it is unreachable. */
const REST_UNAVAILABLE =
  /Redis is unavailable|^LOADING|^MASTERDOWN|^TRYAGAIN|timed? ?out|Service Unavailable|Bad Gateway/i;
/** `fetch` failures: Node's, browsers' and workerd's words for a request that got no answer. */
const FETCH_FAILED = /fetch failed|failed to fetch|network connection lost|connection refused/i;

/** `error` as a {@link StoreUnreachableError} when it is one (see there), else undefined. */
function unreachable(error: unknown): StoreUnreachableError | undefined {
  if (!(error instanceof Error)) return undefined;
  // Upstash's messages end with the whole command (the script's source and the job's input):
  // only what comes before it is kept.
  const said = error.message.split(", command was:")[0] ?? error.message;
  const unavailable =
    error.name === "UpstashJSONParseError" ||
    (error.name === "UpstashError" && REST_UNAVAILABLE.test(said)) ||
    (error.name === "TypeError" && FETCH_FAILED.test(said));
  if (!unavailable) return undefined;
  return new StoreUnreachableError(`the store could not be reached: ${said.slice(0, 200)}`, {
    cause: error,
  });
}

/**
 * After an FCALL of `script`'s function failed with `error`: when the server does not have the
 * function (restarted, flushed, never loaded), loads its library and calls again, both in one
 * round trip. When the server has no functions (before Redis 7: the client stops trying) or
 * would not load this library (an ACL without FUNCTION, a limit of the server's Lua), runs the
 * script as EVAL instead. Any other error is the call's.
 */
async function afterFailedCall(
  client: ScriptClient,
  state: { usable?: boolean; refused: Set<string> },
  script: LuaScript,
  keys: string[],
  args: (string | number)[],
  error: unknown,
): Promise<unknown> {
  const message = messageOf(error);
  if (state.usable !== true && /unknown command|NOPERM/i.test(message)) {
    state.usable = false;
    return evalScript(client, script, keys, args);
  }
  if (!/function not found/i.test(message)) throw error;
  const name = functionName(script);
  // The library's load and the call again go together, one round trip (Redis runs them in order).
  const loaded = client.functionLoad!(functionLibrary(script)).then(
    () => undefined,
    (error: unknown) => ({ error }),
  );
  const called = client.fcall!(name, keys, args).then(
    (answer: unknown) => ({ answer }),
    (error: unknown) => ({ error }),
  );
  const [load, call] = await Promise.all([loaded, called]);
  if ("answer" in call) {
    state.usable = true;
    return call.answer;
  }
  // Redis refused the library (an ACL without FUNCTION, a replica, a limit of its Lua), so the
  // call found no function: run the script as EVAL. A lost connection fails as usual.
  if (load && /^(ERR|NOPERM|READONLY)/.test(messageOf(load.error))) {
    if (/function not found/i.test(messageOf(call.error))) {
      state.refused.add(script.sha1);
      return evalScript(client, script, keys, args);
    }
  }
  throw call.error;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function isNoScript(error: unknown): boolean {
  return messageOf(error).toLowerCase().includes("noscript");
}
