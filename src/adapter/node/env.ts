/**
 * @module
 * The environment, read in one place: which store, which queue, which roles, which keys. The
 * entry files (the CLI, `functions/node.ts`, `functions/vercel/`) pass their environment in;
 * nothing here touches `process.env`.
 */
import { type Config, hasKeys } from "../../config/index.ts";
import { MAX_TIMER_MS } from "../../core/duration.ts";
import { parseRoles, routeSet } from "../../http/roles.ts";
import { NODE_LIMITS } from "../../store/port.ts";
import { splitApiKeys } from "../deployment.ts";
import { loadConfig } from "./config.ts";
import { ConfigError } from "./errors.ts";
import { capabilitiesProblem } from "./nodes.ts";
import { placementFromEnv } from "./placement-env.ts";
import type { StartServerOptions } from "./start.ts";

/** An environment: `process.env`, or any record of the same shape. */
export type Env = Readonly<Record<string, string | undefined>>;

/** The store the environment selects (docs/architecture.md, "Topologies and roles"). */
export type StoreSelection =
  | { kind: "memory" }
  | { kind: "redis"; url: string }
  | { kind: "upstash"; url: string; token: string };

/** QStash settings from the environment. */
export interface QStashSelection {
  token: string;
  /** `QSTASH_URL`, when set (a region, or a local QStash dev server). */
  baseUrl?: string;
  currentSigningKey: string;
  nextSigningKey: string;
}

const value = (env: Env, name: string): string | undefined => env[name]?.trim() || undefined;

/** How jobs travel (`TICKWORK_TRANSPORT`). */
export type TransportChoice = "qstash" | "streams" | "local";

/**
 * The transport: `TICKWORK_TRANSPORT` when set, else QStash with `QSTASH_TOKEN`, else Redis
 * Streams with Redis over TCP (`REDIS_URL`), else the local in-process queue (memory, or Upstash
 * over REST, which cannot block on a stream).
 * @throws ConfigError for an unknown value or one the store cannot carry.
 */
export function selectTransport(
  env: Env,
  store: StoreSelection,
  qstash: QStashSelection | undefined,
): TransportChoice {
  const asked = value(env, "TICKWORK_TRANSPORT")?.toLowerCase();
  if (asked === undefined) return qstash ? "qstash" : store.kind === "redis" ? "streams" : "local";
  if (asked !== "qstash" && asked !== "streams" && asked !== "local") {
    throw new ConfigError(`TICKWORK_TRANSPORT must be qstash, streams or local, got "${asked}"`, {
      variable: "TICKWORK_TRANSPORT",
      field: "transport",
    });
  }
  if (asked === "qstash" && !qstash) {
    throw new ConfigError(
      "TICKWORK_TRANSPORT=qstash needs QSTASH_TOKEN, both signing keys (Upstash console → " +
        "QStash → Signing keys) and TICKWORK_PUBLIC_URL. Set them, or unset TICKWORK_TRANSPORT.",
      { variable: "QSTASH_TOKEN", field: "transport" },
    );
  }
  if (asked === "streams" && store.kind !== "redis") {
    if (store.kind === "upstash" && value(env, "REDIS_URL") !== undefined) {
      throw new ConfigError(
        "TICKWORK_TRANSPORT=streams needs Redis over TCP, and REDIS_URL is set, but the Upstash " +
          "REST variables (UPSTASH_REDIS_REST_URL or KV_REST_API_URL, and their token) are read " +
          "first, so the store is Upstash over REST, which cannot block on a stream. Unset them " +
          "to use REDIS_URL.",
        { variable: "UPSTASH_REDIS_REST_URL", field: "transport" },
      );
    }
    throw new ConfigError(
      "TICKWORK_TRANSPORT=streams needs Redis over TCP (REDIS_URL): workers block on the stream, " +
        "which Upstash over REST cannot do" +
        (store.kind === "memory" ? ", and the in-memory store has no stream" : "") +
        ". Set REDIS_URL, or use qstash or local.",
      { variable: "TICKWORK_TRANSPORT", field: "transport" },
    );
  }
  return asked;
}

