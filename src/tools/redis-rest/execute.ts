/**
 * @module
 * Running commands on Redis through ioredis (RESP2, replies as bytes), and telling Redis's answers
 * apart from failures to reach it: a Redis error reply (`ReplyError`) is the command's answer and
 * goes back to the client as `{ error }`; anything else (connection refused, closed, retries
 * exhausted) means Redis could not be asked and becomes a 503. Every command is checked against
 * the allowlist (`commands.ts`) first, and scripts go in their sandboxed form (`scripts.ts`).
 */
import { type Redis, ReplyError } from "ioredis";
import { type RedisCommand, refusal } from "./commands.ts";
import { RedisRestError } from "./errors.ts";
import { isScriptCommand, type Prepared, type ScriptSandbox } from "./scripts.ts";

/** What the bridge needs of an ioredis client. */
export type BridgeRedis = Pick<Redis, "call" | "callBuffer" | "pipeline" | "multi">;

/**
 * A Redis reply: bulk and status strings (the bytes Redis sent, or a text the bridge answers
 * itself), integers, nil, and arrays of those. `encoding.ts` turns it into JSON.
 */
export type Reply = string | Uint8Array | number | null | Reply[];

/** One command's outcome, in the shape of Upstash's `/pipeline` entries. */
export type Outcome = { result: Reply } | { error: string };

/** Where commands go: the Redis, and the sandbox every script runs in. */
export interface Target {
  redis: BridgeRedis;
  scripts: ScriptSandbox;
  /**
   * A request holding a script that has had no answer for `timeoutMs` calls `kill` (SCRIPT KILL
   * on a connection of its own): a script that never ends holds the whole Redis server, every
   * database and every other client, and the bridge refuses SCRIPT KILL to its clients.
   */
  scriptWatch?: { timeoutMs: number; kill: () => Promise<unknown> } | undefined;
}

/**
 * `run`, with the script watch armed while it is under way when `scripted` (the request holds a
 * script command). A kill that fails (no script running by then; one that has written, which
 * Redis answers UNKILLABLE) changes nothing: the request ends when Redis answers it.
 */
