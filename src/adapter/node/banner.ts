/**
 * @module
 * The start banner of the Node server: where it listens, which roles it serves, what it runs on
 * (store, queue, tick), where the dashboard and metrics are, and two curl lines that work exactly
 * as printed — for a handler the server has.
 */
import { type Handlers, handlerOf } from "../../engine/handlers.ts";
import { type Role, routeSet } from "../../http/roles.ts";

/** What the banner shows. */
export interface BannerInfo {
  /** `dev` (auth off, memory by default) or `start` (production-like). */
  mode: "dev" | "start";
  /** Base URL, e.g. `http://127.0.0.1:8787`. */
  url: string;
  /** The roles served. @default ["all"] */
  roles?: readonly Role[] | undefined;
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
    | { kind: "qstash"; baseUrl: string; workerUrl: string }
    /** `concurrency` absent: this process has no worker role, and pulls nothing. */
    | { kind: "streams"; consumer: string; concurrency?: number | undefined }
    | undefined;
  /** Tick timer period (ms), or `undefined` when this server runs no tick timer. */
  tickEveryMs: number | undefined;
  /** The tick's look-ahead (ms). */
  horizonMs: number;
  /** True when requests need `Authorization: Bearer <key>`. */
  auth: boolean;
  /** Tenants configured (`TICKWORK_CONFIG`), when there are any. */
  tenants?: number | undefined;
  /**
   * Whether plain API keys (`TICKWORK_API_KEY`) are configured besides the tenants' keys. Without
   * them, the curl lines' `$TICKWORK_API_KEY` is for the user to set to a tenant's key.
   * @default true
   */
  plainKeys?: boolean | undefined;
  /**
   * Whether `/v1/tick` is served over HTTP (outside dev only with `CRON_SECRET`).
   * @default true
   */
  tickRoute?: boolean | undefined;
  /** The names of the registered handlers. */
  handlers: string[];
  /**
   * The job the curl lines submit (see {@link sampleJob}, which finds one from the handlers'
   * definitions).
   * @default `echo` with `{"hello":"world"}` when `handlers` has it, else the first handler with a
   * placeholder input
   */
  sample?: BannerSample | undefined;
}

/** The job the banner's curl lines submit: a registered handler and an input it accepts. */
export interface BannerSample {
  /** A registered handler's name. */
  handler: string;
  /** The input to send; `undefined` leaves it out of the body (the job's input is then `null`). */
  input?: unknown;
  /**
   * True when no input the handler's schema accepts was found: the line shows `<input>` for the
   * reader to replace, and the banner says so.
   */
  placeholder?: boolean | undefined;
}

/** The fixed idempotency key of the banner's first curl line: repeating it answers the same job. */
export const BANNER_IDEMPOTENCY_KEY = "hello-tickwork";

/** What `echo` gets in the banner: it returns its input, so the result shows the round trip. */
const ECHO_INPUT = { hello: "world" };

/** The text standing in for an input in a curl line when no accepted input was found. */
export const INPUT_PLACEHOLDER = "<input>";

/**
 * The job the banner's curl lines should submit, from the handlers the server registers: `echo`
 * when it is there (with `{"hello":"world"}`), else the first handler, in registration order, for
 * which an input is found cheaply — no schema (no input sent), or a schema that accepts `{}` or no
 * input (`null`). When none does, the first of them with a placeholder input. `undefined` when no
 * handler is registered.
 *
 * @example
 * sampleJob({ "email.send": { input: z.object({ to: z.email() }), run } });
 * // { handler: "email.send", placeholder: true }
 */
export function sampleJob(handlers: Handlers): BannerSample | undefined {
  const names = Object.keys(handlers);
  const order = names.includes("echo") ? ["echo", ...names.filter((n) => n !== "echo")] : names;
  for (const handler of order) {
    const found = acceptedInput(handler, handlerOf(handlers, handler)?.input);
    if (found) return found.input === undefined ? { handler } : { handler, input: found.input };
  }
  const first = order[0];
  return first === undefined ? undefined : { handler: first, placeholder: true };
}

