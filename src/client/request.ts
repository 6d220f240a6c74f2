/**
 * @module
 * One API call over `fetch`: URL under the base path, bearer key, JSON in and out, error answers
 * turned into typed errors. Web APIs only (Node, Workers, browsers).
 */
import { MAX_TIMER_MS } from "../core/duration.ts";
import { bodyIssues } from "../core/json-values.ts";
import { isWellFormedText } from "../core/text.ts";
import { apiError, RequestTimeoutError, TickworkApiError } from "./errors.ts";

/** What every call needs; built once by `createClient`. */
export interface Caller {
  /** Base URL without a trailing slash, e.g. `https://app.example.com/api/tickwork`. */
  base: string;
  apiKey: string | undefined;
  fetch: typeof globalThis.fetch;
  headers: Headers;
  /** The longest a request may wait for its answer (ms), or `undefined` for no limit. */
  timeoutMs: number | undefined;
}

/** One call's parts. */
export interface CallOptions {
  /** Query parameters; `undefined` values are left out. */
  query?: Record<string, string | number | undefined>;
  /** JSON body. */
  body?: unknown;
  /** Bearer token for this call instead of the API key (the tick's secret). */
  bearer?: string;
  signal?: AbortSignal | undefined;
  /** How long the server is asked to hold the answer (a long-poll): added to the timeout. */
  waitMs?: number;
}

/** A request's signal under the client's timeout (see {@link requestLimit}). */
export interface RequestLimit {
  /** Aborts when the caller's signal does, or when the time is up; `undefined`: neither can. */
  signal: AbortSignal | undefined;
  /** The error to throw instead of the abort's, when the time was up. */
  timedOut(): RequestTimeoutError | undefined;
  /** The answer is in: the timer stops. */
  done(): void;
}

/**
 * The signal of one request: the caller's `signal`, and with the client's timeout one that also
 * aborts once `timeoutMs + extraMs` have passed (`what` names the request in the error).
 */
export function requestLimit(
  caller: Caller,
  signal: AbortSignal | undefined,
  extraMs: number,
  what: string,
): RequestLimit {
  if (caller.timeoutMs === undefined) {
    return { signal, timedOut: () => undefined, done: () => {} };
  }
  const ms = caller.timeoutMs + extraMs;
  return abortAfter(signal, ms, () => new RequestTimeoutError(what, ms));
}

/**
 * A signal that aborts when `signal` does (with its reason), or once `ms` have passed (with
 * `lapsed()`, which `timedOut()` then answers). `done()` stops the timer.
 *
 * @example
 * const limit = abortAfter(options.signal, 5_000, () => new RequestTimeoutError("GET /x", 5_000));
 */
export function abortAfter(
  signal: AbortSignal | undefined,
  ms: number,
  lapsed: () => RequestTimeoutError,
): RequestLimit {
  const abort = new AbortController();
  let timedOut: RequestTimeoutError | undefined;
  const follow = () => abort.abort(signal?.reason);
  if (signal?.aborted) follow();
  else signal?.addEventListener("abort", follow, { once: true });
  const timer = setTimeout(
    () => {
      timedOut = lapsed();
      abort.abort(timedOut);
    },
    // A timer past 2^31 - 1 ms fires at once: the longest timeout plus a long-poll's wait is one.
    Math.min(ms, MAX_TIMER_MS),
  );
  return {
    signal: abort.signal,
    timedOut: () => timedOut,
    done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", follow);
    },
  };
}

/** A parsed success answer and the response it came in (for status and headers). */
export interface Answer<T> {
  data: T;
  response: Response;
}

/**
 * Call `method path` and parse the JSON answer; throws a `TickworkApiError` subclass for an
 * error status.
 *
 * @example
 * const { data } = await call<Job>(caller, "GET", `/v1/jobs/${encodeURIComponent(id)}`);
 */