/**
 * `TICKWORK_CONCURRENCY`: deliveries a Streams worker runs at once (default 10).
 * @throws ConfigError unless it is a whole number from 1 to 10000.
 */
export function parseConcurrency(text: string | undefined): number | undefined {
  if (text === undefined || text === "") return undefined;
  return wholeNumber(text, 1, 10_000, "concurrency", "TICKWORK_CONCURRENCY", "concurrency");
}

/**
 * `TICKWORK_READ_AHEAD`: deliveries a Streams worker may pull ahead of its free slots while its
 * handlers are short (`PullWorker`'s `readAhead`; default its concurrency; 0 turns it off).
 * @throws ConfigError unless it is a whole number from 0 to 10000.
 */
export function parseReadAhead(text: string | undefined): number | undefined {
  if (text === undefined || text === "") return undefined;
  return wholeNumber(text, 0, 10_000, "read-ahead", "TICKWORK_READ_AHEAD", "readAhead");
}

/**
 * `TICKWORK_KEEP_ALIVE_MS`: how long an idle keep-alive connection stays open (`serve`'s
 * `keepAliveTimeoutMs`; default 65 s). Longer than the idle timeout of the load balancer in
 * front (Google Cloud's asks for more than 600 s); 0 keeps idle connections until shutdown.
 * @throws ConfigError unless it is a whole number of ms from 0 to 2147483647.
 */
export function parseKeepAlive(text: string | undefined): number | undefined {
  if (text === undefined || text === "") return undefined;
  if (!/^\d{1,10}$/.test(text) || Number(text) > MAX_TIMER_MS) {
    throw new ConfigError(
      `TICKWORK_KEEP_ALIVE_MS must be a whole number of milliseconds from 0 to ${MAX_TIMER_MS}, got "${text.slice(0, 40)}"`,
      { variable: "TICKWORK_KEEP_ALIVE_MS", field: "keepAliveTimeoutMs" },
    );
  }
  return Number(text);
}

/**
 * `text` as a whole number from `min` to `max` (at most 5 ASCII digits).
 * @throws ConfigError naming `what`, the variable and the option field otherwise.
 */
function wholeNumber(
  text: string,
  min: number,
  max: number,
  what: string,
  variable: string,
  field: string,
): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ConfigError(`${what} must be a whole number from ${min} to ${max}, got "${text}"`, {
      variable,
      field,
    });
  }
  return Number(text);
}

/**
 * `TICKWORK_CAPABILITIES`: the labels this server reports in the node registry, as a JSON object
 * of strings (at most 32; names and values up to 200 characters).
 * @throws ConfigError naming the variable when it is not such an object.
 *
 * @example
 * parseCapabilities('{"region":"eu-west-1","gpu":"a100"}'); // { region: "eu-west-1", gpu: "a100" }
 */
export function parseCapabilities(text: string | undefined): Record<string, string> | undefined {
  if (text === undefined || text === "") return undefined;
  const fail = (problem: string) =>
    new ConfigError(`TICKWORK_CAPABILITIES ${problem}`, {
      variable: "TICKWORK_CAPABILITIES",
      field: "capabilities",
    });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw fail(
      `is not JSON (${(error as Error).message}): set it to an object of strings, e.g. {"region":"eu-west-1"}`,
    );
  }
  const problem = capabilitiesProblem(value);
  if (problem) throw fail(problem);
  return value as Record<string, string>;
}

/** Bounds of `TICKWORK_HEARTBEAT_MS` and `TICKWORK_NODE_TTL_MS` (ms). */
export const HEARTBEAT_ENV_LIMITS = {
  minEveryMs: 100,
  maxEveryMs: 300_000,
  /** Three heartbeats of the shortest interval. */
  minTtlMs: 300,
  /** The registry's longest TTL: one day. */
  maxTtlMs: NODE_LIMITS.maxTtlMs,
} as const;

