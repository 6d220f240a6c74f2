/**
 * @module
 * `createWorker`: a whole Worker from its bindings — the HTTP API on `fetch`, the tick on the Cron
 * Trigger (`scheduled`), and the Cloudflare Queues consumer (`queue`) when jobs travel on a Queue —
 * so a Worker entry is three lines. Built on first use and kept for the
 * isolate's life (clients, engine and app are reused across requests).
 */
import { Redis } from "@upstash/redis/cloudflare";
import type { ExecutionContext } from "hono";
import { TickworkConfigError } from "../../core/errors.ts";
import type { Handlers } from "../../engine/handlers.ts";
import type { EngineOptions } from "../../engine/options.ts";
import type {
  ConsumeOptions,
  ConsumeResult,
  QueueBatch,
} from "../../transport/cloudflare-queues/index.ts";
import { assertEnv, selectWorkerTransport, type TickworkEnv } from "./env.ts";
import { createTickwork, type Tickwork } from "./tickwork.ts";

/** What {@link createWorker} needs besides the bindings. */
export interface WorkerOptions {
  /** The handlers jobs and schedules may name. */
  handlers: Handlers;
  /**
   * Engine settings. The tick looks ahead a little beyond a once-a-minute Cron Trigger
   * (`crons = ["* * * * *"]`): set `tick.horizonMs` to `lookAheadFor(period)` for another period.
   */
  engine?: EngineOptions | undefined;
  /**
   * The Cloudflare Queues consumer's settings (`concurrency`, `backoff`, `busyFloor`), as
   * `createTickwork` takes them; unset, its defaults (the busy floor within half of the engine's
   * `reapAfterMs`).
   */
  consumer?: Omit<ConsumeOptions, "logger"> | undefined;
}

/** The Worker: what `export default` hands to the runtime. */
export interface TickworkWorker {
  fetch(request: Request, env: TickworkEnv, ctx: ExecutionContext): Promise<Response>;
  scheduled(controller: unknown, env: TickworkEnv, ctx: ExecutionContext): void;
  /**
   * The Cloudflare Queues consumer (`[[queues.consumers]]` of the queue bound as `TICKWORK_QUEUE`):
   * runs each message's job and acks or retries it on its own.
   */
  queue(batch: QueueBatch, env: TickworkEnv, ctx: ExecutionContext): Promise<ConsumeResult>;
}

/**
 * The Worker for `handlers`, configured from its bindings (see {@link TickworkEnv}: Upstash Redis,
 * QStash and `TICKWORK_PUBLIC_URL` — or a Cloudflare Queue bound as `TICKWORK_QUEUE`
 * (`selectWorkerTransport`) —, `TICKWORK_API_KEY` or `TICKWORK_CONFIG`, `CRON_SECRET`). A
 * missing binding fails every request with a `MissingEnvError` naming it; a binding it cannot use
 * (a malformed URL, an invalid configuration), with a `TickworkConfigError` naming it.
 *
 * @example
 * // src/worker.ts (wrangler.toml: main = "src/worker.ts", [triggers] crons = ["* * * * *"])
 * import { createWorker } from "tickwork/cloudflare";
 * import { handlers } from "./tickwork/handlers";
 *
 * export default createWorker({ handlers });
 */
export function createWorker(options: WorkerOptions): TickworkWorker {
  let tickwork: Tickwork | undefined;
  const tickworkFor = (env: TickworkEnv): Tickwork => {
    assertEnv(env);
    if (tickwork) return tickwork;
    const transport =
      selectWorkerTransport(env) === "cloudflare-queues"
        ? { queue: env.TICKWORK_QUEUE }
        : {
            qstash: {
              token: env.QSTASH_TOKEN as string,
              baseUrl: env.QSTASH_URL || undefined,
              currentSigningKey: env.QSTASH_CURRENT_SIGNING_KEY as string,
              nextSigningKey: env.QSTASH_NEXT_SIGNING_KEY as string,
            },
          };
    tickwork = createTickwork({
      handlers: options.handlers,
      redis: upstashRedis(env),
      prefix: env.TICKWORK_PREFIX,
      ...transport,
      publicUrl: env.TICKWORK_PUBLIC_URL || undefined,
      apiKeys: env.TICKWORK_API_KEY,
      config: env.TICKWORK_CONFIG || undefined,
      tickSecret: env.CRON_SECRET,
      basePath: env.TICKWORK_BASE_PATH,
      engine: options.engine,
      consumer: options.consumer,
    });
    return tickwork;
  };
  return {
    fetch(request, env, ctx) {
      return tickworkFor(env).fetch(request, env, ctx);
    },
    scheduled(_controller, env, ctx) {
      ctx.waitUntil(tickworkFor(env).engine.ticker.tick());
    },
    queue(batch, env, ctx) {
      return tickworkFor(env).queue(batch, env, ctx);
    },
  };
}

/** The Upstash client of the bindings; a URL it refuses is a `TickworkConfigError` naming it. */
function upstashRedis(env: TickworkEnv): Redis {
  try {
    return new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN });
  } catch (error) {
    throw new TickworkConfigError(
      `tickwork: UPSTASH_REDIS_REST_URL is not an Upstash REST URL (https://…): ${(error as Error).message}`,
      { variable: "UPSTASH_REDIS_REST_URL", cause: error },
    );
  }
}
