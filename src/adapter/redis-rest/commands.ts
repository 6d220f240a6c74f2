/**
 * @module
 * Request bodies into Redis commands. `@upstash/redis` sends a command as a JSON array whose
 * arguments are JSON scalars (`["set","k",1,"px",30000]`); Redis takes strings, so numbers and
 * booleans are turned into their text. Also which commands the bridge will not forward: it serves
 * every request over one shared connection, so nothing may change that connection's state or
 * block it.
 */
import { RedisRestError } from "./errors.ts";

/** One command as it goes to Redis: its name, then its arguments, all strings. */
export type RedisCommand = [name: string, ...args: string[]];

/**
 * The body of `POST /`: one command.
 *
 * @example
 * parseCommand(["set", "k", 1, "px", 30000]); // ["set", "k", "1", "px", "30000"]
 */
export function parseCommand(body: unknown): RedisCommand {
  return toCommand(body, "the request body");
}

/**
 * The body of `POST /pipeline` and `POST /multi-exec`: a non-empty array of commands.
 *
 * @example
 * parseCommands([["incr", "n"], ["get", "n"]]);
 */
export function parseCommands(body: unknown): RedisCommand[] {
  if (!Array.isArray(body) || body.length === 0) {
    throw new RedisRestError(
      400,
      'ERR the request body must be a non-empty JSON array of commands, e.g. [["incr","n"],["get","n"]]',
    );
  }
  return body.map((entry, i) => toCommand(entry, `command ${i + 1}`));
}

function toCommand(value: unknown, where: string): RedisCommand {
  if (!Array.isArray(value) || typeof value[0] !== "string" || value[0] === "") {
    throw new RedisRestError(
      400,
      `ERR ${where} must be a JSON array holding a command name and its arguments, e.g. ["set","k","v"]`,
    );
  }
  const [name, ...args] = value as [string, ...unknown[]];
  return [
    name,
    ...args.map((arg, i) => {
      if (typeof arg === "string") return arg;
      if (typeof arg === "number" || typeof arg === "boolean") return String(arg);
      throw new RedisRestError(
        400,
        `ERR argument ${i + 1} of ${where} (${name}) must be a string, number or boolean, got ${arg === null ? "null" : typeof arg}`,
      );
    }),
  ];
}

/** Commands that change the state of the connection they run on: never on a shared one. */
const CONNECTION_STATE = new Set([
  "auth",
  "hello",
  "monitor",
  "psubscribe",
  "punsubscribe",
  "quit",
  "reset",
  "select",
  "ssubscribe",
  "subscribe",
  "sunsubscribe",
  "unsubscribe",
]);

/** Transaction commands: `POST /multi-exec` is how a REST client runs a transaction. */
const TRANSACTION = new Set(["discard", "exec", "multi", "unwatch", "watch"]);

/** `CLIENT` subcommands that change the connection (the others only read or label it). */
const CLIENT_STATE = new Set(["caching", "no-evict", "no-touch", "reply", "setname", "tracking"]);

/** Commands that can wait for data, holding the shared connection (not inside MULTI, where they don't). */
const BLOCKING = new Set([
  "blmove",
  "blmpop",
  "blpop",
  "brpop",
  "brpoplpush",
  "bzmpop",
  "bzpopmax",
  "bzpopmin",
  "wait",
  "waitaof",
]);

/**
 * Why the bridge will not forward `command`, as the error text the client gets; `undefined` when
 * it will. Blocking commands are accepted inside a transaction, where Redis never blocks.
 *
 * @example
 * refusal(["select", "1"], { inTransaction: false }); // "ERR SELECT is not supported …"
 */
export function refusal(
  [name, ...args]: RedisCommand,
  { inTransaction }: { inTransaction: boolean },
): string | undefined {
  const lower = name.toLowerCase();
  const shown = name.toUpperCase();
  if (CONNECTION_STATE.has(lower)) {
    return `ERR ${shown} is not supported by this REST bridge: it would change the Redis connection every request shares`;
  }
  if (lower === "client" && CLIENT_STATE.has(args[0]?.toLowerCase() ?? "")) {
    return `ERR CLIENT ${args[0]?.toUpperCase()} is not supported by this REST bridge: it would change the Redis connection every request shares`;
  }
  if (TRANSACTION.has(lower)) {
    return `ERR ${shown} is not supported as a command: send the transaction to /multi-exec (redis.multi() in @upstash/redis)`;
  }
  const blocks =
    BLOCKING.has(lower) || ((lower === "xread" || lower === "xreadgroup") && hasBlockOption(args));
  if (blocks && !inTransaction) {
    return `ERR ${shown} may block, and this REST bridge does not run blocking commands: every request shares one Redis connection`;
  }
  return undefined;
}

/** Whether an XREAD / XREADGROUP asks to block: a `BLOCK` option before `STREAMS`. */
function hasBlockOption(args: string[]): boolean {
  for (let i = 0; i < args.length; i++) {
    const option = args[i]?.toLowerCase();
    if (option === "streams") return false;
    if (option === "block") return true;
    // Skip option values, which could be spelled "block" too: GROUP <group> <consumer>, COUNT <n>.
    if (option === "group") i += 2;
    else if (option === "count") i += 1;
  }
  return false;
}