/**
 * `TICKWORK_HEARTBEAT_MS` and `TICKWORK_NODE_TTL_MS`: the node registry heartbeat's interval
 * (100 ms – 5 min) and TTL (300 ms – 1 day, above the interval), as `startServer`'s `heartbeat`
 * option. The TTL is 3 × the interval unless `TICKWORK_NODE_TTL_MS` is set; with the TTL alone
 * the interval is a third of it (at most 15 s). Neither set: `undefined` (15 s and 45 s).
 * @throws ConfigError naming the variable at fault.
 *
 * @example
 * parseHeartbeat("300", undefined); // { everyMs: 300, ttlMs: 900 }
 * parseHeartbeat("300", "1000"); // { everyMs: 300, ttlMs: 1000 }
 */
export function parseHeartbeat(
  everyText: string | undefined,
  ttlText: string | undefined,
): { everyMs?: number; ttlMs: number } | undefined {
  const L = HEARTBEAT_ENV_LIMITS;
  const ms = (variable: string, text: string, min: number, max: number): number => {
    if (!/^\d{1,9}$/.test(text) || Number(text) < min || Number(text) > max) {
      throw new ConfigError(
        `${variable} must be a whole number of milliseconds from ${min} to ${max}, got "${text.slice(0, 40)}"`,
        { variable, field: "heartbeat" },
      );
    }
    return Number(text);
  };
  const everyMs = everyText
    ? ms("TICKWORK_HEARTBEAT_MS", everyText, L.minEveryMs, L.maxEveryMs)
    : undefined;
  const ttlMs = ttlText ? ms("TICKWORK_NODE_TTL_MS", ttlText, L.minTtlMs, L.maxTtlMs) : undefined;
  if (everyMs === undefined) return ttlMs === undefined ? undefined : { ttlMs };
  if (ttlMs !== undefined && ttlMs <= everyMs) {
    throw new ConfigError(
      `TICKWORK_NODE_TTL_MS (${ttlMs}) must be above TICKWORK_HEARTBEAT_MS (${everyMs}): a node ` +
        "would go stale between two heartbeats. Leave it unset for 3 × the interval.",
      { variable: "TICKWORK_NODE_TTL_MS", field: "heartbeat" },
    );
  }
  return { everyMs, ttlMs: ttlMs ?? everyMs * 3 };
}

/**
 * `UPSTASH_REDIS_REST_URL` + `UPSTASH_REDIS_REST_TOKEN` (or Vercel's `KV_REST_API_URL` +
 * `KV_REST_API_TOKEN`) → Upstash over REST; else `REDIS_URL` → Redis over TCP; else memory.
 * @throws ConfigError for a REST URL without its token.
 *
 * @example
 * selectStore({ REDIS_URL: "redis://cache:6379" }); // { kind: "redis", url: "redis://cache:6379" }
 */
export function selectStore(env: Env): StoreSelection {
  const upstashUrl = value(env, "UPSTASH_REDIS_REST_URL");
  const restUrl = upstashUrl ?? value(env, "KV_REST_API_URL");
  if (restUrl) {
    // Named as the user set them: Vercel's integration sets the KV_REST_API_* pair.
    const [urlName, tokenName] =
      upstashUrl !== undefined
        ? ["UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN"]
        : ["KV_REST_API_URL", "KV_REST_API_TOKEN"];
    const token = value(env, "UPSTASH_REDIS_REST_TOKEN") ?? value(env, "KV_REST_API_TOKEN");
    if (!token) {
      throw new ConfigError(
        `${urlName} is set but ${tokenName} is not: set both (the Upstash console shows them ` +
          "together), or unset the URL to use REDIS_URL or memory.",
        { variable: tokenName },
      );
    }
    checkUrl(restUrl, urlName, ["http:", "https:"]);
    return { kind: "upstash", url: restUrl, token };
  }
  const redisUrl = value(env, "REDIS_URL");
  if (redisUrl) {
    // A URL of another scheme (an Upstash REST URL, `http://…`) reached ioredis, which took its
    // host and failed later with a connection error that did not name the variable.
    // Only the scheme is quoted: the rest may hold a password.
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(redisUrl)?.[1]?.toLowerCase();
    if (scheme !== undefined && scheme !== "redis" && scheme !== "rediss") {
      throw new ConfigError(
        `REDIS_URL must start with redis:// or rediss://, got ${scheme}://… (an Upstash REST URL goes in UPSTASH_REDIS_REST_URL)`,
        { variable: "REDIS_URL" },
      );
    }
    // A host or port no URL can hold (`redis://cache:abc/0`, `redis://:6379`) was reported as a
    // database that is not a whole number; a scheme without its colon (`redis//cache:6379`) as
    // a Redis that could not be reached, at the path `//cache:6379`.
    if (scheme !== undefined && !URL.canParse(redisUrl)) {
      throw new ConfigError(
        `REDIS_URL is not a URL: check its host and port (redis://[user:password@]host:port/db)`,
        { variable: "REDIS_URL" },
      );
    }
    if (scheme === undefined && /^[A-Za-z][A-Za-z0-9+.-]*\/\//.test(redisUrl)) {
      throw new ConfigError(
        "REDIS_URL has no colon after its scheme: write redis://host:port (or rediss://)",
        { variable: "REDIS_URL" },
      );
    }
    return { kind: "redis", url: redisUrl };
  }
  return { kind: "memory" };
}