/**
 * An input `schema` accepts, wrapped (`{ input: undefined }` means "send none"); `undefined` when
 * none of the candidates passes. Only cheap, synchronous checks: a schema that throws (an async
 * refinement, say) counts as refusing.
 */
function acceptedInput(
  handler: string,
  schema: { safeParse(value: unknown): { success: boolean } } | undefined,
): { input: unknown } | undefined {
  if (!schema) return { input: handler === "echo" ? ECHO_INPUT : undefined };
  // An omitted input reaches the schema as null (the broker stores `null`).
  const candidates: Array<{ input: unknown; checked: unknown }> = [
    ...(handler === "echo" ? [{ input: ECHO_INPUT, checked: ECHO_INPUT }] : []),
    { input: {}, checked: {} },
    { input: undefined, checked: null },
  ];
  for (const candidate of candidates) {
    try {
      if (schema.safeParse(candidate.checked).success) return { input: candidate.input };
    } catch {
      // Not decidable synchronously: try the next candidate.
    }
  }
  return undefined;
}

/** The sample when only names are known: `echo` if registered, else a placeholder. */
function sampleFromNames(handlers: readonly string[]): BannerSample | undefined {
  if (handlers.includes("echo")) return { handler: "echo", input: ECHO_INPUT };
  const first = handlers[0];
  return first === undefined ? undefined : { handler: first, placeholder: true };
}

/** `text` as one single-quoted shell word. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The two curl lines of the banner: submit a job of `sample` (by default `echo` with
 * `{"hello":"world"}`), then read back the newest job of that handler with its result. With
 * `auth`, they send `$TICKWORK_API_KEY` from the shell.
 *
 * @example
 * const [submit, read] = curlLines("http://127.0.0.1:8787", false);
 * const [send] = curlLines(url, false, { handler: "report.daily" });
 */
export function curlLines(
  url: string,
  auth: boolean,
  sample: BannerSample = { handler: "echo", input: ECHO_INPUT },
): [string, string] {
  const bearer = auth ? ` -H "authorization: Bearer $TICKWORK_API_KEY"` : "";
  const handler = JSON.stringify(sample.handler);
  const key = JSON.stringify(BANNER_IDEMPOTENCY_KEY);
  const input = sample.placeholder
    ? `,"input":${INPUT_PLACEHOLDER}`
    : sample.input === undefined
      ? ""
      : `,"input":${JSON.stringify(sample.input)}`;
  const body = `{"handler":${handler}${input},"idempotencyKey":${key}}`;
  const list = `${url}/v1/jobs?handler=${encodeURIComponent(sample.handler)}&limit=1`;
  return [
    `curl -sS -X POST ${url}/v1/jobs -H 'content-type: application/json'${bearer} -d ${shellQuote(body)}`,
    `curl -sS ${shellQuote(list)}${bearer}`,
  ];
}

/**
 * A Redis URL without its password (`redis://user:secret@host:6379/0` → `redis://user@host:6379/0`)
 * and with the values of its query parameters masked: ioredis reads options from them, a
 * `?password=` included.
 *
 * @example
 * redactRedisUrl("rediss://:hunter2@cache.internal:6380"); // "rediss://cache.internal:6380"
 * redactRedisUrl("redis://cache:6379/0?password=hunter2"); // "redis://cache:6379/0?password=***"
 */
export function redactRedisUrl(url: string): string {
  // ioredis also takes `host:port` and a socket path, without a scheme: shown as written, less
  // any password.
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(url)) {
    const shown = redactRedisUrl(`redis://${url}`);
    return shown.startsWith("redis://") ? shown.slice("redis://".length) : shown;
  }
  try {
    const parsed = new URL(url);
    parsed.password = "";
    if (parsed.search !== "") {
      const masked = new URLSearchParams();
      for (const name of parsed.searchParams.keys()) masked.append(name, "***");
      parsed.search = masked.toString().replaceAll("%2A", "*");
    }
    return parsed.href;
  } catch {
    return "(unparseable URL)";
  }
}

