/**
 * @module
 * The CLI's help texts: the overview (`tickwork --help`) and one per command
 * (`tickwork <command> --help`). `redis-rest` and `hash-key` keep theirs next to their code.
 */
import { describeHandlersLocations } from "./handlers-module.ts";

const HANDLERS_OPTION = `      --handlers <file> Module exporting \`handlers\` (default: found by convention,
                        e.g. src/tickwork/handlers.ts; tickwork dev --help lists
                        where it looks)`;

const PORT_OPTION =
  "  -p, --port <n>        Port to listen on (default: $PORT or 8787; 0 = any free port)";

/** The options after `--port` and `--host`, shared by dev and start. */
const SERVER_OPTIONS = `      --prefix <p>      Redis key prefix (default: $TICKWORK_PREFIX or "tw")
      --role <roles>    Route sets to serve: all (default), api, tick, worker,
                        observer; comma-separated or repeated (default:
                        $TICKWORK_ROLES). Only servers with tick (or all) run
                        the tick timer; every replica may, the lease picks one.
                        With Redis Streams, servers with worker pull jobs.
      --transport <t>   qstash, streams or local (default: $TICKWORK_TRANSPORT,
                        else qstash with QSTASH_TOKEN, streams with REDIS_URL,
                        local otherwise)
      --concurrency <n> Jobs a Streams worker runs at once (default:
                        $TICKWORK_CONCURRENCY or 10)
      --read-ahead <n>  Jobs a Streams worker may pull ahead of free slots while
                        its handlers are short; 0: none (default:
                        $TICKWORK_READ_AHEAD or the concurrency)
${HANDLERS_OPTION}
  -h, --help            Show this help`;

const STORE_AND_QUEUE_ENV = `  UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN
                     keep state in Upstash Redis over REST (checked first)
  REDIS_URL          keep state in Redis over TCP, e.g. redis://127.0.0.1:6379
  QSTASH_TOKEN       deliver jobs through QStash; then also needed:
                     QSTASH_CURRENT_SIGNING_KEY, QSTASH_NEXT_SIGNING_KEY and
                     TICKWORK_PUBLIC_URL (optional: QSTASH_URL)
  TICKWORK_TRANSPORT qstash | streams | local (default: qstash with QSTASH_TOKEN,
                     Redis Streams with REDIS_URL, else the local queue)
  TICKWORK_CONCURRENCY jobs a Streams worker runs at once (default 10)
  TICKWORK_READ_AHEAD jobs a Streams worker may pull ahead of free slots while
                     its handlers are short (0-10000; default: the concurrency)
  TICKWORK_KEEP_ALIVE_MS how long an idle keep-alive connection stays open
                     (default 65000; keep it above your load balancer's idle timeout)
  TICKWORK_CAPABILITIES labels this server reports in GET /v1/nodes, a JSON
                     object of strings, e.g. {"region":"eu-west-1","gpu":"a100"}
  TICKWORK_HEARTBEAT_MS node registry heartbeat interval (default 15000 ms);
                     TICKWORK_NODE_TTL_MS: stale after this long (default 3 ×)
  TICKWORK_NODE_ID   this server's node id (placement.nodes; default random)
  TICKWORK_GROUP     the worker group it runs (placement.group; default none)
  TICKWORK_WORKER_GROUPS with QStash: {"group":"https://…/v1/worker", …}
  TICKWORK_PUBLIC_URL  the URL the queue delivers to (required with QStash; with
                     the local queue, the servers with the worker role)
  TICKWORK_SIGNING_KEY key signing local-queue deliveries, the same on every
                     server (needed when they go to TICKWORK_PUBLIC_URL)`;

/** `tickwork --help`: every command, the server options and the environment. */
export const GLOBAL_HELP = `Usage: tickwork <command> [options]

Commands:
  dev         Local server, zero config: in-memory store (or Redis / Upstash from
              the environment), in-process queue (Redis Streams with REDIS_URL,
              QStash with QSTASH_TOKEN), a tick every second, auth off. Prints
              curl lines to try.
  start       The same server for real use: state in Redis (REDIS_URL or
              UPSTASH_REDIS_REST_URL required), API key required
              (TICKWORK_API_KEY), binds 0.0.0.0.
  init        Add tickwork to this project: example handlers, and the entry and
              configuration for --platform node, cloudflare or vercel.
  redis-rest  An Upstash-REST-compatible bridge in front of a Redis.
  hash-key    Make an API key and the hash the configuration stores.
  help        Show this help (tickwork help <command>: that command's).

Each command has its own help: tickwork <command> --help.

Options (dev, start):
${PORT_OPTION}
      --host <host>     Interface to bind (default: $HOST, else 127.0.0.1 for dev,
                        0.0.0.0 for start)
${SERVER_OPTIONS}
  -v, --version         Show the version

Environment (an option given on the command line wins):
  PORT, HOST, TICKWORK_PREFIX, TICKWORK_ROLES   as the options above
${STORE_AND_QUEUE_ENV}
  TICKWORK_API_KEY   API key(s) clients send as "Authorization: Bearer <key>";
                     comma-separated for several, each an admin key (start)
  TICKWORK_CONFIG    a JSON file (or JSON) with tenants, hashed keys, scopes,
                     manifests, CORS and degradation settings
                     (schema/tickwork.config.schema.json)
  CRON_SECRET        GET/POST /v1/tick needs "Authorization: Bearer <secret>"; with
                     start and no secret, /v1/tick is not served over HTTP

Examples:
  npx tickwork init
  tickwork dev
  REDIS_URL=redis://127.0.0.1:6379 tickwork dev --port 3000
  REDIS_URL=redis://cache:6379 TICKWORK_API_KEY=s3cret tickwork start --port 8080
  tickwork start --role api,worker     # and elsewhere: tickwork start --role tick
`;

