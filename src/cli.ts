/**
 * @module
 * The `tickwork` command line: `tickwork dev` and `tickwork start`. With `functions/`, the one
 * place that reads the environment; everything below gets its configuration passed in.
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { StartServerOptions } from "./adapter/node/index.ts";
import type { Handlers } from "./engine/handlers.ts";

const HELP = `Usage: tickwork <command> [options]

Commands:
  dev     Local server, zero config: in-memory store (or REDIS_URL), in-process
          queue, a tick every second, auth off. Prints curl lines to try.
  start   The same server for real use: state in Redis (REDIS_URL required),
          API key required (TICKWORK_API_KEY), binds 0.0.0.0.
  help    Show this help.

Options:
  -p, --port <n>        Port to listen on (default: $PORT or 8787; 0 = any free port)
      --host <host>     Interface to bind (default: $HOST, else 127.0.0.1 for dev,
                        0.0.0.0 for start)
      --prefix <p>      Redis key prefix (default: $TICKWORK_PREFIX or "tw")
      --handlers <file> Module exporting \`handlers\` (default: functions/handlers.ts)
  -h, --help            Show this help
  -v, --version         Show the version

Environment:
  PORT, HOST, TICKWORK_PREFIX   as the options above
  REDIS_URL          keep state in Redis, e.g. redis://127.0.0.1:6379 (required by start)
  TICKWORK_API_KEY   API key(s) clients send as "Authorization: Bearer <key>";
                     comma-separated for several (required by start)
  CRON_SECRET        when set, POST/GET /v1/tick needs "Authorization: Bearer <secret>"

Examples:
  tickwork dev
  REDIS_URL=redis://127.0.0.1:6379 tickwork dev --port 3000
  REDIS_URL=redis://cache:6379 TICKWORK_API_KEY=s3cret tickwork start --port 8080
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
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        port: { type: "string", short: "p" },
        host: { type: "string" },
        prefix: { type: "string" },
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
      throw new UsageError(`unknown command "${command}" (commands: dev, start, help)`);
    }

    const dev = command === "dev";
    const redisUrl = env.REDIS_URL || undefined;
    const apiKeys = (env.TICKWORK_API_KEY ?? "")
      .split(",")
      .map((k) => k.trim())
      .filter(Boolean);
    if (!dev && !redisUrl) {
      throw new UsageError(
        "REDIS_URL is not set. `tickwork start` keeps its state in Redis, so it survives restarts " +
          "and can run as several replicas. Set it, e.g.\n" +
          "  REDIS_URL=redis://127.0.0.1:6379 TICKWORK_API_KEY=<key> tickwork start\n" +
          "or run `tickwork dev` for a local server with in-memory state.",
      );
    }
    if (!dev && apiKeys.length === 0) {
      throw new UsageError(
        "TICKWORK_API_KEY is not set. Outside dev every API request needs a key " +
          '("Authorization: Bearer <key>"). Set it, e.g. TICKWORK_API_KEY=$(openssl rand -hex 24), ' +
          "or run `tickwork dev` (auth off).",
      );
    }

    const options: StartServerOptions = {
      handlers: await loadHandlers(values.handlers ?? "functions/handlers.ts"),
      dev,
      port: parsePort(values.port ?? env.PORT),
      ...((values.host ?? env.HOST) ? { hostname: (values.host ?? env.HOST) as string } : {}),
      ...(redisUrl ? { redisUrl } : {}),
      ...((values.prefix ?? env.TICKWORK_PREFIX)
        ? { prefix: (values.prefix ?? env.TICKWORK_PREFIX) as string }
        : {}),
      ...(apiKeys.length > 0 && !dev ? { apiKeys } : {}),
      ...(env.CRON_SECRET && !dev ? { tickSecret: env.CRON_SECRET } : {}),
    };
    // Loaded here, not at the top: `--help` and usage errors stay fast.
    const { startServer } = await import("./adapter/node/index.ts");
    await startServer(options);
    return 0;
  } catch (error) {
    // A configuration the server cannot start with (`StartError`): no stack, exit 1.
    if (error instanceof Error && error.name === "StartError") {
      console.error(`tickwork: ${error.message}`);
      return 1;
    }
    if (error instanceof UsageError || isArgError(error)) {
      console.error(`tickwork: ${(error as Error).message}`);
      console.error("Run `tickwork --help` for usage.");
      return 2;
    }
    throw error;
  }
}

function parsePort(value: string | undefined): number {
  if (value === undefined || value === "") return 8787;
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65_535) {
    throw new UsageError(`port must be a whole number from 0 to 65535, got "${value}"`);
  }
  return Number(value);
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

/** `parseArgs` rejects unknown options and missing values with `ERR_PARSE_ARGS_*` codes. */
function isArgError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("ERR_PARSE_ARGS_");
}

const code = await main(process.argv.slice(2), process.env);
// On failure, exit now: a client that failed to connect may hold the event loop for a while.
if (code !== 0) process.exit(code);
