/**
 * @module
 * The Node entry: `npm run dev` runs this file. It is the one place (with the CLI) that reads the
 * environment:
 *
 * - `PORT` — port to listen on (default 8787; `0` picks a free one)
 * - `HOST` — interface to bind (default 127.0.0.1)
 * - `REDIS_URL` — keep state in Redis (ioredis) instead of memory
 * - `TICKWORK_PREFIX` — Redis key prefix (default `tw`)
 *
 * Dev mode: auth is off (the banner says so), deliveries are signed with a random key per process,
 * and an internal timer ticks every second with a one-second look-ahead.
 */
import { StartError, startServer } from "tickwork/node";
import { handlers } from "./handlers.ts";

try {
  await startServer({
    handlers,
    dev: true,
    port: process.env.PORT ? Number(process.env.PORT) : 8787,
    ...(process.env.HOST ? { hostname: process.env.HOST } : {}),
    ...(process.env.REDIS_URL ? { redisUrl: process.env.REDIS_URL } : {}),
    ...(process.env.TICKWORK_PREFIX ? { prefix: process.env.TICKWORK_PREFIX } : {}),
    tickEveryMs: 1_000,
    engine: { tick: { horizonMs: 1_000 } },
  });
} catch (error) {
  if (!(error instanceof StartError)) throw error;
  console.error(`tickwork: ${error.message}`);
  process.exit(1);
}
