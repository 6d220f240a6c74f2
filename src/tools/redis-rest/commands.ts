/**
 * @module
 * Request bodies into Redis commands. `@upstash/redis` sends a command as a JSON array whose
 * arguments are JSON scalars (`["set","k",1,"px",30000]`); Redis takes strings, so numbers and
 * booleans are turned into their text. Also which commands the bridge forwards: an allowlist of the
 * data and scripting commands of one database. Everything else (server-wide and admin commands,
 * anything that reaches another database or changes the one connection every request shares) is
 * refused with the answer Upstash gives for a command it does not offer,
 * `ERR Command is not available: '<NAME>'…` (400 on `/`, an `{ error }` entry in `/pipeline`).
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

/**
 * The commands the bridge forwards (lower case), at the top level and from inside scripts: what
 * `@upstash/redis` and tickwork's store send, and the common data commands of one database.
 * Left out on purpose: everything server-wide or administrative (FLUSHALL, SHUTDOWN, SWAPDB,
 * REPLICAOF/SLAVEOF, CONFIG, CLIENT, DEBUG, SAVE/BGSAVE/BGREWRITEAOF, ACL, MODULE, FUNCTION/FCALL,
 * INFO, MONITOR, …), anything that reaches another database (SELECT, MOVE, MIGRATE; COPY … DB is
 * refused by its option), pub/sub (channels are server-wide, not per database), DUMP/RESTORE and
 * WAIT. Names a given Redis does not know (newer commands, RedisJSON without the module) are
 * forwarded and answered by Redis as unknown.
 */
export const ALLOWED_COMMANDS: ReadonlySet<string> = new Set([
  // Connection and server, limited to this database.
  ..."ping echo time dbsize flushdb".split(" "),
  // Keys.
  ..."del unlink exists type touch expire expireat pexpire pexpireat persist ttl pttl expiretime pexpiretime rename renamenx copy keys scan randomkey object sort sort_ro".split(
    " ",
  ),
  // Strings, bitmaps, HyperLogLog.
  ..."append decr decrby get getdel getex getrange getset incr incrby incrbyfloat lcs mget mset msetnx psetex set setex setnx setrange strlen substr".split(
    " ",
  ),
  ..."bitcount bitfield bitfield_ro bitop bitpos getbit setbit pfadd pfcount pfmerge".split(" "),
  // Hashes (field expiry and HGETDEL/HGETEX/HSETEX are Redis 7.4 and 8).
  ..."hdel hexists hget hgetall hincrby hincrbyfloat hkeys hlen hmget hmset hrandfield hscan hset hsetnx hstrlen hvals".split(
    " ",
  ),
  ..."hexpire hexpireat hexpiretime hpersist hpexpire hpexpireat hpexpiretime hpttl httl hgetdel hgetex hsetex".split(
    " ",
  ),
  // Lists.
  ..."blmove blmpop blpop brpop brpoplpush lindex linsert llen lmove lmpop lpop lpos lpush lpushx lrange lrem lset ltrim rpop rpoplpush rpush rpushx".split(
    " ",
  ),
  // Sets.
  ..."sadd scard sdiff sdiffstore sinter sintercard sinterstore sismember smembers smismember smove spop srandmember srem sscan sunion sunionstore".split(
    " ",
  ),
  // Sorted sets.
  ..."bzmpop bzpopmax bzpopmin zadd zcard zcount zdiff zdiffstore zincrby zinter zintercard zinterstore zlexcount zmpop zmscore zpopmax zpopmin zrandmember zrange zrangebylex zrangebyscore zrangestore zrank zrem zremrangebylex zremrangebyrank zremrangebyscore zrevrange zrevrangebylex zrevrangebyscore zrevrank zscan zscore zunion zunionstore".split(
    " ",
  ),
  // Streams.
  ..."xack xackdel xadd xautoclaim xclaim xdel xdelex xgroup xinfo xlen xpending xrange xread xreadgroup xrevrange xsetid xtrim".split(
    " ",
  ),
  // Geo.
  ..."geoadd geodist geohash geopos geosearch geosearchstore georadius georadius_ro georadiusbymember georadiusbymember_ro".split(
    " ",
  ),
  // RedisJSON, as @upstash/redis sends it (redis.json.*).
  ..."arrappend arrindex arrinsert arrlen arrpop arrtrim clear del forget get merge mget mset numincrby nummultby objkeys objlen resp set strappend strlen toggle type"
    .split(" ")
    .map((name) => `json.${name}`),
  // Scripts (run in one database: see scripts.ts). SCRIPT takes LOAD and EXISTS only.
  ..."eval evalsha eval_ro evalsha_ro script".split(" "),
]);

