/**
 * @module
 * `startServer`: the Node topology in one call (docs/architecture.md, "Topologies and roles"): a
 * store (memory, Redis over TCP with ioredis, or Upstash over REST), a transport (QStash, or the
 * local queue delivering over HTTP to a worker route), the engine, the HTTP app with the chosen
 * roles, a tick timer when the roles include `tick`, graceful shutdown, and the start banner.
 * Configuration comes in explicitly; the entry files (`functions/node.ts`, the CLI) read the
 * environment (see `serverOptionsFromEnv`).
 */
import { randomBytes } from "node:crypto";
import type { Config } from "../../config/index.ts";
import { MAX_TIMER_MS } from "../../core/duration.ts";
import { TickworkConfigError } from "../../core/errors.ts";
import type { Handlers } from "../../engine/handlers.ts";
import { createEngine, type Engine, type EngineOptions } from "../../engine/index.ts";
import { jsonLogger, type Logger } from "../../engine/logger.ts";
import { PullWorker } from "../../engine/pull-worker.ts";
import { createApp } from "../../http/index.ts";
import type { Role } from "../../http/roles.ts";
import { RedisStreams, type StreamsClient } from "../../store/redis/index.ts";
import { LocalTransport } from "../../transport/local/index.ts";
import type { Transport } from "../../transport/port.ts";
import { DEFAULT_QSTASH_URL } from "../../transport/qstash/options.ts";
import { type DeliveryUrls, deliveryUrls, resolveDeployment } from "../deployment.ts";
import { loadPeer, MissingPeerError } from "../peer.ts";
import { type BannerInfo, formatBanner, redactRedisUrl, sampleJob } from "./banner.ts";
import { StartError } from "./errors.ts";
import { type HeartbeatOptions, registerServer, resolveNodeOptions } from "./nodes.ts";
import { nodeQStashHttp } from "./qstash-http.ts";
import { type FetchApp, serve } from "./serve.ts";
import { nodeSignals } from "./signals.ts";
import { openStore, type StoreTarget } from "./store.ts";
import { startTicker } from "./tick-timer.ts";

/** Errors of `listen` that a setting (HOST, PORT) causes. */
const LISTEN_ERRORS = new Set(["EADDRNOTAVAIL", "ENOTFOUND", "EAI_AGAIN", "EACCES"]);

/** QStash credentials (the Upstash console's QStash page). */
export interface QStashCredentials {
  /** `QSTASH_TOKEN`. */
  token: string;
  /**
   * `QSTASH_URL`: a region, or a local QStash dev server.
   * @default "https://qstash.upstash.io"
   */
  baseUrl?: string | undefined;
  /** `QSTASH_CURRENT_SIGNING_KEY`. */
  currentSigningKey: string;
  /** `QSTASH_NEXT_SIGNING_KEY`. */
  nextSigningKey: string;
}

