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
import { upstashClient } from "../deployment.ts";
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
              baseUrl: qstashUrl(env),
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
      // Trimmed (a secret stored with its line break never matched the cron's bearer).
      tickSecret: optionalText(env, "CRON_SECRET")?.trim() || undefined,
      basePath: optionalText(env, "TICKWORK_BASE_PATH"),
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
  return upstashClient(
    () => new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }),
    "UPSTASH_REDIS_REST_URL",
  );
}

/**
 * An optional text binding, or `undefined`; a binding of another type (a number in `[vars]`) is a
 * `TickworkConfigError` naming it, not a `TypeError` deep in the setup.
 */
function optionalText(env: TickworkEnv, name: keyof TickworkEnv & string): string | undefined {
  const value = (env as unknown as Record<string, unknown>)[name];
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") {
    throw new TickworkConfigError(`tickwork: ${name} must be text, got a ${typeof value}`, {
      variable: name,
    });
  }
  return value;
}

/** `QSTASH_URL` checked: an http(s) URL, or `undefined` (QStash's own). */
function qstashUrl(env: TickworkEnv): string | undefined {
  const text = optionalText(env, "QSTASH_URL")?.trim();
  if (!text) return undefined;
  let protocol: string | undefined;
  try {
    protocol = new URL(text).protocol;
  } catch {
    // Not shown: a credential pasted into the wrong binding would be.
  }
  if (protocol !== "http:" && protocol !== "https:") {
    throw new TickworkConfigError(
      "tickwork: QSTASH_URL must be an http:// or https:// URL (its value is not shown)",
      { variable: "QSTASH_URL" },
    );
  }
  return text;
}
