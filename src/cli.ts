/**
 * @module
 * The `tickwork` command line: `dev`, `start`, `init`, `redis-rest` and `hash-key`. With
 * `functions/`, the one place that reads the environment; everything below gets its
 * configuration passed in.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
// Both small and free of dependencies: the error classes are here before anything is loaded.
import { StartError } from "./adapter/node/errors.ts";
import { DEV_HELP, GLOBAL_HELP, START_HELP } from "./cli/help.ts";
import { TickworkConfigError } from "./core/errors.ts";
import type { Handlers } from "./engine/handlers.ts";

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
  // `tickwork help <command>`: that command's own help.
  if (argv[0] === "help" && argv[1] !== undefined) return main([argv[1], "--help"], env);
  // `tickwork init`: example handlers and a platform's entry, never overwriting a file.
  if (argv[0] === "init") {
    const { runInitCommand } = await import("./cli/init.ts");
    return runInitCommand(argv.slice(1));
  }
  // `tickwork redis-rest`: the Upstash REST bridge, with its own options and help.
  if (argv[0] === "redis-rest") {
    const { runRedisRestCommand } = await import("./tools/redis-rest/cli.ts");
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
        transport: { type: "string" },
        concurrency: { type: "string" },
        "read-ahead": { type: "string" },
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
    if (command === "dev" || command === "start") {
      if (values.help) {
        console.log(command === "dev" ? DEV_HELP : START_HELP);
        return 0;
      }
    } else if (values.help || command === undefined || command === "help") {
      // `tickwork help frobnicate`, `tickwork frobnicate --help`: no such command to explain.
      if (command !== undefined && command !== "help") {
        throw new UsageError(
          `unknown command "${command}" (commands: dev, start, init, redis-rest, hash-key, help)`,
        );
      }
      console.log(GLOBAL_HELP);
      return command === undefined && !values.help ? 1 : 0;
    }
    if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"`);
    if (command !== "dev" && command !== "start") {
      throw new UsageError(
        `unknown command "${command}" (commands: dev, start, init, redis-rest, hash-key, help)`,
      );
    }

    // An empty value (`--prefix "$UNSET"`) would stand for no option at all and silently give
    // the default, over the variable: refused instead.
    for (const [name, given] of Object.entries(values)) {
      const texts = Array.isArray(given) ? given : [given];
      if (texts.some((text) => typeof text === "string" && text.trim() === "")) {
        throw new UsageError(`--${name} needs a value, got an empty one`);
      }
    }
    // Each option stands for its environment variable, so one function reads them all.
    const overrides: Env = {
      ...(values.port !== undefined ? { PORT: values.port } : {}),
      ...(values.host !== undefined ? { HOST: values.host } : {}),
      ...(values.prefix !== undefined ? { TICKWORK_PREFIX: values.prefix } : {}),
      ...(values.role !== undefined ? { TICKWORK_ROLES: values.role.join(",") } : {}),
      ...(values.transport !== undefined ? { TICKWORK_TRANSPORT: values.transport } : {}),
      ...(values.concurrency !== undefined ? { TICKWORK_CONCURRENCY: values.concurrency } : {}),
      ...(values["read-ahead"] !== undefined ? { TICKWORK_READ_AHEAD: values["read-ahead"] } : {}),
    };
    // Loaded here, not at the top: `--help` and usage and configuration errors stay fast.
    const { serverOptionsFromEnv } = await import("./adapter/node/env.ts");
    const options = serverOptionsFromEnv({ ...env, ...overrides }, command);
    const handlers = await loadHandlers(values.handlers);
    const { startServer } = await import("./adapter/node/start.ts");
    await startServer({ handlers, ...options });
    return 0;
  } catch (error) {
    // A start that failed on what it met (Redis, the port, a package): no stack, exit 1.
    if (error instanceof StartError && error.atRuntime) {
      console.error(`tickwork: ${error.message}`);
      return 1;
    }
    // A mistake in how it was called or configured (any other `TickworkConfigError`: the
    // environment reader's `ConfigError`, a setting `startServer` refused): exit 2, pointing at
    // the help.
    if (
      error instanceof UsageError ||
      error instanceof TickworkConfigError ||
      isArgError(error) ||
      (error instanceof Error && error.name === "HandlersModuleError")
    ) {
      console.error(`tickwork: ${(error as Error).message}`);
      console.error("Run `tickwork --help` for usage.");
      return 2;
    }
    throw error;
  }
}

/**
 * The user's handlers: from `--handlers`, else the first conventional module in the working
 * directory. Loaded lazily, like the server: `--help` and usage errors stay fast.
 */
async function loadHandlers(file: string | undefined): Promise<Handlers> {
  const { loadHandlersModule, resolveHandlersModule } = await import("./cli/handlers-module.ts");
  const cwd = process.cwd();
  return loadHandlersModule(resolveHandlersModule(file, cwd), { cwd });
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
