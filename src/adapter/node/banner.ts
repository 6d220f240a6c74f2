/**
 * @module
 * The start banner of the Node server: where it listens, which roles it serves, what it runs on
 * (store, queue, tick), and two curl lines that work exactly as printed.
 */
import { type Role, routeSet } from "../../http/roles.ts";

/** What the banner shows. */
export interface BannerInfo {
  /** `dev` (auth off, memory by default) or `start` (production-like). */
  mode: "dev" | "start";
  /** Base URL, e.g. `http://127.0.0.1:8787`. */
  url: string;
  /** The roles served. @default ["all"] */
  roles?: readonly Role[];
  /**
   * `"memory"`, the Redis URL (shown without its password), or the Upstash REST URL; with the key
   * prefix.
   */
  store: "memory" | { redisUrl: string; prefix: string } | { upstashUrl: string; prefix: string };
  /**
   * Where deliveries go: the local queue (signed with a per-process key, or the shared
   * `TICKWORK_SIGNING_KEY`), or QStash.
   * @default the local queue delivering to `${url}/v1/worker` with a per-process key
   */
  transport?:
    | { kind: "local"; workerUrl: string; sharedKey: boolean }
    | { kind: "qstash"; baseUrl: string; workerUrl: string };
  /** Tick timer period (ms), or `undefined` when this server runs no tick timer. */
  tickEveryMs: number | undefined;
  /** The tick's look-ahead (ms). */
  horizonMs: number;
  /** True when requests need `Authorization: Bearer <key>`. */
  auth: boolean;
  /** Tenants configured (`TICKWORK_CONFIG`), when there are any. */
  tenants?: number;
  /**
   * Whether `/v1/tick` is served over HTTP (outside dev only with `CRON_SECRET`).
   * @default true
   */
  tickRoute?: boolean;
  handlers: string[];
}

/** The fixed idempotency key of the banner's first curl line: repeating it answers the same job. */
export const BANNER_IDEMPOTENCY_KEY = "hello-tickwork";

/**
 * The two curl lines of the banner: submit an `echo` job, then read back the newest `echo` job
 * with its result. With `auth`, they send `$TICKWORK_API_KEY` from the shell.
 *
 * @example
 * const [submit, read] = curlLines("http://127.0.0.1:8787", false);
 */
export function curlLines(url: string, auth: boolean): [string, string] {
  const bearer = auth ? ` -H "authorization: Bearer $TICKWORK_API_KEY"` : "";
  const body = JSON.stringify({
    handler: "echo",
    input: { hello: "world" },
    idempotencyKey: BANNER_IDEMPOTENCY_KEY,
  });
  return [
    `curl -sS -X POST ${url}/v1/jobs -H 'content-type: application/json'${bearer} -d '${body}'`,
    `curl -sS '${url}/v1/jobs?handler=echo&limit=1'${bearer}`,
  ];
}

/**
 * A Redis URL without its password (`redis://user:secret@host:6379/0` → `redis://user@host:6379/0`).
 *
 * @example
 * redactRedisUrl("rediss://:hunter2@cache.internal:6380"); // "rediss://cache.internal:6380"
 */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = "";
    return parsed.href;
  } catch {
    return "(unparseable URL)";
  }
}

/** The banner's last line when the server has no submit route (its roles lack `api`). */
export const NO_SUBMIT_ROUTE_LINE = "Submit jobs through a server with the api role.";

/**
 * The banner: plain text, one fact a line, then the curl lines (when the server takes submits).
 *
 * @example
 * console.log(formatBanner({ mode: "dev", url, store: "memory", tickEveryMs: 1000, horizonMs: 1000, auth: false, handlers: ["echo"] }));
 */
export function formatBanner(info: BannerInfo): string {
  const roles = info.roles ?? ["all"];
  const serves = routeSet(roles);
  const seconds = (ms: number) => `${ms / 1000} s`;
  const tick =
    info.tickEveryMs === undefined
      ? "no timer here (roles without tick): run a --role tick server, or call /v1/tick from a cron"
      : `internal timer every ${seconds(info.tickEveryMs)}, look-ahead ${seconds(info.horizonMs)}` +
        (info.tickRoute === false ? "; /v1/tick over HTTP off (set CRON_SECRET to serve it)" : "");
  const auth = !serves.read
    ? "no API routes here"
    : info.auth
      ? `API key required: Authorization: Bearer $TICKWORK_API_KEY` +
        (info.tenants
          ? ` (or a key of the ${info.tenants} tenant${info.tenants === 1 ? "" : "s"} in TICKWORK_CONFIG)`
          : "")
      : "OFF (dev mode): no API key needed; do not expose this port";
  const lines = [
    `tickwork ${info.mode === "dev" ? "dev server" : "server"} listening on ${info.url}`,
    "",
    `  roles      ${roles.join(", ")}`,
    `  store      ${describeStore(info.store)}`,
    `  transport  ${describeTransport(info.transport ?? { kind: "local", workerUrl: `${info.url}/v1/worker`, sharedKey: false })}`,
    `  tick       ${tick}`,
    `  auth       ${auth}`,
    `  handlers   ${info.handlers.length > 0 ? [...info.handlers].sort().join(", ") : "(none)"}`,
    "",
  ];
  if (!serves.write) {
    lines.push(`No submit route here (roles: ${roles.join(", ")}). ${NO_SUBMIT_ROUTE_LINE}`, "");
    return lines.join("\n");
  }
  const [submit, read] = curlLines(info.url, info.auth);
  lines.push(
    "Submit a job, then read the newest echo job back with its result:",
    "",
    `  ${submit}`,
    `  ${read}`,
    "",
    `Repeating the first line is safe: idempotencyKey "${BANNER_IDEMPOTENCY_KEY}" answers 200 with the same job.`,
    "",
  );
  return lines.join("\n");
}

function describeStore(store: BannerInfo["store"]): string {
  if (store === "memory") {
    return "memory (state is lost on restart; set REDIS_URL or UPSTASH_REDIS_REST_URL to keep it)";
  }
  if ("upstashUrl" in store) {
    return `upstash ${redactRedisUrl(store.upstashUrl)} (REST; key prefix "${store.prefix}")`;
  }
  return `redis ${redactRedisUrl(store.redisUrl)} (key prefix "${store.prefix}")`;
}

function describeTransport(transport: NonNullable<BannerInfo["transport"]>): string {
  if (transport.kind === "qstash") {
    return `QStash ${transport.baseUrl}, delivers to ${transport.workerUrl}`;
  }
  const key = transport.sharedKey ? "TICKWORK_SIGNING_KEY" : "a per-process key";
  return `local queue, delivers to ${transport.workerUrl} (signed with ${key})`;
}
