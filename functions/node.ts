/**
 * @module
 * The Node entry: `npm run dev` runs this file. It is the one place (with the CLI) that reads the
 * environment, through `serverOptionsFromEnv` — so `npm run dev` and `tickwork dev` select the
 * same things:
 *
 * - `PORT` — port to listen on (default 8787; `0` picks a free one); `HOST` — interface to bind
 *   (default 127.0.0.1)
 * - `UPSTASH_REDIS_REST_URL` + `UPSTASH_REDIS_REST_TOKEN` — keep state in Upstash Redis over REST;
 *   else `REDIS_URL` — in Redis over TCP (ioredis); else in memory
 * - `TICKWORK_PREFIX` — Redis key prefix (default `tw`)
 * - `QSTASH_TOKEN` (+ `QSTASH_URL`, `QSTASH_CURRENT_SIGNING_KEY`, `QSTASH_NEXT_SIGNING_KEY`,
 *   `TICKWORK_PUBLIC_URL`) — deliver through QStash instead of the in-process queue
 * - `TICKWORK_ROLES` — route sets to serve (default `all`)
 *
 * Dev mode: auth is off (the banner says so), local deliveries are signed with a random key per
 * process, and an internal timer ticks every second, looking two seconds ahead.
 */
import { serverOptionsFromEnv, startServer, TickworkConfigError } from "tickwork/node";
import { handlers } from "./handlers.ts";

try {
  await startServer({
    handlers,
    ...serverOptionsFromEnv(process.env, "dev"),
    tickEveryMs: 1_000,
  });
} catch (error) {
  // A setup it cannot run with (the environment's `ConfigError`, the server's `StartError`).
  if (!(error instanceof TickworkConfigError)) throw error;
  console.error(`tickwork: ${error.message}`);
  process.exit(1);
}