/**
 * With `QSTASH_TOKEN`, the QStash settings (`QSTASH_URL`, `QSTASH_CURRENT_SIGNING_KEY`,
 * `QSTASH_NEXT_SIGNING_KEY`); without it, `undefined` (the local queue).
 * @throws ConfigError naming every signing key that is missing.
 *
 * @example
 * const qstash = selectQStash(process.env); // undefined, or { token, currentSigningKey, … }
 */
export function selectQStash(env: Env): QStashSelection | undefined {
  const token = value(env, "QSTASH_TOKEN");
  if (!token) return undefined;
  const missing = ["QSTASH_CURRENT_SIGNING_KEY", "QSTASH_NEXT_SIGNING_KEY"].filter(
    (name) => !value(env, name),
  );
  if (missing.length > 0) throw qstashIncomplete(missing);
  const baseUrl = value(env, "QSTASH_URL");
  if (baseUrl) checkUrl(baseUrl, "QSTASH_URL", ["http:", "https:"]);
  return {
    token,
    ...(baseUrl ? { baseUrl } : {}),
    currentSigningKey: value(env, "QSTASH_CURRENT_SIGNING_KEY") as string,
    nextSigningKey: value(env, "QSTASH_NEXT_SIGNING_KEY") as string,
  };
}

/**
 * Everything {@link startServer} takes but the handlers, from the environment:
 *
 * | variable | option |
 * |---|---|
 * | `PORT`, `HOST` | `port` (default 8787), `hostname` |
 * | `UPSTASH_REDIS_REST_URL` + `_TOKEN`, else `REDIS_URL` | `upstash`, else `redisUrl` (else memory) |
 * | `TICKWORK_PREFIX` | `prefix` |
 * | `QSTASH_TOKEN`, `QSTASH_URL`, `QSTASH_CURRENT_SIGNING_KEY`, `QSTASH_NEXT_SIGNING_KEY` | `qstash` |
 * | `TICKWORK_TRANSPORT` | `transport`: `qstash`, `streams` or `local` (see {@link selectTransport}) |
 * | `TICKWORK_CONCURRENCY` | `concurrency` (deliveries a Streams worker runs at once; default 10) |
 * | `TICKWORK_READ_AHEAD` | `readAhead` (deliveries a Streams worker may pull ahead of free slots) |
 * | `TICKWORK_KEEP_ALIVE_MS` | `keepAliveTimeoutMs` (idle keep-alive connections; default 65 s) |
 * | `TICKWORK_CAPABILITIES` | `capabilities` (JSON object of strings, reported in `GET /v1/nodes`) |
 * | `TICKWORK_HEARTBEAT_MS`, `TICKWORK_NODE_TTL_MS` | `heartbeat` (node registry: interval, TTL; see {@link parseHeartbeat}) |
 * | `TICKWORK_NODE_ID`, `TICKWORK_GROUP`, `TICKWORK_WORKER_GROUPS` | `nodeId`, `group`, `workerGroups` (placement; see {@link placementFromEnv}) |
 * | `TICKWORK_PUBLIC_URL` | `publicUrl` (required with QStash) |
 * | `TICKWORK_SIGNING_KEY` | `signingKey` (the local queue's, shared by replicas) |
 * | `TICKWORK_ROLES` | `roles` (comma-separated; default `all`) |
 * | `TICKWORK_API_KEY` | `apiKeys` (comma-separated; `start` only: dev has no auth) |
 * | `TICKWORK_CONFIG` | `config`: a JSON file (or the JSON itself) with tenants, CORS, degradation |
 * | `CRON_SECRET` | `tickSecret` (`start` only; without it `/v1/tick` is not served over HTTP) |
 *
 * `start` also needs a store (Redis or Upstash) and, when API routes are served, an API key
 * (`TICKWORK_API_KEY`, or tenants with keys in `TICKWORK_CONFIG`). Dev ignores keys and tenants
 * (auth is off) but applies the rest of the configuration.
 * @throws ConfigError saying what to set.
 *
 * @example
 * const options = serverOptionsFromEnv(process.env, "start");
 * await startServer({ handlers, ...options });
 */
