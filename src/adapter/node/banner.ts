/**
 * @module
 * The start banner of the Node server: where it listens, what it runs on, and two curl lines
 * that work exactly as printed.
 */

/** What the banner shows. */
export interface BannerInfo {
  /** `dev` (auth off, memory by default) or `start` (production-like). */
  mode: "dev" | "start";
  /** Base URL, e.g. `http://127.0.0.1:8787`. */
  url: string;
  /** `"memory"`, or the Redis URL (shown without its password) and key prefix. */
  store: "memory" | { redisUrl: string; prefix: string };
  /** Tick timer period (ms); the look-ahead horizon is shown too. */
  tickEveryMs: number;
  horizonMs: number;
  /** True when requests need `Authorization: Bearer <key>`. */
  auth: boolean;
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

/**
 * The banner: plain text, one fact a line, then the curl lines.
 *
 * @example
 * console.log(formatBanner({ mode: "dev", url, store: "memory", tickEveryMs: 1000, horizonMs: 1000, auth: false, handlers: ["echo"] }));
 */
export function formatBanner(info: BannerInfo): string {
  const seconds = (ms: number) => `${ms / 1000} s`;
  const store =
    info.store === "memory"
      ? "memory (state is lost on restart; set REDIS_URL to keep it)"
      : `redis ${redactRedisUrl(info.store.redisUrl)} (key prefix "${info.store.prefix}")`;
  const auth = info.auth
    ? "API key required: Authorization: Bearer $TICKWORK_API_KEY"
    : "OFF (dev mode): no API key needed; do not expose this port";
  const [submit, read] = curlLines(info.url, info.auth);
  return [
    `tickwork ${info.mode === "dev" ? "dev server" : "server"} listening on ${info.url}`,
    "",
    `  store      ${store}`,
    `  transport  local queue, delivers to ${info.url}/v1/worker (signed with a per-process key)`,
    `  tick       internal timer every ${seconds(info.tickEveryMs)}, look-ahead ${seconds(info.horizonMs)}`,
    `  auth       ${auth}`,
    `  handlers   ${info.handlers.length > 0 ? [...info.handlers].sort().join(", ") : "(none)"}`,
    "",
    "Submit a job, then read the newest echo job back with its result:",
    "",
    `  ${submit}`,
    `  ${read}`,
    "",
    `Repeating the first line is safe: idempotencyKey "${BANNER_IDEMPOTENCY_KEY}" answers 200 with the same job.`,
    "",
  ].join("\n");
}
