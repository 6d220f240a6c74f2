/**
 * @module
 * The Cloudflare Workers entry (`wrangler deploy`): the HTTP API on `fetch`, the tick on the
 * once-a-minute Cron Trigger (`scheduled`). Variables and secrets: see `wrangler.toml`.
 */
import { Redis } from "@upstash/redis/cloudflare";
import {
  assertEnv,
  createTickwork,
  type ExecutionContext,
  type Tickwork,
  type TickworkEnv,
} from "tickwork/cloudflare";
import { parseConfig } from "tickwork/config";
import { handlers } from "./handlers.ts";

let tickwork: Tickwork | undefined;

/** Built on first use and kept for the isolate's life: clients, engine and app are reused. */
function tickworkFor(env: TickworkEnv): Tickwork {
  assertEnv(env);
  tickwork ??= createTickwork({
    handlers,
    redis: new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }),
    prefix: env.TICKWORK_PREFIX,
    qstash: {
      token: env.QSTASH_TOKEN,
      baseUrl: env.QSTASH_URL || undefined,
      currentSigningKey: env.QSTASH_CURRENT_SIGNING_KEY,
      nextSigningKey: env.QSTASH_NEXT_SIGNING_KEY,
    },
    publicUrl: env.TICKWORK_PUBLIC_URL,
    apiKeys: env.TICKWORK_API_KEY?.split(",") ?? [],
    ...(env.TICKWORK_CONFIG ? { config: parseConfig(env.TICKWORK_CONFIG, "TICKWORK_CONFIG") } : {}),
    tickSecret: env.CRON_SECRET,
    engine: { tick: { horizonMs: 60_000 } }, // the cron runs once a minute
  });
  return tickwork;
}

export default {
  fetch(request: Request, env: TickworkEnv, ctx: ExecutionContext): Promise<Response> {
    return tickworkFor(env).fetch(request, env, ctx);
  },
  scheduled(_controller: unknown, env: TickworkEnv, ctx: ExecutionContext): void {
    ctx.waitUntil(tickworkFor(env).engine.ticker.tick());
  },
};