export function serverOptionsFromEnv(
  env: Env,
  mode: "dev" | "start",
): Omit<StartServerOptions, "handlers"> {
  const dev = mode === "dev";
  const store = selectStore(env);
  // QStash's variables are read (and checked) unless another transport is chosen by name: a
  // token left without its signing keys stopped `TICKWORK_TRANSPORT=streams`, saying jobs go
  // through QStash.
  const chosen = value(env, "TICKWORK_TRANSPORT")?.toLowerCase();
  const qstash = chosen === "streams" || chosen === "local" ? undefined : selectQStash(env);
  const transport = selectTransport(env, store, qstash);
  const concurrency = parseConcurrency(value(env, "TICKWORK_CONCURRENCY"));
  const readAhead = parseReadAhead(value(env, "TICKWORK_READ_AHEAD"));
  const keepAliveTimeoutMs = parseKeepAlive(value(env, "TICKWORK_KEEP_ALIVE_MS"));
  const capabilities = parseCapabilities(value(env, "TICKWORK_CAPABILITIES"));
  const heartbeat = parseHeartbeat(
    value(env, "TICKWORK_HEARTBEAT_MS"),
    value(env, "TICKWORK_NODE_TTL_MS"),
  );
  const placement = placementFromEnv(env);
  const publicUrl = value(env, "TICKWORK_PUBLIC_URL");
  if (publicUrl) checkUrl(publicUrl, "TICKWORK_PUBLIC_URL", ["http:", "https:"]);
  if (transport === "qstash" && !publicUrl) throw qstashIncomplete(["TICKWORK_PUBLIC_URL"]);
  const rolesText = value(env, "TICKWORK_ROLES");
  let roles: StartServerOptions["roles"];
  try {
    roles = rolesText ? parseRoles(rolesText) : undefined;
  } catch (error) {
    throw new ConfigError(`--role / TICKWORK_ROLES: ${(error as Error).message}`, {
      variable: "TICKWORK_ROLES",
      field: "roles",
    });
  }
  const servesApi = routeSet(roles ?? ["all"]).read;
  const apiKeys = splitApiKeys(value(env, "TICKWORK_API_KEY"));
  const configValue = value(env, "TICKWORK_CONFIG");
  let config: Config | undefined = configValue ? loadConfig(configValue) : undefined;
  if (dev && config?.tenants) {
    // Dev has no auth: tenants and their keys are not passed on (CORS and degradation are).
    const { tenants: _tenants, ...rest } = config;
    config = rest;
  }

  if (!dev && store.kind === "memory") {
    throw new ConfigError(
      "REDIS_URL is not set (nor UPSTASH_REDIS_REST_URL). `tickwork start` keeps its state in " +
        "Redis, so it survives restarts and can run as several replicas. Set one, e.g.\n" +
        "  REDIS_URL=redis://127.0.0.1:6379 TICKWORK_API_KEY=<key> tickwork start\n" +
        "or run `tickwork dev` for a local server with in-memory state.",
      { variable: "REDIS_URL" },
    );
  }
  if (!dev && servesApi && apiKeys.length === 0 && !hasKeys(config)) {
    throw new ConfigError(
      "TICKWORK_API_KEY is not set, nor TICKWORK_CONFIG with tenant keys. Outside dev every API " +
        'request needs a key ("Authorization: Bearer <key>"). Either set one admin key, e.g. ' +
        "TICKWORK_API_KEY=$(openssl rand -hex 24), or set TICKWORK_CONFIG=<file.json> with " +
        "tenants whose keys are stored as hashes (generate a key and its hash with " +
        "`npx tickwork hash-key`; schema: schema/tickwork.config.schema.json). Or run " +
        "`tickwork dev` (auth off).",
      { variable: "TICKWORK_API_KEY", field: "apiKeys" },
    );
  }

  const hostname = value(env, "HOST");
  const prefix = value(env, "TICKWORK_PREFIX");
  const signingKey = value(env, "TICKWORK_SIGNING_KEY");
  const tickSecret = value(env, "CRON_SECRET");
  return {
    dev,
    port: parsePort(value(env, "PORT")),
    ...(hostname ? { hostname } : {}),
    ...(store.kind === "redis" ? { redisUrl: store.url } : {}),
    ...(store.kind === "upstash" ? { upstash: { url: store.url, token: store.token } } : {}),
    ...(prefix ? { prefix } : {}),
    ...(qstash && transport === "qstash" ? { qstash } : {}),
    transport,
    ...(concurrency !== undefined ? { concurrency } : {}),
    ...(readAhead !== undefined ? { readAhead } : {}),
    ...(keepAliveTimeoutMs !== undefined ? { keepAliveTimeoutMs } : {}),
    ...(capabilities !== undefined ? { capabilities } : {}),
    ...(heartbeat !== undefined ? { heartbeat } : {}),
    ...placement,
    ...(publicUrl ? { publicUrl } : {}),
    ...(signingKey ? { signingKey } : {}),
    ...(roles ? { roles } : {}),
    ...(!dev && apiKeys.length > 0 ? { apiKeys } : {}),
    ...(config ? { config } : {}),
    ...(!dev && tickSecret ? { tickSecret } : {}),
  };
}