/** Options of {@link startServer}. */
export interface StartServerOptions {
  /** The handlers jobs and schedules may name. */
  handlers: Handlers;
  /**
   * Development mode: no API key needed (the banner says so), 500s name their error.
   * Outside dev, `apiKeys` is required when the roles serve API routes.
   * @default false
   */
  dev?: boolean | undefined;
  /** @default 8787 (`0` picks a free port; the banner shows it) */
  port?: number | undefined;
  /**
   * Interface to bind.
   * @default "127.0.0.1" in dev, "0.0.0.0" otherwise
   */
  hostname?: string | undefined;
  /**
   * The route sets this server serves (see `Role` in `tickwork/http`). The tick timer runs only
   * when they include `tick` (or `all`); every replica may run it, the tick lease picks one.
   * @default ["all"]
   * @example ["api", "worker"]
   */
  roles?: readonly Role[] | undefined;
  /**
   * Redis over TCP (ioredis) for state. Exclusive with `upstash`; without either, the in-memory
   * store.
   * @example "redis://127.0.0.1:6379"
   */
  redisUrl?: string | undefined;
  /**
   * Redis over Upstash's REST API (`@upstash/redis`) for state. Exclusive with `redisUrl`.
   * @example { url: "https://eu1-x.upstash.io", token: process.env.UPSTASH_REDIS_REST_TOKEN! }
   */
  upstash?: { url: string; token: string } | undefined;
  /**
   * Key prefix in Redis (every key lives under the hash tag `{prefix}`).
   * @default "tw"
   */
  prefix?: string | undefined;
  /**
   * Deliver jobs through QStash instead of the in-process queue; needs `publicUrl`, which QStash
   * must be able to reach.
   */
  qstash?: QStashCredentials | undefined;
  /**
   * How jobs travel: `"qstash"` (needs `qstash`), `"streams"` (Redis Streams on `redisUrl`;
   * servers with the worker role pull and run deliveries) or `"local"` (the in-process queue).
   * @default "qstash" with `qstash`, else "streams" with `redisUrl`, else "local"
   */
  transport?: "qstash" | "streams" | "local" | undefined;
  /**
   * Deliveries a Streams worker (a server with the worker role) runs at once.
   * @default 10
   */
  concurrency?: number | undefined;
  /**
   * Deliveries a Streams worker may pull ahead of its free slots while its handlers are short
   * (`PullWorker`'s `readAhead`; 0 turns it off).
   * @default the concurrency
   */
  readAhead?: number | undefined;
  /**
   * The public URL of this app, where the queue delivers (`/v1/worker`, `/v1/dead`) and what
   * delivery signatures are checked against. Required with `qstash`. With the local queue it
   * sends deliveries to another server (e.g. a Kubernetes Service of `worker` replicas) instead
   * of this one; every server must then share `signingKey`.
   * @default this server's own URL (local queue only)
   * @example "https://jobs.example.com"
   */
  publicUrl?: string | undefined;
  /**
   * Plain API keys (`TICKWORK_API_KEY`) for the API routes, each an `admin` key of the tenant
   * `"default"`. Outside dev, the API routes need these or tenant keys in `config`.
   */
  apiKeys?: readonly string[] | undefined;
  /**
   * Tenants with hashed keys, scopes and manifests; CORS; degradation settings (the file
   * `TICKWORK_CONFIG` names, or `defineConfig(…)`). `config.degradation` applies unless
   * `engine.degradation` is given.
   */
  config?: Config | undefined;
  /**
   * Required as `Authorization: Bearer <tickSecret>` on `/v1/tick`. Outside dev, without it
   * `/v1/tick` is not served over HTTP (the server's own timer still ticks); in dev the route is
   * open.
   */
  tickSecret?: string | undefined;
  /**
   * Period of the internal tick timer; the tick looks ahead `lookAheadFor` of it (2 s for 1 s) unless
   * `engine.tick.horizonMs` says otherwise. A whole number of ms from 1 to 2147483647.
   * @default 1_000
   */
  tickEveryMs?: number | undefined;
  /** Engine settings (tick, job defaults, logger). */
  engine?: EngineOptions | undefined;
  /**
   * Key signing the local queue's deliveries. Required when they leave this server (`publicUrl`
   * set, or roles without `worker`): the receiving server checks them with its own.
   * @default 32 random bytes per process
   */
  signingKey?: string | undefined;
  /** Signals that shut the server down (see {@link serve}). @default ["SIGINT", "SIGTERM"] */
  signals?: readonly NodeJS.Signals[] | false | undefined;
  /**
   * How long requests in flight may finish at shutdown (0 to 2147483647 ms).
   * @default 2_000 in dev, 10_000 otherwise
   */
  shutdownTimeoutMs?: number | undefined;
  /**
   * How long an idle keep-alive connection stays open (`TICKWORK_KEEP_ALIVE_MS`; see
   * {@link serve}'s `keepAliveTimeoutMs`).
   * @default 65_000
   */
  keepAliveTimeoutMs?: number | undefined;
  /** Where the banner goes; `false` for none. @default console.log */
  print?: ((text: string) => void) | false | undefined;
  /**
   * Labels this server reports in the node registry (`GET /v1/nodes`), e.g.
   * `{ region: "eu-west-1", gpu: "a100" }` (`TICKWORK_CAPABILITIES` as JSON): at most 32 entries,
   * names and values up to 200 characters.
   * @default {}
   */
  capabilities?: Readonly<Record<string, string>> | undefined;
  /**
   * The server's heartbeat into the node registry: every `everyMs` (default 15 s), stale after
   * `ttlMs` (default 45 s) without one, dropped after 10 × `ttlMs`. `false`: do not register.
   * Each heartbeat is one store round trip (5 billed commands on Redis).
   */
  heartbeat?: HeartbeatOptions | false | undefined;
  /**
   * This server's id in the node registry, and what a job's `placement.nodes` / `notNodes` name
   * (`TICKWORK_NODE_ID`). @default a random id per process
   */
  nodeId?: string | undefined;
  /**
   * The worker group this server runs (`TICKWORK_GROUP`): only jobs placed in it, none of the
   * default group's (docs/adr/0017-placement.md). @default none (the default group)
   */
  group?: string | undefined;
  /** With QStash: each worker group's worker URL (`TICKWORK_WORKER_GROUPS`). */
  workerGroups?: Record<string, string> | undefined;
}