/** The commands that manage or run scripts: never callable from inside a script. */
export const SCRIPT_COMMANDS: ReadonlySet<string> = new Set([
  "eval",
  "evalsha",
  "eval_ro",
  "evalsha_ro",
  "script",
]);

/** `SCRIPT` subcommands the bridge forwards (FLUSH, KILL and DEBUG are server-wide). */
const SCRIPT_SUBCOMMANDS = new Set(["load", "exists"]);

/** Transaction commands: `POST /multi-exec` is how a REST client runs a transaction. */
const TRANSACTION = new Set(["discard", "exec", "multi", "unwatch", "watch"]);

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
]);

/** Why a command is not available: the tail of every refusal that has no more specific reason. */
export const NOT_AVAILABLE_REASON =
  "This REST bridge forwards only the data and scripting commands of its one Redis database";

/**
 * Upstash's answer for a command it does not offer, `ERR Command is not available: '<NAME>'`,
 * then why. The name is shown upper case and cut short (it is the client's text).
 *
 * @example
 * notAvailable("flushall"); // "ERR Command is not available: 'FLUSHALL'. This REST bridge …"
 */
export function notAvailable(name: string, reason: string = NOT_AVAILABLE_REASON): string {
  const shown = (name.length > 64 ? `${name.slice(0, 64)}…` : name).replace(/\p{Cc}/gu, "?");
  return `ERR Command is not available: '${shown.toUpperCase()}'. ${reason}`;
}

/**
 * Why the bridge will not forward `command`, as the error text the client gets; `undefined` when
 * it will. Blocking commands are accepted inside a transaction, where Redis never blocks.
 *
 * @example
 * refusal(["flushall"], { inTransaction: false }); // "ERR Command is not available: 'FLUSHALL'. …"
 * refusal(["get", "k"], { inTransaction: false }); // undefined
 */
export function refusal(
  [name, ...args]: RedisCommand,
  { inTransaction }: { inTransaction: boolean },
): string | undefined {
  const lower = name.toLowerCase();
  if (TRANSACTION.has(lower)) {
    return notAvailable(
      name,
      "Send the transaction to /multi-exec (redis.multi() in @upstash/redis)",
    );
  }
  if (!ALLOWED_COMMANDS.has(lower)) return notAvailable(name);
  if (lower === "script" && !SCRIPT_SUBCOMMANDS.has(args[0]?.toLowerCase() ?? "")) {
    return notAvailable(`${name} ${args[0] ?? ""}`.trim());
  }
  if (lower === "copy" && copiesToAnotherDatabase(args)) {
    return notAvailable(`${name} … DB`, NOT_AVAILABLE_REASON);
  }
  const blocks =
    BLOCKING.has(lower) || ((lower === "xread" || lower === "xreadgroup") && hasBlockOption(args));
  if (blocks && !inTransaction) {
    return `ERR ${name.toUpperCase()} may block, and this REST bridge does not run blocking commands: every request shares one Redis connection`;
  }
  return undefined;
}

/** `COPY source destination [DB n] [REPLACE]`: whether the DB option is there (from the third argument). */
function copiesToAnotherDatabase(args: string[]): boolean {
  return args.slice(2).some((arg) => arg.toLowerCase() === "db");
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