async function watched<T>(target: Target, scripted: boolean, run: () => Promise<T>): Promise<T> {
  const watch = target.scriptWatch;
  if (!scripted || !watch) return run();
  const timer = setTimeout(() => {
    watch.kill().catch(() => {});
  }, watch.timeoutMs);
  try {
    return await run();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Run one command. A refused command or a Redis error is an `{ error }` outcome; throws a 503
 * {@link RedisRestError} when Redis cannot be reached.
 *
 * @example
 * await runCommand(target, ["get", "k"]); // { result: "v" }
 */
export async function runCommand(target: Target, command: RedisCommand): Promise<Outcome> {
  const [prepared] = await prepareAll(target, [command], { inTransaction: false });
  if (prepared === undefined) throw new Error("no command");
  if ("refused" in prepared) return { error: prepared.refused };
  if ("answer" in prepared) return prepared.answer;
  const [name, ...args] = prepared.wire;
  let outcome: Outcome;
  try {
    const reply = await watched(target, isScriptCommand(command), () =>
      target.redis.callBuffer(wireName(name), args),
    );
    outcome = { result: toReply(reply) };
  } catch (error) {
    if (!(error instanceof ReplyError)) throw unavailable(error);
    outcome = { error: (error as Error).message };
  }
  return prepared.finish ? prepared.finish(outcome) : outcome;
}

/**
 * Run commands in order, each independently (no atomicity), in one round trip to Redis: one
 * outcome per command. Throws a 503 {@link RedisRestError} when Redis cannot be reached.
 *
 * @example
 * await runPipeline(target, [["incr", "n"], ["get", "n"]]); // [{ result: 1 }, { result: "1" }]
 */
export async function runPipeline(target: Target, commands: RedisCommand[]): Promise<Outcome[]> {
  const prepared = await prepareAll(target, commands, { inTransaction: false });
  const pipeline = target.redis.pipeline();
  for (const entry of prepared) {
    if ("wire" in entry) {
      const [name, ...args] = entry.wire;
      pipeline.callBuffer(wireName(name), args);
    }
  }
  const replies =
    pipeline.length > 0
      ? await watched(target, commands.some(isScriptCommand), () => pipeline.exec()).catch(
          rethrowUnavailable,
        )
      : [];
  if (replies === null) throw unavailable(new Error("the pipeline was not run"));
  let next = 0;
  return prepared.map((entry) => {
    if ("refused" in entry) return { error: entry.refused };
    if ("answer" in entry) return entry.answer;
    const [error, value] = replies[next++] ?? [new Error("no reply"), null];
    return finish(entry, error, value);
  });
}

/**
 * Run commands as one MULTI … EXEC transaction (ioredis sends it as one write on its connection,
 * so no other request's command interleaves). Runtime errors are per-command outcomes; a command
 * Redis refuses to queue, or the bridge refuses, discards the whole transaction: a 400
 * {@link RedisRestError} carrying `EXECABORT …` and the first refusal. Throws a 503 when Redis
 * cannot be reached.
 *
 * @example
 * await runTransaction(target, [["set", "k", "v"], ["incr", "k"]]);
 * // [{ result: "OK" }, { error: "ERR value is not an integer or out of range" }]
 */
export async function runTransaction(target: Target, commands: RedisCommand[]): Promise<Outcome[]> {
  const prepared = await prepareAll(target, commands, { inTransaction: true });
  for (const entry of prepared) {
    if ("refused" in entry) {
      throw new RedisRestError(400, `EXECABORT Transaction discarded: ${entry.refused}`);
    }
  }
  // Commands the bridge answers itself (EVALSHA of a script it has not seen: NOSCRIPT) fail at
  // run time in Redis too, without stopping the others: they are left out of the MULTI.
  const sent = prepared.filter((entry) => "wire" in entry);
  let replies: [error: Error | null, value: unknown][] | null = [];
  if (sent.length > 0) {
    const transaction = target.redis.multi();
    for (const { wire } of sent) {
      const [name, ...args] = wire;
      transaction.callBuffer(wireName(name), args);
    }
    try {
      replies = await watched(target, commands.some(isScriptCommand), () => transaction.exec());
    } catch (error) {
      if (!(error instanceof ReplyError)) throw unavailable(error);
      const first = (error as { previousErrors?: Error[] }).previousErrors?.[0];
      const message = first
        ? `${(error as Error).message} ${first.message}`
        : (error as Error).message;
      throw new RedisRestError(400, message, { cause: error });
    }
  }
  // EXEC answers nil only when a WATCHed key changed, and the bridge runs no WATCH.
  if (replies === null) throw new RedisRestError(400, "EXECABORT the transaction was aborted");
  let next = 0;
  return prepared.map((entry) => {
    if ("refused" in entry) return { error: entry.refused };
    if ("answer" in entry) return entry.answer;
    const [error, value] = replies[next++] ?? [new Error("no reply"), null];
    return finish(entry, error, value);
  });
}

/**
 * Each command checked against the allowlist and, when it is a script command, put in its
 * sandboxed form (after checking once that this Redis can run sandboxed scripts).
 */
async function prepareAll(
  { redis, scripts }: Target,
  commands: RedisCommand[],
  context: { inTransaction: boolean },
): Promise<Prepared[]> {
  const scriptsRefused = commands.some(isScriptCommand)
    ? await scripts.supportsScripts(redis).catch(rethrowUnavailable)
    : undefined;
  return commands.map((command): Prepared => {
    const refused = refusal(command, context);
    if (refused !== undefined) return { refused };
    if (!isScriptCommand(command)) return { wire: command };
    if (scriptsRefused !== undefined) return { refused: scriptsRefused };
    return scripts.prepare(command);
  });
}

/** One pipelined or transaction reply as the client's outcome. */
function finish(
  entry: Extract<Prepared, { wire: RedisCommand }>,
  error: Error | null,
  value: unknown,
): Outcome {
  let outcome: Outcome;
  if (error === null) outcome = { result: toReply(value) };
  else if (error instanceof ReplyError) outcome = { error: error.message };
  else throw unavailable(error);
  return entry.finish ? entry.finish(outcome) : outcome;
}

/**
 * ioredis reshapes the reply of a few commands, found by their exact lower-case name (HGETALL
 * into an object); Upstash answers Redis's flat array, so those names go out capitalised.
 */
const RESHAPED_BY_IOREDIS = new Set(["hgetall"]);

function wireName(name: string): string {
  return RESHAPED_BY_IOREDIS.has(name) ? name.toUpperCase() : name;
}

/**
 * An ioredis reply (bytes, kept as they are: a value need not be UTF-8) as a {@link Reply}; an
 * error nested in an array becomes its text.
 */
function toReply(value: unknown): Reply {
  if (value === null || value === undefined) return null;
  if (typeof value === "string" || typeof value === "number" || value instanceof Uint8Array) {
    return value;
  }
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