/** A running server. */
export interface RunningServer {
  url: string;
  port: number;
  engine: Engine;
  /** The banner text (also printed, unless `print: false`). */
  banner: string;
  /** Shut down gracefully: ticker, server, queue, store. Idempotent. */
  close(): Promise<void>;
}

/**
 * Start tickwork on Node.
 *
 * @example
 * const server = await startServer({ handlers, dev: true, port: 8787 });
 * // … later
 * await server.close();
 *
 * @example
 * // An API and worker replica on Redis, delivering through QStash; ticks run elsewhere.
 * await startServer({
 *   handlers,
 *   roles: ["api", "worker"],
 *   redisUrl: process.env.REDIS_URL,
 *   apiKeys: [process.env.TICKWORK_API_KEY!],
 *   qstash: { token, currentSigningKey, nextSigningKey },
 *   publicUrl: "https://jobs.example.com",
 * });
 */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  try {
    return await start(options);
  } catch (error) {
    // Any setup it refuses is a StartError (with the message, variable and field of the check).
    if (error instanceof TickworkConfigError) throw StartError.from(error);
    // A client the configuration asks for is not installed: a start error naming the package.
    if (error instanceof MissingPeerError) {
      throw new StartError(error.message, { cause: error, atRuntime: true });
    }
    throw error;
  }
}

