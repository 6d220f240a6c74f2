/**
 * @module
 * `createTickwork`: the production composition from an explicit config object — the Redis store
 * on a REST client, the transport (QStash, or Cloudflare Queues with the Worker's `queue()` as its
 * consumer), the engine and the HTTP app — with a `fetch` (and a `queue`) that hands background
 * work to `ctx.waitUntil`. Platform-neutral: it reads no environment and imports no
 * Node module, so a Workers entry (or any fetch-based runtime) builds it once per isolate.
 */
import type { ExecutionContext, Hono } from "hono";
import type { Config } from "../../config/index.ts";
import { TickworkConfigError } from "../../core/errors.ts";
import type { Engine, EngineOptions, Handlers } from "../../engine/index.ts";
import { createEngine } from "../../engine/index.ts";
import { type AppEnv, createApp } from "../../http/index.ts";
import { RedisStore, type ScriptClient } from "../../store/redis/index.ts";
import {
  busyFloorWithin,
  CloudflareQueuesTransport,
  type ConsumeOptions,
  type ConsumeResult,
  consumeQueueBatch,
  QUEUES_MAX_INPUT_BYTES,
  QUEUES_MAX_INPUT_BYTES_LIMIT,
  QUEUES_MAX_JOB_BYTES,
  QUEUES_RECOVER_GRACE_MS,
  type QueueBatch,
  type QueueProducer,
} from "../../transport/cloudflare-queues/index.ts";
import { QStashTransport, type QStashTransportOptions } from "../../transport/qstash/index.ts";
import { type DeliveryUrls, resolveDeployment } from "../deployment.ts";
import { Background } from "./background.ts";

/** The QStash settings: credentials and delivery options; the URLs follow from `publicUrl`. */
export type QStashConfig = Omit<QStashTransportOptions, "workerUrl" | "failureCallbackUrl">;

/** What {@link createTickwork} needs. */
export interface TickworkConfig {
  /** The handlers jobs and schedules may name. */
  handlers: Handlers;
  /**
   * The Redis client of the store: anything with `eval`/`evalsha`.
   * @example new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN })
   */
  redis: ScriptClient;
  /**
   * Redis key prefix (every key lives under the hash tag `{prefix}`); empty means the default.
   * @default "tw"
   */
  prefix?: string | undefined;
  /** QStash credentials and options: jobs travel through QStash. Give this or `queue`. */
  qstash?: QStashConfig | undefined;
  /**
   * The Cloudflare Queue binding jobs travel on instead of QStash (`env.TICKWORK_QUEUE`); the
   * Worker's `queue()` handler consumes it ({@link Tickwork.queue}). Give this or `qstash`.
   */
  queue?: QueueProducer | undefined;
  /**
   * How the `queue()` handler runs a batch (messages at once, backoff). With `queue`, the engine's
   * `maxInputBytes` defaults to `QUEUES_MAX_INPUT_BYTES` (100,000; at most
   * `QUEUES_MAX_INPUT_BYTES_LIMIT`, 127,000: a message holds 128 KB) and `tick.recoverGraceMs` to
   * `QUEUES_RECOVER_GRACE_MS` (5 min; Queues does not deduplicate a re-publish).
   */
  consumer?: Omit<ConsumeOptions, "logger"> | undefined;
  /**
   * The app's public URL: QStash delivers to `publicUrl + "/v1/worker"` and calls
   * `publicUrl + "/v1/dead"` when a job gives up; both are checked against the signatures.
   * Trailing slashes are dropped. Required with QStash; optional with `queue`.
   * @example "https://tickwork.acme.workers.dev"
   */
  publicUrl?: string | undefined;
  /**
   * Plain API keys accepted as `Authorization: Bearer <key>` on the API routes, each an `admin`
   * key of the tenant `"default"` (a list, or `TICKWORK_API_KEY`'s comma-separated text). At
   * least one key is needed: here or in `config.tenants`.
   */
  apiKeys?: readonly string[] | string | undefined;
  /**
   * Tenants with hashed keys, scopes and manifests; CORS; degradation (`defineConfig(…)`, or
   * the JSON text of `env.TICKWORK_CONFIG`). `config.degradation` applies unless
   * `engine.degradation` is given.
   */
  config?: Config | string | undefined;
  /**
   * Serve every route under this path, e.g. a Worker on the route `example.com/api/tickwork/*`.
   * `publicUrl` then names the same path (`https://example.com/api/tickwork`).
   * @default "/"
   */
  basePath?: string | undefined;
  /** `/v1/tick` needs `Authorization: Bearer <tickSecret>`; without it, `/v1/tick` is not served. */
  tickSecret?: string | undefined;
  /**
   * Engine settings. The tick looks ahead a little beyond a once-a-minute Cron Trigger; for
   * another period set `tick.horizonMs` to `lookAheadFor(period)`.
   * @default { tick: { horizonMs: 65_000 } } (`lookAheadFor(60_000)`)
   */
  engine?: EngineOptions | undefined;
}

/** The composed deployment. */
export interface Tickwork {
  engine: Engine;
  app: Hono<AppEnv>;
  /**
   * Serve one request: `app.fetch`, then `ctx.waitUntil` for the publishes it deferred (a submit
   * answers once the job is stored; the publish to QStash finishes in the background).
   */
  fetch(request: Request, env: unknown, ctx: ExecutionContext): Promise<Response>;
  /**
   * Consume one Cloudflare Queues batch (the Worker's `queue` handler): each message runs through
   * the runner and is acked or retried on its own (`src/transport/cloudflare-queues/consumer.ts`);
   * publishes its handlers deferred (follow-up jobs) finish under `ctx.waitUntil`.
   */
  queue(batch: QueueBatch, env: unknown, ctx: ExecutionContext): Promise<ConsumeResult>;
}