/**
 * A port number from its text; 8787 when unset.
 * @throws ConfigError unless it is a whole number from 0 to 65535.
 */
export function parsePort(text: string | undefined): number {
  if (text === undefined || text === "") return 8787;
  return wholeNumber(text, 0, 65_535, "port", "PORT", "port");
}

function qstashIncomplete(missing: string[]): ConfigError {
  return new ConfigError(
    `QSTASH_TOKEN is set, so jobs go through QStash, but ${missing.join(", ")} ` +
      `${missing.length === 1 ? "is" : "are"} not. QStash needs the token, both signing keys ` +
      "(Upstash console → QStash → Signing keys) and TICKWORK_PUBLIC_URL, the URL QStash can " +
      "reach this app at (e.g. https://jobs.example.com). Set them, or unset QSTASH_TOKEN to use " +
      "the local queue.",
    { variable: missing[0] },
  );
}

/**
 * Throws unless `text` is a URL of one of `protocols`. The message shows no more of the value than
 * its scheme and host: a token or a connection string with its password, pasted into the wrong
 * variable, would otherwise be printed (and on Vercel answered to any request).
 */
function checkUrl(text: string, name: string, protocols: string[]): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`${name} is not a URL (its value is not shown)`, { variable: name });
  }
  if (!protocols.includes(url.protocol)) {
    const starts = protocols.map((protocol) => `${protocol}//`).join(" or ");
    throw new ConfigError(
      `${name} must start with ${starts}, got a ${url.protocol}// URL (host ${url.host || "none"})`,
      { variable: name },
    );
  }
}