async function start(options: StartServerOptions): Promise<RunningServer> {
  const tickEveryMs = options.tickEveryMs ?? 1_000;
  // Timer delays, checked before anything opens: Node runs a timer past 2^31 - 1 ms after 1 ms
  // (a 3e9 ms tick period ticked every millisecond), and a negative or NaN one at once (a
  // shutdown timeout of -1 or NaN cut the requests in flight as soon as shutdown began).
  timerOption("tickEveryMs", options.tickEveryMs, 1);
  timerOption("shutdownTimeoutMs", options.shutdownTimeoutMs, 0);
  const queue = transportOf(options);
  const deployment = resolveDeployment({
    dev: options.dev,
    roles: options.roles,
    publicUrl: options.publicUrl,
    queue,
    signingKey: options.signingKey,
    apiKeys: options.apiKeys,
    config: options.config,
    tickSecret: options.tickSecret,
    engine: options.engine,
    horizonMs: tickEveryMs,
    platform: "node",
  });
  const { dev, roles, serves, publicUrl, config } = deployment;
  const port = options.port ?? 8787;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new StartError(
      `port must be a whole number from 0 to 65535, got ${String(options.port)}`,
      { variable: "PORT", field: "port" },
    );
  }
  if (options.group !== undefined && queue === "qstash" && (serves.write || serves.tick)) {
    if (options.workerGroups?.default === undefined) {
      // Its own worker URL is its group's: what it submits or ticks for the default group would
      // go there and be refused until QStash gave up (docs/adr/0017-placement.md).
      throw new StartError(
        `this server runs worker group "${options.group}" and publishes through QStash: set ` +
          `TICKWORK_WORKER_GROUPS' "default" to the worker URL of jobs without a group ` +
          '(e.g. {"default":"https://app.example.com/v1/worker"}), or run it with --role worker',
        { variable: "TICKWORK_WORKER_GROUPS", field: "workerGroups" },
      );
    }
  }
  const nodeOptions = resolveNodeOptions(options.capabilities, options.heartbeat);
  const logger: Logger = options.engine?.logger ?? jsonLogger();
  for (const [setting, why] of unusedSettings(options, queue, serves.worker)) {
    logger.warn(`tickwork: ${setting} is set but not used: ${why}`);
  }
  const engineOptions: EngineOptions = {
    ...deployment.engine,
    ...(options.nodeId !== undefined ? { instanceId: options.nodeId } : {}),
    ...(options.group !== undefined ? { group: options.group } : {}),
    ...(options.capabilities !== undefined ? { capabilities: options.capabilities } : {}),
    localSignals: options.engine?.localSignals ?? nodeSignals(),
    logger,
  };

  const target: StoreTarget = {
    ...storeTarget(options, queue),
    // What the store keeps, from `config.retention`.
    ...(deployment.retention ? { retention: deployment.retention } : {}),
  };
  const { store, close: closeStore, redis } = await openStore(target, logger);
  const storeName =
    target.kind === "memory" ? "the store" : `Redis at ${redactRedisUrl(target.url)}`;
  // Undone in reverse order at shutdown (or when the start fails half-way).
  const cleanups: Array<() => unknown> = [closeStore, () => store.close?.()];
  let app: FetchApp = { fetch: () => new Response("starting", { status: 503 }) };
  let server: Awaited<ReturnType<typeof serve>>;
  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? (dev ? 2_000 : 10_000);
  // What undoing the start may take: the shutdown's deadline, or a short one for a start that
  // failed (no banner yet, so nobody was told to send it work; a request that came anyway is
  // cut), so its failure is reported soon after it happened, not after the Redis that caused it
  // kept the requests in flight and each step waiting for the whole deadline.
  let cleanupMs = shutdownTimeoutMs;
  const failed = () => {
    cleanupMs = Math.min(cleanupMs, FAILED_START_CLEANUP_MS);
    startSettled();
    return server.close({ timeoutMs: cleanupMs });
  };
  // A shutdown that begins while the start is still under way (a SIGTERM during its round trips
  // to Redis) waits for the start to settle first, within its deadline: what the start sets up
  // after the signal (the pull worker, the node's registration) is undone with the rest.
  let startSettled: () => void = () => {};
  const starting = new Promise<void>((resolve) => {
    startSettled = resolve;
  });
  try {
    server = await serve(() => app, {
      port,
      hostname: options.hostname ?? (dev ? "127.0.0.1" : "0.0.0.0"),
      signals: options.signals ?? ["SIGINT", "SIGTERM"],
      shutdownTimeoutMs,
      keepAliveTimeoutMs: options.keepAliveTimeoutMs,
      onShutdown: async () => {
        // Every step bounded, all of them together by the shutdown timeout: a Redis that stops
        // answering (paused, a partition) leaves a tick, a heartbeat or a QUIT waiting for good.
        // The store's connection is closed last whatever is left (its close is bounded itself).
        const deadline = Date.now() + cleanupMs;
        if (!(await within(() => starting, Math.max(STEP_MIN_MS, deadline - Date.now())))) {
          logger.warn("tickwork: the start did not finish in time for the shutdown; going on");
        }
        for (const cleanup of [...cleanups].reverse()) {
          if (cleanup === closeStore) continue;
          const left = Math.max(STEP_MIN_MS, deadline - Date.now());
          if (!(await within(cleanup, left))) {
            logger.warn("tickwork: a shutdown step did not finish in time; going on", {
              waitedMs: left,
            });
          }
        }
        await closeStore();
      },
    });
  } catch (error) {
    await closeStore();
    const code = (error as { code?: unknown }).code;
    if (code === "EADDRINUSE") {
      throw new StartError(`port ${port} is in use: set PORT (or --port) to another one`, {
        variable: "PORT",
        field: "port",
        cause: error,
        atRuntime: true,
      });
    }
    // A host this machine cannot listen on (a name that does not resolve, an address it does not
    // have) or a port it may not take: one line naming the setting, not a stack.
    if (typeof code === "string" && LISTEN_ERRORS.has(code)) {
      const host = options.hostname ?? (dev ? "127.0.0.1" : "0.0.0.0");
      throw new StartError(
        `cannot listen on ${host}:${port} (${code}): set HOST (or --host) to an address of this machine, or PORT (or --port)`,
        { variable: "HOST", field: "hostname", cause: error, atRuntime: true },
      );
    }
    throw error;
  }

  // A step undone as soon as shutdown begins, alongside the HTTP drain and not after it, and
  // also a cleanup, so the shutdown waits for it (`undo` answers one promise however often it is
  // called). Undone at once when the shutdown began during the start.
  const undoAtShutdown = (undo: () => Promise<unknown>) => {
    if (server.signal.aborted) void undo();
    else server.signal.addEventListener("abort", () => void undo(), { once: true });
    cleanups.push(undo);
  };

  let engine: Engine;
  let worker: PullWorker | undefined;
  let ticking: boolean;
  let transportBanner: BannerInfo["transport"];
  try {
    // Without a public URL the local queue delivers to this server.
    const delivery = deployment.delivery ?? deliveryUrls(server.url);
    const made =
      queue === "streams" && redis
        ? streamsTransport(
            redis,
            target.kind === "redis" ? target.prefix : "tw",
            serves.worker ? (options.concurrency ?? 10) : undefined,
            logger,
          )
        : await makeTransport(options, delivery);
    const { transport } = made;
    transportBanner = made.banner;
    if (transport instanceof LocalTransport) cleanups.push(() => transport.close());
    // A long-lived process: a submit is answered once stored, its publish runs in the background
    // (coalesced with others), and shutdown waits for the publishes still under way.
    engine = createEngine({
      store,
      transport,
      handlers: options.handlers,
      ...engineOptions,
      backgroundPublish: true,
    });
    const { broker } = engine;
    cleanups.push(() => broker.settled());
    app = createApp({ ...deployment.app, engine, publicUrl: publicUrl ?? server.url });
    if (transport instanceof RedisStreams) {
      cleanups.push(() => transport.close());
      // Servers with the worker role pull and run deliveries; at shutdown they stop pulling and
      // finish what they hold (what is left stays pending for another worker to take over).
      if (serves.worker) {
        worker = new PullWorker({
          runner: engine.runner,
          queue: transport,
          concurrency: options.concurrency ?? 10,
          readAhead: options.readAhead,
          logger,
        });
        const pulling = worker;
        // Stop pulling as soon as shutdown begins (under the HTTP drain's deadline): nothing new
        // starts once SIGTERM has arrived. Set up before the worker starts: a start that fails
        // (its step timed out) stops it too, so a consumer group created late starts no pull loop.
        let stopped: Promise<unknown> | undefined;
        const stopPulling = () =>
          (stopped ??= pulling
            .stop({ deadlineMs: Math.max(0, cleanupMs - 500) })
            .then(({ left }) => {
              // Still running at the deadline: left pending, taken over by another worker once
              // idle past its claim time (their attempt is spent).
              if (left > 0) {
                logger.warn("shutdown left jobs running; another worker takes them over", {
                  left,
                });
              }
            }));
        undoAtShutdown(stopPulling);
        await startStep("creating the worker's consumer group", storeName, () => pulling.start());
      }
    }
    ticking = serves.tick;
    if (ticking) {
      const ticker = startTicker(engine, tickEveryMs, { signal: server.signal, logger });
      cleanups.push(() => ticker.stop());
    }
  } catch (error) {
    await failed();
    throw error instanceof RangeError || error instanceof TypeError
      ? new StartError(error.message, { cause: error })
      : error;
  }
  if (!dev && target.kind === "memory") {
    logger.warn("tickwork: in-memory store outside dev: state is lost on restart");
  }
  // The node registry: the first heartbeat before the banner, then one every `everyMs`.
  let node: Awaited<ReturnType<typeof registerServer>>;
  try {
    node = await startStep(
      "registering the node",
      storeName,
      () =>
        registerServer({
          ...nodeOptions,
          store,
          id: engine.options.instanceId,
          roles,
          handlers: Object.keys(options.handlers),
          transport: queue,
          worker: () => worker,
          logger,
        }),
      // Registered after its step timed out: its heartbeat would beat on for a server that never
      // started.
      (late) => late?.stop(),
    );
  } catch (error) {
    await failed();
    throw error;
  }
  // The node leaves the registry as soon as shutdown begins, as its worker stops pulling: not
  // after the requests in flight have drained (a long poll or an event stream holds a server up to
  // its shutdown timeout, and it would go on beating and read as live). Pushed last as well, so the
  // shutdown's steps wait for it first.
  if (node) undoAtShutdown(node.stop);
  startSettled();
  // A shutdown began during the start: it undoes all of the above, so no banner says otherwise.
  if (server.signal.aborted) {
    return { url: server.url, port: server.port, engine, banner: "", close: server.close };
  }

  const banner = formatBanner({
    mode: dev ? "dev" : "start",
    url: server.url,
    roles,
    store:
      target.kind === "memory"
        ? "memory"
        : target.kind === "redis"
          ? { redisUrl: target.url, prefix: target.prefix }
          : { upstashUrl: target.url, prefix: target.prefix },
    transport: transportBanner,
    tickEveryMs: ticking ? tickEveryMs : undefined,
    horizonMs: engine.options.tick.horizonMs,
    auth: deployment.keyed,
    ...(config?.tenants?.length ? { tenants: config.tenants.length } : {}),
    plainKeys: (options.apiKeys?.length ?? 0) > 0,
    tickRoute: dev || Boolean(options.tickSecret),
    handlers: Object.keys(options.handlers),
    sample: sampleJob(options.handlers),
  });
  if (options.print !== false) (options.print ?? console.log)(banner);
  return { url: server.url, port: server.port, engine, banner, close: server.close };
}