/**
 * Compose store, transport, engine and app. Build it once per isolate and reuse it. The settings
 * every platform shares are checked by `resolveDeployment` (`src/adapter/deployment.ts`).
 *
 * @throws TickworkConfigError naming the variable and field at fault: no API key, no or an invalid
 * public URL, a bad base path, an invalid `config` (a `ConfigValidationError`); RangeError for an
 * empty QStash credential.
 * @example
 * import { Redis } from "@upstash/redis/cloudflare";
 * const tickwork = createTickwork({
 *   handlers,
 *   redis: new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }),
 *   qstash: {
 *     token: env.QSTASH_TOKEN,
 *     currentSigningKey: env.QSTASH_CURRENT_SIGNING_KEY,
 *     nextSigningKey: env.QSTASH_NEXT_SIGNING_KEY,
 *   },
 *   publicUrl: env.TICKWORK_PUBLIC_URL,
 *   apiKeys: env.TICKWORK_API_KEY, // comma-separated
 *   tickSecret: env.CRON_SECRET,
 * });
 * // fetch: (request, env, ctx) => tickwork.fetch(request, env, ctx)
 * // scheduled: (controller, env, ctx) => ctx.waitUntil(tickwork.engine.ticker.tick())
 */
export function createTickwork(config: TickworkConfig): Tickwork {
  if ((config.qstash === undefined) === (config.queue === undefined)) {
    throw new TickworkConfigError(
      "createTickwork needs exactly one transport: qstash (QStash credentials) or queue (a Cloudflare Queue binding)",
      { variable: "TICKWORK_TRANSPORT" },
    );
  }
  const deployment = resolveDeployment({
    publicUrl: config.publicUrl,
    requirePublicUrl: config.qstash !== undefined,
    queue: config.qstash ? "qstash" : "cloudflare-queues",
    apiKeys: config.apiKeys,
    config: config.config,
    basePath: config.basePath,
    tickSecret: config.tickSecret,
    engine: config.engine,
    // A once-a-minute Cron Trigger.
    horizonMs: 60_000,
    platform: "cloudflare",
  });
  const store = new RedisStore({
    client: config.redis,
    ...(config.prefix ? { prefix: config.prefix } : {}),
    ...(deployment.retention ? { retention: deployment.retention } : {}),
  });
  const transport = config.qstash
    ? new QStashTransport({ ...config.qstash, ...(deployment.delivery as DeliveryUrls) })
    : new CloudflareQueuesTransport({ queue: config.queue as QueueProducer });
  const background = new Background();
  const engine = createEngine({
    ...(config.queue ? queuesEngineOptions(deployment.engine) : deployment.engine),
    store,
    transport,
    handlers: config.handlers,
    defer: background.defer,
  });
  const app = createApp({ ...deployment.app, engine });
  let warnedQueue = false;
  return {
    engine,
    app,
    async fetch(request, env, ctx) {
      try {
        return await app.fetch(request, env ?? {}, ctx);
      } finally {
        if (background.size > 0) ctx.waitUntil(background.settled());
      }
    },
    async queue(batch, _env, ctx) {
      if (!config.queue && !warnedQueue) {
        // Messages left on a queue from before a switch to QStash: still jobs, so they run.
        warnedQueue = true;
        engine.options.logger.warn(
          "a Cloudflare Queues batch arrived while QStash is the transport; running it, but follow-up jobs go through QStash",
          { queue: batch.queue, messages: batch.messages.length },
        );
      }
      try {
        return await consumeQueueBatch(batch, (body) => engine.runner.runPulled(body), {
          ...config.consumer,
          // A busy message must come back before its job's watch is due (reapAfterMs after the
          // limit's wait), or the reaper re-dispatches a job that is only waiting.
          busyFloor: config.consumer?.busyFloor ?? busyFloorWithin(engine.options.reapAfterMs),
          logger: engine.options.logger,
        });
      } finally {
        if (background.size > 0) ctx.waitUntil(background.settled());
      }
    },
  };
}

/**
 * The engine options on Queues: `maxInputBytes` defaults to {@link QUEUES_MAX_INPUT_BYTES} (a
 * message holds 128 KB: larger inputs are refused at submit with 413, not at publish) and may not
 * exceed {@link QUEUES_MAX_INPUT_BYTES_LIMIT}; `tick.recoverGraceMs` defaults to
 * {@link QUEUES_RECOVER_GRACE_MS} (never above `reapAfterMs`, which must be at least it).
 */
function queuesEngineOptions(engine: EngineOptions): EngineOptions {
  const max = engine.maxInputBytes;
  if (max !== undefined && !(max <= QUEUES_MAX_INPUT_BYTES_LIMIT)) {
    throw new TickworkConfigError(
      `engine.maxInputBytes is ${max}; on Cloudflare Queues a job's message holds 128 KB, so at most ${QUEUES_MAX_INPUT_BYTES_LIMIT}`,
      { variable: "TICKWORK_QUEUE", field: "engine.maxInputBytes" },
    );
  }
  const grace = engine.tick?.recoverGraceMs;
  return {
    ...engine,
    maxInputBytes: max ?? QUEUES_MAX_INPUT_BYTES,
    maxJobBytes: Math.min(engine.maxJobBytes ?? Infinity, QUEUES_MAX_JOB_BYTES),
    tick: {
      ...engine.tick,
      recoverGraceMs: grace ?? Math.min(QUEUES_RECOVER_GRACE_MS, engine.reapAfterMs ?? Infinity),
    },
  };
}
