/**
 * @module
 * The `tickwork` command line: `tickwork dev` and `tickwork start`. With `functions/`, the one
 * place that reads the environment; everything below gets its configuration passed in.
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { Handlers } from "./engine/handlers.ts";

const HELP = `Usage: tickwork <command> [options]

Commands:
  dev         Local server, zero config: in-memory store (or Redis / Upstash from
              the environment), in-process queue (or QStash), a tick every
              second, auth off. Prints curl lines to try.
  start       The same server for real use: state in Redis (REDIS_URL or
              UPSTASH_REDIS_REST_URL required), API key required
              (TICKWORK_API_KEY), binds 0.0.0.0.
  redis-rest  An Upstash-REST-compatible bridge in front of a Redis
              (tickwork redis-rest --help).
  hash-key    Make an API key and the hash the configuration stores
              (tickwork hash-key --help).
  help        Show this help.

Options:
  -p, --port <n>        Port to listen on (default: $PORT or 8787; 0 = any free port)
      --host <host>     Interface to bind (default: $HOST, else 127.0.0.1 for dev,
                        0.0.0.0 for start)
      --prefix <p>      Redis key prefix (default: $TICKWORK_PREFIX or "tw")
      --role <roles>    Route sets to serve: all (default), api, tick, worker,
                        observer; comma-separated or repeated (default:
                        $TICKWORK_ROLES). Only servers with tick (or all) run
                        the tick timer; every replica may, the lease picks one.
      --handlers <file> Module exporting \`handlers\` (default: functions/handlers.ts)
  -h, --help            Show this help
  -v, --version         Show the version

Environment (an option given on the command line wins):
  PORT, HOST, TICKWORK_PREFIX, TICKWORK_ROLES   as the options above
  UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN
                     keep state in Upstash Redis over REST (checked first)
  REDIS_URL          keep state in Redis over TCP, e.g. redis://127.0.0.1:6379
  QSTASH_TOKEN       deliver jobs through QStash; then also needed:
                     QSTASH_CURRENT_SIGNING_KEY, QSTASH_NEXT_SIGNING_KEY and
                     TICKWORK_PUBLIC_URL (optional: QSTASH_URL)
  TICKWORK_PUBLIC_URL  the URL the queue delivers to (required with QStash; with
                     the local queue, the servers with the worker role)
  TICKWORK_SIGNING_KEY key signing local-queue deliveries, the same on every
                     server (needed when they go to TICKWORK_PUBLIC_URL)
  TICKWORK_API_KEY   API key(s) clients send as "Authorization: Bearer <key>";
                     comma-separated for several, each an admin key (start)
  TICKWORK_CONFIG    a JSON file (or JSON) with tenants, hashed keys, scopes,
                     manifests, CORS and degradation settings
                     (schema/tickwork.config.schema.json)
  CRON_SECRET        GET/POST /v1/tick needs "Authorization: Bearer <secret>"; with
                     start and no secret, /v1/tick is not served over HTTP

Examples:
  tickwork dev
  REDIS_URL=redis://127.0.0.1:6379 tickwork dev --port 3000
  REDIS_URL=redis://cache:6379 TICKWORK_API_KEY=s3cret tickwork start --port 8080
  tickwork start --role api,worker     # and elsewhere: tickwork start --role tick
`;

type Env = Record<string, string | undefined>;

/** A mistake in how the command was called or configured: printed without a stack trace. */
class UsageError extends Error {
  override name = "UsageError";
}

/**
 * Run the CLI. Resolves with the exit code once the server is up (it keeps the process alive) or
 * at once for `help`, `--version` and errors.
 *
 * @example
 * process.exitCode = await main(["dev", "--port", "3000"], process.env);
 */
async function main(argv: string[], env: Env): Promise<number> {
  // `tickwork redis-rest`: the Upstash REST bridge, with its own options and help.
  if (argv[0] === "redis-rest") {
    const { runRedisRestCommand } = await import("./adapter/redis-rest/cli.ts");
    return runRedisRestCommand(argv.slice(1), env);
  }
  // `tickwork hash-key`: a new API key and its hash, or the hash of a key on stdin.
  if (argv[0] === "hash-key") {
    const { runHashKeyCommand } = await import("./adapter/node/hash-key.ts");
    return runHashKeyCommand(argv.slice(1));
  }
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        port: { type: "string", short: "p" },
        host: { type: "string" },
        prefix: { type: "string" },
        role: { type: "string", multiple: true },
        handlers: { type: "string" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "v" },
      },
    });
    if (values.version) {
      console.log(readVersion());
      return 0;
    }
    const command = positionals[0];
    if (values.help || command === undefined || command === "help") {
      console.log(HELP);
      return command === undefined && !values.help ? 1 : 0;
    }
    if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"`);
    if (command !== "dev" && command !== "start") {
      throw new UsageError(
        `unknown command "${command}" (commands: dev, start, redis-rest, hash-key, help)`,
      );
    }

    // Each option stands for its environment variable, so one function reads them all.
    const overrides: Env = {
      ...(values.port !== undefined ? { PORT: values.port } : {}),
      ...(values.host !== undefined ? { HOST: values.host } : {}),
      ...(values.prefix !== undefined ? { TICKWORK_PREFIX: values.prefix } : {}),
      ...(values.role !== undefined ? { TICKWORK_ROLES: values.role.join(",") } : {}),
    };
    // Loaded here, not at the top: `--help` and usage and configuration errors stay fast.
    const { serverOptionsFromEnv } = await import("./adapter/node/env.ts");
    const options = serverOptionsFromEnv({ ...env, ...overrides }, command);
    const handlers = await loadHandlers(values.handlers ?? "functions/handlers.ts");
    const { startServer } = await import("./adapter/node/start.ts");
    await startServer({ handlers, ...options });
    return 0;
  } catch (error) {
    // A configuration the server cannot start with (`StartError`): no stack, exit 1.
    if (error instanceof Error && error.name === "StartError") {
      console.error(`tickwork: ${error.message}`);
      return 1;
    }
    // A mistake in how it was called or configured: exit 2, pointing at the help.
    if (error instanceof UsageError || isConfigError(error) || isArgError(error)) {
      console.error(`tickwork: ${(error as Error).message}`);
      console.error("Run `tickwork --help` for usage.");
      return 2;
    }
    throw error;
  }
}

/** Import the user's handlers module (TypeScript is fine: the CLI runs under tsx). */
async function loadHandlers(file: string): Promise<Handlers> {
  const path = resolve(file);
  if (!existsSync(path)) {
    throw new UsageError(
      `no handlers module at ${path}: pass --handlers <file> (it exports \`handlers\`)`,
    );
  }
  const mod = (await import(pathToFileURL(path).href)) as { handlers?: unknown; default?: unknown };
  const handlers = mod.handlers ?? mod.default;
  if (typeof handlers !== "object" || handlers === null) {
    throw new UsageError(`${file} must export \`handlers\` (a map of name → { run })`);
  }
  return handlers as Handlers;
}

function readVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  return String(pkg.version);
}

/** `ConfigError` from the environment reader (matched by name: it is loaded lazily). */
function isConfigError(error: unknown): boolean {
  return error instanceof Error && error.name === "ConfigError";
}

/** `parseArgs` rejects unknown options and missing values with `ERR_PARSE_ARGS_*` codes. */
function isArgError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("ERR_PARSE_ARGS_");
}

const code = await main(process.argv.slice(2), process.env);
// On failure, exit now: a client that failed to connect may hold the event loop for a while.
if (code !== 0) process.exit(code);
