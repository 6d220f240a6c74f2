/**
 * @module
 * `tickwork redis-rest`: the Upstash-compatible REST bridge as a command. Like `src/cli.ts`, a
 * place that reads the environment (`REDIS_URL`, `TICKWORK_REST_TOKEN`).
 */
import { parseArgs } from "node:util";
import { redactRedisUrl } from "../../adapter/node/banner.ts";
import { StartError } from "../../adapter/node/errors.ts";

const HELP = `Usage: tickwork redis-rest [options]

Serves the Upstash Redis REST API (what @upstash/redis speaks) in front of any Redis,
so code written for Upstash runs against a local or self-hosted Redis.

Options:
  -p, --port <n>      Port to listen on (default: 8079; 0 = any free port)
      --host <host>   Interface to bind (default: 127.0.0.1; 0.0.0.0 to reach it from
                      other machines or containers)
      --redis <url>   The Redis to serve (default: $REDIS_URL)
      --token <t>     Bearer token clients must send (default: $TICKWORK_REST_TOKEN;
                      prefer the variable: arguments show in the process list)
      --max-body-bytes <n>
                      Largest request body, in bytes (default: 10485760, Upstash's
                      10 MiB); larger requests get 413 before the rest is read
      --max-commands <n>
                      Most commands in one /pipeline or /multi-exec request
                      (default: 10000); more get 413
      --max-arguments <n>
                      Most arguments in one request, all commands together
                      (default: 500000, under 100 MB of the bridge's memory); more get 413
      --script-timeout-ms <n>
                      A request holding a script unanswered this long gets the script
                      killed (SCRIPT KILL on a connection of its own; default: 5000): one
                      that never ends would hold the whole Redis server
  -h, --help          Show this help

What the token reaches: the data and scripting commands of one database (the one in
the Redis URL, e.g. redis://127.0.0.1:6379/3; default 0). Server-wide and admin
commands (FLUSHALL, CONFIG, SHUTDOWN, SWAPDB, CLIENT, SCRIPT FLUSH, FUNCTION, INFO, ...),
SELECT and MOVE are refused with "ERR Command is not available"; scripts run in a
sandbox that refuses the same commands (Redis 7 or later needed for scripts).

Then point @upstash/redis at it:
  UPSTASH_REDIS_REST_URL=http://127.0.0.1:8079
  UPSTASH_REDIS_REST_TOKEN=<the same token>

Example:
  REDIS_URL=redis://127.0.0.1:6379 TICKWORK_REST_TOKEN=dev-token tickwork redis-rest
`;

/** A mistake in how the command was called: printed without a stack trace. */
class UsageError extends Error {
  override name = "UsageError";
}

/**
 * Run `tickwork redis-rest` with `argv` (the arguments after `redis-rest`). Resolves with the exit
 * code: 0 once the bridge is listening (its server keeps the process alive; SIGINT/SIGTERM stop
 * it) or after `--help`, 1 when it cannot start (Redis unreachable, port in use), 2 on usage or
 * configuration errors (a Redis URL whose database is not a number).
 *
 * @example
 * process.exitCode = await runRedisRestCommand(["--port", "8079"], process.env);
 */
export async function runRedisRestCommand(
  argv: string[],
  env: Record<string, string | undefined>,
): Promise<number> {
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        port: { type: "string", short: "p" },
        host: { type: "string" },
        redis: { type: "string" },
        token: { type: "string" },
        "max-body-bytes": { type: "string" },
        "max-commands": { type: "string" },
        "max-arguments": { type: "string" },
        "script-timeout-ms": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
    if (values.help) {
      console.log(HELP);
      return 0;
    }
    // An empty value (`--redis "$UNSET"`) would stand for no option and give the variable
    // instead, as for `tickwork start`: refused.
    for (const [name, given] of Object.entries(values)) {
      if (typeof given === "string" && given.trim() === "") {
        throw new UsageError(`--${name} needs a value, got an empty one`);
      }
    }
    const redisUrl = values.redis || env.REDIS_URL;
    if (!redisUrl) {
      throw new UsageError(
        "no Redis to serve: pass --redis <url> or set REDIS_URL, e.g. REDIS_URL=redis://127.0.0.1:6379",
      );
    }
    const token = values.token || env.TICKWORK_REST_TOKEN;
    if (!token) {
      throw new UsageError(
        "no token: set TICKWORK_REST_TOKEN (or pass --token); clients send it as their " +
          "UPSTASH_REDIS_REST_TOKEN, e.g. TICKWORK_REST_TOKEN=$(openssl rand -hex 24)",
      );
    }
    if (/\s/.test(token)) {
      throw new UsageError(
        "the token has a space in it: clients send it as `Authorization: Bearer <token>`, one word",
      );
    }
    const port = parsePort(values.port);
    const maxBodyBytes = parseCount("--max-body-bytes", values["max-body-bytes"]);
    const maxCommands = parseCount("--max-commands", values["max-commands"]);
    const maxArguments = parseCount("--max-arguments", values["max-arguments"]);
    const scriptTimeoutMs = parseCount("--script-timeout-ms", values["script-timeout-ms"]);
    // Loaded here, not at the top: `--help` and usage errors stay fast.
    const { serveRedisRest } = await import("./serve.ts");
    const server = await serveRedisRest({
      redisUrl,
      token,
      port,
      ...(values.host ? { hostname: values.host } : {}),
      ...(maxBodyBytes !== undefined ? { maxBodyBytes } : {}),
      ...(maxCommands !== undefined ? { maxCommands } : {}),
      ...(maxArguments !== undefined ? { maxArguments } : {}),
      ...(scriptTimeoutMs !== undefined ? { scriptTimeoutMs } : {}),
    });
    console.log(
      [
        `tickwork redis-rest: Upstash REST API on ${server.url}, serving ${redactRedisUrl(redisUrl)}`,
        "Point @upstash/redis at it:",
        `  UPSTASH_REDIS_REST_URL=${server.url}`,
        "  UPSTASH_REDIS_REST_TOKEN=<the token you set>",
      ].join("\n"),
    );
    return 0;
  } catch (error) {
    // As `tickwork start`: 1 for what the start met (Redis, the port), 2 for a setting refused.
    if (error instanceof StartError && error.atRuntime) {
      console.error(`tickwork redis-rest: ${error.message}`);
      return 1;
    }
    if (error instanceof UsageError || error instanceof StartError || isArgError(error)) {
      console.error(`tickwork redis-rest: ${(error as Error).message}`);
      console.error("Run `tickwork redis-rest --help` for usage.");
      return 2;
    }
    throw error;
  }
}

function parsePort(value: string | undefined): number {
  if (value === undefined || value === "") return 8079;
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65_535) {
    throw new UsageError(`port must be a whole number from 0 to 65535, got "${value}"`);
  }
  return Number(value);
}

/** A whole number ≥ 1 (digits only), or `undefined` when the option is not given. */
function parseCount(option: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const count = /^\d{1,15}$/.test(value) ? Number(value) : Number.NaN;
  if (!(count >= 1)) {
    throw new UsageError(`${option} must be a whole number of at least 1, got "${value}"`);
  }
  return count;
}

/** `parseArgs` rejects unknown options and missing values with `ERR_PARSE_ARGS_*` codes. */
function isArgError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("ERR_PARSE_ARGS_");
}
