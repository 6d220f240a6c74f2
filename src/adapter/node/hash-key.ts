/**
 * @module
 * `tickwork hash-key`: make an API key and the hash the configuration stores — or hash a key you
 * already have (from stdin, so it stays out of the shell history).
 */
import { parseArgs } from "node:util";
import { generateKey, hashKey } from "../../config/keys.ts";
import { tenantSchema } from "../../config/schema.ts";
import { SCOPES } from "../../config/scopes.ts";

const HELP = `Usage: tickwork hash-key [--stdin] [--tenant <id>] [--scopes <list>]

Without --stdin, generates a new random API key and prints it with its hash.
With --stdin, reads one key from standard input and prints its hash only.

Put the hash (never the key) in the configuration TICKWORK_CONFIG names:
  { "tenants": [{ "id": "acme", "keys": [{ "hash": "sha256:…", "scopes": ["jobs:write", "read"] }] }] }
Give the key to the client, which sends "Authorization: Bearer <key>".

Options:
      --stdin           Hash the key read from standard input
      --tenant <id>     Tenant id for the printed snippet (default: "default")
      --scopes <list>   Comma-separated scopes for the snippet: read, jobs:write,
                        schedules:write, admin (default: "jobs:write,read")
  -h, --help            Show this help

Examples:
  npx tickwork hash-key
  printf %s "$MY_KEY" | npx tickwork hash-key --stdin
`;

/**
 * Run the command; resolves with the exit code. `io` is injected for tests.
 *
 * @example
 * process.exitCode = await runHashKeyCommand(["--stdin"]);
 */
export async function runHashKeyCommand(
  argv: string[],
  io: {
    stdin?: () => Promise<string>;
    out?: (text: string) => void;
    err?: (text: string) => void;
  } = {},
): Promise<number> {
  const out = io.out ?? ((text: string) => console.log(text));
  const err = io.err ?? ((text: string) => console.error(text));
  let values: { stdin?: boolean; tenant?: string; scopes?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        stdin: { type: "boolean" },
        tenant: { type: "string" },
        scopes: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    err(`tickwork hash-key: ${(error as Error).message}`);
    err("Run `tickwork hash-key --help` for usage.");
    return 2;
  }
  if (values.help) {
    out(HELP);
    return 0;
  }
  if (values.stdin) {
    const key = (await (io.stdin ?? readStdin)()).replace(/\r?\n$/, "");
    if (key.trim() === "" || /\s/.test(key)) {
      err("tickwork hash-key: the key on stdin must be one non-empty word (no spaces or newlines)");
      return 2;
    }
    out(await hashKey(key));
    return 0;
  }
  const scopes = (values.scopes ?? "jobs:write,read").split(",").map((s) => s.trim());
  const unknown = scopes.filter((scope) => !(SCOPES as readonly string[]).includes(scope));
  if (unknown.length > 0) {
    err(`tickwork hash-key: unknown scope "${unknown[0]}" (scopes: ${SCOPES.join(", ")})`);
    return 2;
  }
  const id = values.tenant ?? "default";
  // The snippet must be what the configuration accepts: the tenant id as its schema checks it.
  const checked = tenantSchema.shape.id.safeParse(id);
  if (!checked.success) {
    err(
      `tickwork hash-key: --tenant ${JSON.stringify(id)}: ${checked.error.issues[0]?.message ?? "invalid tenant id"}`,
    );
    return 2;
  }
  const key = generateKey();
  const hash = await hashKey(key);
  const snippet = { id, keys: [{ hash, scopes }] };
  out(
    [
      `key   ${key}`,
      `hash  ${hash}`,
      "",
      "Give the key to the client (it is shown once and stored nowhere); put the hash in the",
      "configuration, e.g. as a tenant of TICKWORK_CONFIG:",
      "",
      `  ${JSON.stringify(snippet)}`,
    ].join("\n"),
  );
  return 0;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