/**
 * `value` (when set) as a timer's delay: a whole number of ms from `min` to 2147483647.
 * @throws StartError naming the option otherwise.
 */
function timerOption(field: "tickEveryMs" | "shutdownTimeoutMs", value: unknown, min: number) {
  if (value === undefined) return;
  if (!(Number.isInteger(value) && (value as number) >= min && (value as number) <= MAX_TIMER_MS)) {
    throw new StartError(
      `${field} must be a whole number of ms from ${min} to ${MAX_TIMER_MS}, got ${String(value)}`,
      { field },
    );
  }
}

/**
 * Settings given that this server's transport and roles do not use, each with why: they were
 * ignored without a word (a concurrency set on a server delivering through QStash looked applied).
 */
function unusedSettings(
  options: StartServerOptions,
  queue: "qstash" | "streams" | "local",
  worker: boolean,
): [setting: string, why: string][] {
  const unused: [string, string][] = [];
  const pulls = queue === "streams" && worker;
  const pullNote =
    queue !== "streams"
      ? `only a Redis Streams worker pulls deliveries (this server's transport is ${queue})`
      : "this server has no worker role, so it pulls nothing";
  if (options.concurrency !== undefined && !pulls) {
    unused.push(["TICKWORK_CONCURRENCY (concurrency)", pullNote]);
  }
  if (options.readAhead !== undefined && !pulls) {
    unused.push(["TICKWORK_READ_AHEAD (readAhead)", pullNote]);
  }
  if (options.signingKey !== undefined && queue !== "local") {
    unused.push([
      "TICKWORK_SIGNING_KEY (signingKey)",
      `it signs the local queue's deliveries, and this server's transport is ${queue}`,
    ]);
  }
  if (options.workerGroups !== undefined && queue !== "qstash") {
    unused.push([
      "TICKWORK_WORKER_GROUPS (workerGroups)",
      `it names QStash's worker URLs, and this server's transport is ${queue}`,
    ]);
  }
  return unused;
}

