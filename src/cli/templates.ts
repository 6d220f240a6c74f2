/**
 * @module
 * The files `tickwork init` writes: an example handlers module (TypeScript or JavaScript), and per
 * platform the entry and its configuration. They mirror this repository's own examples in
 * `functions/` and the deployment files (`wrangler.toml`, `infra/vercel.json`), importing tickwork
 * by package name as a user's project does.
 */

/** The platforms `tickwork init --platform` knows. */
export type Platform = "node" | "cloudflare" | "vercel";

/** Every platform, the default first. */
export const PLATFORMS: readonly Platform[] = ["node", "cloudflare", "vercel"];

/** The handlers in the example module, in registration order (the banner samples the first). */
export const EXAMPLE_HANDLERS = ["echo", "email.welcome"] as const;

/**
 * The example handlers module: `echo`, and `email.welcome` with a zod 4 input schema. The same
 * text serves TypeScript and JavaScript: `defineHandlers` types `run`'s input from the schema.
 */
export function handlersTemplate(): string {
  return `/**
 * tickwork handlers: what runs when a job (or a schedule's occurrence) is delivered — a map of
 * name → { input?, timeout?, retries?, run }. \`npx tickwork dev\` finds this file by its path and
 * prints curl lines to try; the platform entry registers the same map.
 *
 * Submit a job:
 *   curl -X POST http://127.0.0.1:8787/v1/jobs -H 'content-type: application/json' \\
 *     -d '{"handler":"email.welcome","input":{"to":"ada@example.com","name":"Ada"}}'
 */
import { defineHandlers } from "tickwork";
import * as z from "zod";

export const handlers = defineHandlers({
  /** Returns its input unchanged: the first job to try. */
  echo: {
    run: (input) => input,
  },

  /**
   * Sends a welcome email. Invalid input (not an email address) is refused at submit with 422 and
   * never retried; a thrown error is retried up to 5 times with backoff.
   */
  "email.welcome": {
    input: z.object({ to: z.email(), name: z.string().min(1).optional() }),
    timeout: "30s",
    retries: 5,
    run: async ({ to, name }, ctx) => {
      // Call your mail provider here; pass ctx.signal so a timed-out attempt stops.
      ctx.logger.info("welcome email", { to, attempt: ctx.attempt });
      return { sent: to, greeting: \`Welcome\${name ? \`, \${name}\` : ""}!\` };
    },
  },
});
`;
}

/** `.env.example` for `npx tickwork start` on Node. */
export const NODE_ENV_EXAMPLE = `# tickwork on Node. \`npx tickwork dev\` needs none of these (state in memory, jobs run in-process);
# \`npx tickwork start\` needs a store and an API key. Copy to .env, fill in, and load it, e.g.
#   node --env-file=.env node_modules/.bin/tickwork start
PORT=8787
# State in Redis over TCP (npm install ioredis)…
REDIS_URL=redis://127.0.0.1:6379
# …or in Upstash Redis over REST (npm install @upstash/redis; checked first)
# UPSTASH_REDIS_REST_URL=
# UPSTASH_REDIS_REST_TOKEN=
# API key(s) clients send as "Authorization: Bearer <key>", comma-separated
# (\`npx tickwork hash-key\` makes one)
TICKWORK_API_KEY=
# Serve /v1/tick over HTTP for an external cron (the server's own timer ticks without it)
# CRON_SECRET=
# Deliver jobs through QStash instead of Redis Streams (npm install @upstash/qstash)
# QSTASH_TOKEN=
# QSTASH_CURRENT_SIGNING_KEY=
# QSTASH_NEXT_SIGNING_KEY=
# TICKWORK_PUBLIC_URL=https://jobs.example.com
# TICKWORK_PREFIX=tw
# TICKWORK_ROLES=all
`;

/**
 * The Cloudflare Worker: the API on `fetch`, the tick on the Cron Trigger (`scheduled`), as in
 * `functions/cloudflare.ts`.
 */
export function cloudflareEntryTemplate(handlersSpecifier: string): string {
  return `/**
 * The Cloudflare Worker (\`npx wrangler deploy\`; wrangler.toml names this file): the tickwork
 * HTTP API on \`fetch\`, the tick on the once-a-minute Cron Trigger (\`scheduled\`). Variables and
 * secrets: see wrangler.toml. For more control, build the parts with \`createTickwork\` from
 * tickwork/cloudflare.
 */
import { createWorker } from "tickwork/cloudflare";
import { handlers } from "${handlersSpecifier}";

export default createWorker({ handlers });
`;
}

