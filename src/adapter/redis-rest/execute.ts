/**
 * @module
 * Running commands on Redis through ioredis (RESP2, string replies), and telling Redis's answers
 * apart from failures to reach it: a Redis error reply (`ReplyError`) is the command's answer and
 * goes back to the client as `{ error }`; anything else (connection refused, closed, retries
 * exhausted) means Redis could not be asked and becomes a 503.
 */
import { type Redis, ReplyError } from "ioredis";
import { type RedisCommand, refusal } from "./commands.ts";
import { RedisRestError } from "./errors.ts";

/** What the bridge needs of an ioredis client. */
export type BridgeRedis = Pick<Redis, "call" | "pipeline" | "multi">;

/** A Redis reply as JSON: bulk and status strings, integers, nil, and arrays of those. */
export type Reply = string | number | null | Reply[];

/** One command's outcome, in the shape of Upstash's `/pipeline` entries. */
export type Outcome = { result: Reply } | { error: string };

/**
 * Run one command. A refused command or a Redis error is an `{ error }` outcome; throws a 503
 * {@link RedisRestError} when Redis cannot be reached.
 *
 * @example
 * await runCommand(redis, ["get", "k"]); // { result: "v" }
 */
export async function runCommand(redis: BridgeRedis, command: RedisCommand): Promise<Outcome> {
  const refused = refusal(command, { inTransaction: false });
  if (refused) return { error: refused };
  const [name, ...args] = command;
  try {
    return { result: toReply(await redis.call(wireName(name), args)) };
  } catch (error) {
    if (error instanceof ReplyError) return { error: (error as Error).message };
    throw unavailable(error);
  }
}

/**
 * Run commands in order, each independently (no atomicity), in one round trip to Redis: one
 * outcome per command. Throws a 503 {@link RedisRestError} when Redis cannot be reached.
 *
 * @example
 * await runPipeline(redis, [["incr", "n"], ["get", "n"]]); // [{ result: 1 }, { result: "1" }]
 */
export async function runPipeline(
  redis: BridgeRedis,
  commands: RedisCommand[],
): Promise<Outcome[]> {
  const refusals = commands.map((command) => refusal(command, { inTransaction: false }));
  const pipeline = redis.pipeline();
  for (const [i, [name, ...args]] of commands.entries()) {
    if (refusals[i] === undefined) pipeline.call(wireName(name), args);
  }
  const replies = pipeline.length > 0 ? await pipeline.exec().catch(rethrowUnavailable) : [];
  if (replies === null) throw unavailable(new Error("the pipeline was not run"));
  let next = 0;
  return refusals.map((refused) => {
    if (refused !== undefined) return { error: refused };
    const [error, value] = replies[next++] ?? [new Error("no reply"), null];
    if (error === null) return { result: toReply(value) };
    if (error instanceof ReplyError) return { error: error.message };
    throw unavailable(error);
  });
}

/**
 * Run commands as one MULTI … EXEC transaction (ioredis sends it as one write on its connection,
 * so no other request's command interleaves). Runtime errors are per-command outcomes; a command
 * Redis refuses to queue discards the whole transaction: a 400 {@link RedisRestError} carrying
 * `EXECABORT …` and the first refusal. Throws a 503 when Redis cannot be reached.
 *
 * @example
 * await runTransaction(redis, [["set", "k", "v"], ["incr", "k"]]);
 * // [{ result: "OK" }, { error: "ERR value is not an integer or out of range" }]
 */
export async function runTransaction(
  redis: BridgeRedis,
  commands: RedisCommand[],
): Promise<Outcome[]> {
  for (const command of commands) {
    const refused = refusal(command, { inTransaction: true });
    if (refused) {
      throw new RedisRestError(400, `EXECABORT Transaction discarded: ${refused}`);
    }
  }
  const transaction = redis.multi();
  for (const [name, ...args] of commands) transaction.call(wireName(name), args);
  let replies: [error: Error | null, value: unknown][] | null;
  try {
    replies = await transaction.exec();
  } catch (error) {
    if (!(error instanceof ReplyError)) throw unavailable(error);
    const first = (error as { previousErrors?: Error[] }).previousErrors?.[0];
    const message = first
      ? `${(error as Error).message} ${first.message}`
      : (error as Error).message;
    throw new RedisRestError(400, message, { cause: error });
  }
  // EXEC answers nil only when a WATCHed key changed, and the bridge runs no WATCH.
  if (replies === null) throw new RedisRestError(400, "EXECABORT the transaction was aborted");
  return replies.map(([error, value]) => {
    if (error === null) return { result: toReply(value) };
    if (error instanceof ReplyError) return { error: error.message };
    throw unavailable(error);
  });
}

/**
 * ioredis reshapes the reply of a few commands, found by their exact lower-case name (HGETALL
 * into an object); Upstash answers Redis's flat array, so those names go out capitalised.
 */
const RESHAPED_BY_IOREDIS = new Set(["hgetall"]);

function wireName(name: string): string {
  return RESHAPED_BY_IOREDIS.has(name) ? name.toUpperCase() : name;
}

/** An ioredis reply (string encoding) as JSON; an error nested in an array becomes its text. */
function toReply(value: unknown): Reply {
  if (value === null || value === undefined) return null;
  if (typeof value === "string" || typeof value === "number") return value;
  if (Array.isArray(value)) return value.map(toReply);
  if (value instanceof Error) return value.message;
  return String(value);
}

function rethrowUnavailable(cause: unknown): never {
  throw unavailable(cause);
}

function unavailable(cause: unknown): RedisRestError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new RedisRestError(503, `ERR Redis is unavailable: ${reason}`, { cause });
}