/** How long one of the start's round trips to the store may take, as its first check may. */
const START_STEP_MS = 5_000;

/**
 * `step`, one of the start's round trips to the store after its first check: bounded, and its
 * failure one line naming the store. A Redis that stopped answering writes after the check (a
 * failover pauses them) hung the start without a word, and a read-only replica's `READONLY`
 * ended it with a stack. What a step that timed out completes later is handed to `late` (to undo
 * it: the start has failed by then).
 */
async function startStep<T>(
  what: string,
  storeName: string,
  step: () => Promise<T>,
  late?: (result: T) => unknown,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut = false;
  const running = step();
  running.then(
    (result) => {
      if (timedOut) void Promise.resolve(late?.(result)).catch(() => {});
    },
    () => {},
  );
  try {
    return await Promise.race([
      running,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          timedOut = true;
          reject(
            new StartError(`${storeName} did not answer within ${START_STEP_MS} ms while ${what}`, {
              atRuntime: true,
            }),
          );
        }, START_STEP_MS);
      }),
    ]);
  } catch (error) {
    if (error instanceof StartError) throw error;
    throw new StartError(`cannot use ${storeName} while ${what}: ${(error as Error).message}`, {
      cause: error,
      atRuntime: true,
    });
  } finally {
    clearTimeout(timer);
  }
}