/** `wrangler.toml`: the Worker, its once-a-minute cron, its variables and (as comments) secrets. */
export function wranglerTemplate(name: string, main: string, compatibilityDate: string): string {
  return `# tickwork on Cloudflare Workers: \`npx wrangler dev\` locally, \`npx wrangler deploy\` to deploy.
name = "${name}"
main = "${main}"
compatibility_date = "${compatibilityDate}"
# No compatibility_flags: tickwork uses Web APIs only (no node:* modules, no nodejs_compat).

# The tick: once a minute (UTC). Each tick dispatches what is due in the next 65 s (the engine's
# look-ahead), published with notBefore = fire time, so second-level schedules still run on time.
[triggers]
crons = ["* * * * *"]

[vars]
# The Worker's public URL: QStash delivers to $TICKWORK_PUBLIC_URL/v1/worker and calls
# $TICKWORK_PUBLIC_URL/v1/dead when a job gives up. The signatures name these URLs.
TICKWORK_PUBLIC_URL = "https://${name}.<your-subdomain>.workers.dev"
# QSTASH_URL = "https://qstash.upstash.io"   # e.g. a regional QStash endpoint
# TICKWORK_PREFIX = "tw"                     # Redis key prefix, to share one database

# Secrets (\`npx wrangler secret put NAME\`; locally, in .dev.vars — see .dev.vars.example):
#   UPSTASH_REDIS_REST_URL      Upstash Redis REST URL (console → database → REST API)
#   UPSTASH_REDIS_REST_TOKEN    its token
#   QSTASH_TOKEN                QStash token (console → QStash)
#   QSTASH_CURRENT_SIGNING_KEY  QStash signing keys, to verify deliveries
#   QSTASH_NEXT_SIGNING_KEY
#   TICKWORK_API_KEY            API key(s), comma-separated: \`Authorization: Bearer <key>\` on /v1/jobs, /v1/schedules, /v1/dlq
#   CRON_SECRET                 protects POST /v1/tick (\`Authorization: Bearer <CRON_SECRET>\`); the Cron Trigger needs none
#   TICKWORK_CONFIG             optional: tenants with hashed keys, as JSON (\`npx tickwork hash-key\`)
`;
}

/** `.dev.vars.example`: the Worker's secrets for `wrangler dev`. */
export const CLOUDFLARE_DEV_VARS_EXAMPLE = `# Secrets for \`npx wrangler dev\`: copy to .dev.vars (keep it out of git) and fill in.
# Deployed, set each with \`npx wrangler secret put NAME\`. \`npx tickwork dev\` needs none of them.
UPSTASH_REDIS_REST_URL=
UPSTASH_REDIS_REST_TOKEN=
QSTASH_TOKEN=
QSTASH_CURRENT_SIGNING_KEY=
QSTASH_NEXT_SIGNING_KEY=
TICKWORK_API_KEY=
CRON_SECRET=
`;

/** The Vercel entry: a Hono app as the default export, where Vercel's Hono support finds it. */
export function vercelEntryTemplate(handlersSpecifier: string): string {
  return `/**
 * The Vercel entry: Vercel's zero-config Hono support runs this module's default export (a Hono
 * app) as a Function. vercel.json's cron calls GET /v1/tick every minute with
 * "Authorization: Bearer $CRON_SECRET". Settings come from the project's Environment Variables:
 * see .env.example. Vercel's zero-config Hono support deploys an entry that imports "hono": keep
 * the import below.
 */
import "hono";
import { createVercelApp } from "tickwork/vercel";
import { handlers } from "${handlersSpecifier}";

export default createVercelApp(process.env, { handlers });
`;
}

/** `vercel.json`: Vercel Cron calls `/v1/tick` once a minute, as `infra/vercel.json`. */
export const VERCEL_JSON = `{
  "$schema": "https://openapi.vercel.sh/vercel.json",
  "crons": [{ "path": "/v1/tick", "schedule": "* * * * *" }]
}
`;

/** `.env.example` for Vercel: the project's Environment Variables. */
export const VERCEL_ENV_EXAMPLE = `# tickwork on Vercel: set these in the project's Environment Variables, then redeploy.
# \`npx tickwork dev\` needs none of them.
# State in Upstash Redis over REST (or the Vercel Marketplace's KV_REST_API_URL + KV_REST_API_TOKEN)
UPSTASH_REDIS_REST_URL=
UPSTASH_REDIS_REST_TOKEN=
# Jobs delivered by QStash
QSTASH_TOKEN=
QSTASH_CURRENT_SIGNING_KEY=
QSTASH_NEXT_SIGNING_KEY=
# QSTASH_URL=https://qstash.upstash.io
# Where QStash delivers (/v1/worker); default https://$VERCEL_PROJECT_PRODUCTION_URL
# TICKWORK_PUBLIC_URL=https://your-app.vercel.app
# Vercel Cron sends it to /v1/tick; e.g. \`openssl rand -hex 32\`
CRON_SECRET=
# API key(s) clients send as "Authorization: Bearer <key>", comma-separated
# (\`npx tickwork hash-key\` makes one; or TICKWORK_CONFIG with tenant keys)
TICKWORK_API_KEY=
# TICKWORK_CONFIG=./tickwork.config.json
# TICKWORK_PREFIX=tw
# TICKWORK_ROLES=all
`;
