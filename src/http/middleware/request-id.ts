/**
 * @module
 * Every answer carries `x-request-id`: the caller's own when it looks like an id, else a fresh one.
 * Every log line written while handling the request carries it too, through a child logger.
 */
import type { Context, MiddlewareHandler } from "hono";
import { type Logger, mayLog, silentLogger } from "../../engine/logger.ts";
import type { AppEnv } from "../options.ts";

const HEADER = "x-request-id";
/** What we accept from a caller: short, and safe to log and echo. */
const SANE_ID = /^[A-Za-z0-9._:=-]{1,128}$/;

/** The request's id: the caller's `x-request-id` when it looks like an id, else a fresh one. */
export function requestIdOf(incoming: string | undefined): string {
  return incoming !== undefined && SANE_ID.test(incoming) ? incoming : crypto.randomUUID();
}

/** Answers built by {@link jsonAnswer}: they carry the request id already. */
const carryingId = new WeakSet<Response>();

/**
 * A JSON answer whose headers are a plain object: `headers`, `content-type` and the request's
 * `x-request-id`. On Node, `@hono/node-server` writes such headers as they are; a header set
 * with `c.header()` would make Hono and then the server build and copy a `Headers` object, about
 * 3 µs of a submit (docs/adr/0039-coalesced-writes.md). For a hot path's plain answer only:
 * headers set with `c.header()` earlier in the request are not sent with it.
 *
 * @example
 * return jsonAnswer(c, JSON.stringify(summary), 202, { location });
 */
export function jsonAnswer(
  c: Context<AppEnv>,
  text: string,
  status: number,
  headers: Record<string, string>,
): Response {
  headers["content-type"] = "application/json";
  headers[HEADER] = c.get("requestId");
  const answer = new Response(text, { status, headers });
  carryingId.add(answer);
  return answer;
}

/**
 * Sets `c.get("requestId")`, `c.get("logger")` (`logger` with that `requestId`) and the
 * `x-request-id` header of the answer — also of answers a route passes through as they are (the
 * worker's). With `appPathOf` (`./app-path.ts`), also `c.get("appPath")`: one middleware layer
 * for what every request needs. Each request ends with one `debug` line: method, path, status
 * and duration.
 *
 * @example
 * root.use(requestId(engine.options.logger, appPathResolver(config.pathPrefix)));
 */
export function requestId(
  logger: Logger = silentLogger,
  appPathOf?: (c: Context<AppEnv>) => string,
): MiddlewareHandler<AppEnv> {
  return async function requestId(c, next) {
    const started = Date.now();
    const id = requestIdOf(c.req.header(HEADER));
    const log = logger.child({ requestId: id });
    c.set("requestId", id);
    c.set("logger", log);
    if (appPathOf) c.set("appPath", appPathOf(c));
    await next();
    logRequest(log, c.req.method, c.req.path, c.res.status, started);
    // Set after the route, on whatever it answered: its own Response, an error's problem+json.
    if (carryingId.has(c.res) || c.res.headers.get(HEADER) === id) return;
    try {
      c.res.headers.set(HEADER, id);
    } catch {
      // Immutable headers (a Response from fetch): copy it.
      c.res = new Response(c.res.body, c.res);
      c.res.headers.set(HEADER, id);
    }
  };
}

/**
 * The line every request ends with, at `debug`: method, path, status and duration since
 * `started` (`Date.now()`). Also written by the direct submit route (../direct-submit.ts).
 */
export function logRequest(
  log: Logger,
  method: string,
  path: string,
  status: number,
  started: number,
): void {
  if (mayLog(log, "debug"))
    log.debug("request", { method, path, status, ms: Date.now() - started });
}