/** What undoing a start that failed may take: its requests in flight, then its steps together. */
const FAILED_START_CLEANUP_MS = 1_000;

/** The least a shutdown step gets once the shutdown's deadline has passed. */
const STEP_MIN_MS = 250;

/** Run `step`; true when it settled within `ms` (its error is thrown), false when it did not. */
async function within(step: () => unknown, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      Promise.resolve()
        .then(step)
        .then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The transport asked for, else the default (see `StartServerOptions.transport`). */
function transportOf(options: StartServerOptions): "qstash" | "streams" | "local" {
  const queue =
    options.transport ?? (options.qstash ? "qstash" : options.redisUrl ? "streams" : "local");
  if (queue === "qstash" && !options.qstash) {
    throw new StartError("transport qstash needs the QStash credentials (QSTASH_TOKEN, …)", {
      variable: "QSTASH_TOKEN",
      field: "qstash",
    });
  }
  if (queue === "streams" && !options.redisUrl) {
    throw new StartError(
      "transport streams needs Redis over TCP (REDIS_URL): workers block on the stream, which " +
        "Upstash over REST and the in-memory store cannot do",
      { variable: "TICKWORK_TRANSPORT", field: "transport" },
    );
  }
  return queue;
}

/** Redis Streams on the store's own connection (the blocking reads get one of their own). */
function streamsTransport(
  redis: StreamsClient,
  prefix: string,
  /** How many deliveries this process runs at once; `undefined` without the worker role. */
  concurrency: number | undefined,
  /** Where the queue says what it dropped or repaired (entries it did not write). */
  logger: Logger,
): { transport: Transport; banner: BannerInfo["transport"] } {
  const transport = new RedisStreams({ redis, prefix, logger });
  return {
    transport,
    banner: { kind: "streams", consumer: transport.consumer, concurrency },
  };
}

function storeTarget(options: StartServerOptions, queue: string): StoreTarget {
  const prefix = options.prefix ?? "tw";
  if (options.redisUrl && options.upstash) {
    throw new StartError("pass one store: redisUrl (Redis over TCP) or upstash (REST), not both", {
      field: "redisUrl",
    });
  }
  if (options.upstash) return { kind: "upstash", ...options.upstash, prefix };
  if (options.redisUrl) {
    return {
      kind: "redis",
      url: options.redisUrl,
      prefix,
      dispatch: queue === "streams" ? "streams" : "outbox",
    };
  }
  return { kind: "memory" };
}

/** QStash when configured, else the local queue; both deliver to `delivery`. */
async function makeTransport(
  options: StartServerOptions,
  delivery: DeliveryUrls,
): Promise<{ transport: Transport; banner: BannerInfo["transport"] }> {
  const { workerUrl, failureCallbackUrl } = delivery;
  if (options.qstash) {
    const { token, baseUrl, currentSigningKey, nextSigningKey } = options.qstash;
    // Loaded only when asked for: the local queue needs no QStash client installed.
    const { QStashTransport } = await loadPeer(
      "@upstash/qstash",
      "QSTASH_TOKEN (delivery through QStash)",
      () => import("../../transport/qstash/qstash-transport.ts"),
    );
    const transport = new QStashTransport({
      token,
      ...(baseUrl ? { baseUrl } : {}),
      workerUrl,
      ...(options.workerGroups ? { workerGroups: options.workerGroups } : {}),
      failureCallbackUrl,
      currentSigningKey,
      nextSigningKey,
      // Batches over a keep-alive node:http agent: a third of fetch's CPU per request.
      http: nodeQStashHttp(),
    });
    return {
      transport,
      banner: { kind: "qstash", baseUrl: baseUrl ?? DEFAULT_QSTASH_URL, workerUrl },
    };
  }
  const transport = new LocalTransport({
    workerUrl,
    failureCallbackUrl,
    signingKey: options.signingKey ?? randomBytes(32).toString("base64url"),
  });
  return {
    transport,
    banner: { kind: "local", workerUrl, sharedKey: options.signingKey !== undefined },
  };
}