/** `tickwork dev --help`. */
export const DEV_HELP = `Usage: tickwork dev [options]

A local server, zero config: state in memory (or Redis / Upstash when the
environment names one), jobs delivered by an in-process queue (Redis Streams
with REDIS_URL, QStash with QSTASH_TOKEN), a tick every second, auth off (do
not expose the port). The banner shows the
dashboard and metrics URLs and two curl lines to try, for a registered handler.

The handlers come from --handlers, else from the first that exists of
  ${wrap(describeHandlersLocations(), 2, 80)}
(\`npx tickwork init\` writes one). TypeScript loads through the project's tsx
(npm install -D tsx), else as it is where Node strips types (22.18 or newer).

Options:
${PORT_OPTION}
      --host <host>     Interface to bind (default: $HOST or 127.0.0.1)
${SERVER_OPTIONS}

Environment (an option given on the command line wins):
  PORT, HOST, TICKWORK_PREFIX, TICKWORK_ROLES   as the options above
${STORE_AND_QUEUE_ENV}
  TICKWORK_CONFIG    tenants, CORS and degradation settings (a JSON file or JSON)

Examples:
  tickwork dev
  tickwork dev --port 3000 --handlers src/jobs.ts
  REDIS_URL=redis://127.0.0.1:6379 tickwork dev
`;

/** `tickwork start --help`. */
export const START_HELP = `Usage: tickwork start [options]

The server for real use: state in Redis (REDIS_URL, or UPSTASH_REDIS_REST_URL
and its token: required), every API request needs a key (TICKWORK_API_KEY or
tenant keys in TICKWORK_CONFIG), binds 0.0.0.0, graceful shutdown on SIGTERM.
Handlers are found as for \`tickwork dev\` (see tickwork dev --help).

Options:
${PORT_OPTION}
      --host <host>     Interface to bind (default: $HOST or 0.0.0.0)
${SERVER_OPTIONS}

Environment (an option given on the command line wins):
  PORT, HOST, TICKWORK_PREFIX, TICKWORK_ROLES   as the options above
${STORE_AND_QUEUE_ENV}
  TICKWORK_API_KEY   API key(s) clients send as "Authorization: Bearer <key>";
                     comma-separated for several, each an admin key
  TICKWORK_CONFIG    a JSON file (or JSON) with tenants, hashed keys, scopes,
                     manifests, CORS and degradation settings
                     (schema/tickwork.config.schema.json)
  CRON_SECRET        GET/POST /v1/tick needs "Authorization: Bearer <secret>";
                     without it /v1/tick is not served over HTTP (the server's
                     own timer still ticks)

Examples:
  REDIS_URL=redis://cache:6379 TICKWORK_API_KEY=s3cret tickwork start --port 8080
  tickwork start --role api,worker     # and elsewhere: tickwork start --role tick
`;

/** `tickwork init --help`. */
export const INIT_HELP = `Usage: tickwork init [--platform node|cloudflare|vercel] [--dir <path>]

Adds tickwork to the project in the current directory (or --dir): an example
handlers module at src/tickwork/handlers.ts (.mjs when the project has no
tsconfig.json and no TypeScript), where \`tickwork dev\` looks first, and for the
platform:

  node        .env.example (run it with \`npx tickwork start\`)
  cloudflare  src/worker.ts (fetch: the API; scheduled: the tick), wrangler.toml
              with the "* * * * *" cron trigger, .dev.vars.example
  vercel      src/index.ts (its default export: createVercelApp from
              tickwork/vercel), vercel.json with a cron calling /v1/tick every
              minute, .env.example

It never overwrites a file: one that exists is skipped, and the report says
so. A handlers module that exists where \`tickwork dev\` looks is kept, and the
entry imports it. Exit code 0 when a file was written, 1 when none was.

Options:
      --platform <p>    node (default), cloudflare or vercel
      --dir <path>      The project directory (default: the current one)
  -h, --help            Show this help

Examples:
  npx tickwork init
  npx tickwork init --platform cloudflare
`;

/** `text` (comma-separated) broken into lines of at most `width`, continued at `indent`. */
function wrap(text: string, indent: number, width: number): string {
  const lines: string[] = [];
  let line = "";
  for (const part of text.split(" ")) {
    if (line && indent + line.length + 1 + part.length > width) {
      lines.push(line);
      line = part;
    } else {
      line = line ? `${line} ${part}` : part;
    }
  }
  if (line) lines.push(line);
  return lines.join(`\n${" ".repeat(indent)}`);
}