/** "1 tenant", "3 tenants". */
function tenantCount(n: number): string {
  return `${n} tenant${n === 1 ? "" : "s"}`;
}

/** The banner's last line when the server has no submit route (its roles lack `api`). */
export const NO_SUBMIT_ROUTE_LINE = "Submit jobs through a server with the api role.";

/** The banner's last line when the server has no handler to submit jobs to. */
export const NO_HANDLERS_LINE =
  "export some from the handlers module (`npx tickwork init` writes an example).";

/**
 * The banner: plain text, one fact a line (with the dashboard and metrics URLs when the server
 * serves them), then the curl lines (when the server takes submits and has a handler).
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
    : !info.auth
      ? "OFF (dev mode): no API key needed; do not expose this port"
      : info.tenants && info.plainKeys === false
        ? `API key required: a key of the ${tenantCount(info.tenants)} in TICKWORK_CONFIG ` +
          "(the lines below send $TICKWORK_API_KEY: set it in your shell to one of them)"
        : `API key required: Authorization: Bearer $TICKWORK_API_KEY` +
          (info.tenants
            ? ` (or a key of the ${tenantCount(info.tenants)} in TICKWORK_CONFIG)`
            : "");
  const lines = [
    `tickwork ${info.mode === "dev" ? "dev server" : "server"} listening on ${info.url}`,
    "",
    `  roles      ${roles.join(", ")}`,
    `  store      ${describeStore(info.store)}`,
    `  transport  ${describeTransport(info.transport ?? { kind: "local", workerUrl: `${info.url}/v1/worker`, sharedKey: false })}`,
    `  tick       ${tick}`,
    `  auth       ${auth}`,
    `  handlers   ${info.handlers.length > 0 ? [...info.handlers].sort().join(", ") : "(none)"}`,
  ];
  if (serves.read) {
    const keyed = info.auth ? "; needs the API key" : "";
    lines.push(
      `  dashboard  ${info.url}/dashboard`,
      `  metrics    ${info.url}/metrics (Prometheus text${keyed})`,
    );
  }
  lines.push("");
  if (!serves.write) {
    lines.push(`No submit route here (roles: ${roles.join(", ")}). ${NO_SUBMIT_ROUTE_LINE}`, "");
    return lines.join("\n");
  }
  // A sample for a handler that is not registered would only ever answer 422.
  const named =
    info.sample && info.handlers.includes(info.sample.handler) ? info.sample : undefined;
  const sample = named ?? sampleFromNames(info.handlers);
  if (sample === undefined) {
    lines.push(`No handlers registered: ${NO_HANDLERS_LINE}`, "");
    return lines.join("\n");
  }
  const [submit, read] = curlLines(info.url, info.auth, sample);
  const name = sample.handler;
  lines.push(
    `Submit a job, then read the newest ${name} job back with its result:`,
    ...(sample.placeholder
      ? [
          `(replace ${INPUT_PLACEHOLDER} with an input ${name} accepts: its schema refuses {} and no input)`,
        ]
      : []),
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
  if (transport.kind === "streams") {
    return transport.concurrency === undefined
      ? "Redis Streams (durable; servers with the worker role pull, this one does not)"
      : `Redis Streams (durable; workers pull, ${transport.concurrency} at once, as ${transport.consumer})`;
  }
  if (transport.kind === "qstash") {
    return `QStash ${transport.baseUrl}, delivers to ${transport.workerUrl}`;
  }
  const key = transport.sharedKey ? "TICKWORK_SIGNING_KEY" : "a per-process key";
  return `local queue, delivers to ${transport.workerUrl} (signed with ${key})`;
}