export async function call<T>(
  caller: Caller,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Answer<T>> {
  const url = new URL(caller.base + path);
  for (const [key, value] of Object.entries(options.query ?? {})) {
    if (value !== undefined) url.searchParams.set(key, String(value));
  }
  const headers = new Headers(caller.headers);
  headers.set("accept", "application/json");
  const token = options.bearer ?? caller.apiKey;
  if (token) headers.set("authorization", `Bearer ${token}`);
  // No redirect is followed: fetch turns a POST into a GET on a 301 or 302, so a submit behind
  // one would read the job listing as its answer and store nothing. A redirect is an error that
  // says where it leads (see below).
  const init: RequestInit = { method, headers, redirect: "manual" };
  if (options.body !== undefined) {
    // JSON.stringify writes Infinity and NaN as null: refused here, as the server refuses 1e400,
    // rather than sent as a null nobody asked for (reserved keys too, which it would refuse).
    const issues = bodyIssues(options.body);
    if (issues.length > 0) {
      throw new TypeError(
        `the request body holds what JSON cannot carry: ${issues.map((i) => `${i.path || "(the body)"}: ${i.message}`).join("; ")}`,
      );
    }
    headers.set("content-type", "application/json");
    init.body = JSON.stringify(options.body);
  }
  const limit = requestLimit(caller, options.signal, options.waitMs ?? 0, `${method} ${path}`);
  if (limit.signal) init.signal = limit.signal;
  let response: Response;
  let text: string;
  try {
    response = await caller.fetch(url, init);
    text = await response.text();
  } catch (error) {
    throw limit.timedOut() ?? error;
  } finally {
    limit.done();
  }
  if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400)) {
    throw redirected(response, `${method} ${path}`);
  }
  const body = parseJson(text);
  if (!response.ok) throw apiError(response, body === undefined ? text : body);
  // No body is an answer only as a 204: every other success of the API is a JSON document.
  if (body === undefined && (text !== "" || response.status !== 204)) {
    throw notAnAnswer(response, text);
  }
  return { data: body as T, response };
}

/**
 * The error of a redirect answer (a browser's `manual` redirect is opaque: status 0, no
 * location). Exported for the stream's open.
 */
export function redirected(response: Response, what: string): TickworkApiError {
  const location = response.headers.get("location");
  return new TickworkApiError(response.status, {
    type: "urn:tickwork:problem:redirect",
    title: "Redirected",
    status: response.status,
    detail: `${what} was answered with a redirect${location ? ` to ${location}` : ""}: the client follows none (a POST would arrive as a GET); give createClient the URL it leads to`,
  });
}

/** The error of a success answer that is not JSON: not a tickwork API (a page, a login form). */
function notAnAnswer(response: Response, text: string): TickworkApiError {
  return new TickworkApiError(response.status, {
    type: "urn:tickwork:problem:not_json",
    title: "Not a tickwork answer",
    status: response.status,
    detail: `answered ${response.status} with ${text === "" ? "no body" : (response.headers.get("content-type") ?? "no content type")}, not JSON: is the client's url the tickwork API? ${text.slice(0, 200)}`,
  });
}

/**
 * A path segment for an id. `.` and `..` are dot segments the URL parser removes (so are `%2e`
 * and `%2E`: encoding them once is no help), so `/v1/schedules/./runs` would reach
 * `/v1/schedules/runs`, another schedule. Their dots are sent percent-encoded twice: an id the
 * server answers 404, as it does every id a create could never have made.
 */
export function seg(id: string): string {
  if (id === "." || id === "..") return id.replaceAll(".", "%252E");
  if (!isWellFormedText(id)) return lenientEncode(id);
  return encodeURIComponent(id);
}

/**
 * `encodeURIComponent` of text with lone surrogates, which it refuses (URIError): each lone one is
 * sent as the three bytes it would take (WTF-8), which are not UTF-8, so the server answers 404,
 * as docs/api.md says of an id that is not well-formed text; no id can name another this way.
 */
function lenientEncode(id: string): string {
  let out = "";
  for (const part of id.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]|[\s\S]/g) ?? []) {
    const unit = part.charCodeAt(0);
    if (part.length === 1 && unit >= 0xd800 && unit <= 0xdfff) {
      const bytes = [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)];
      out += bytes.map((b) => `%${b.toString(16).toUpperCase()}`).join("");
    } else out += encodeURIComponent(part);
  }
  return out;
}

function parseJson(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
