/**
 * Reading one publish — destination, body and `Upstash-*` headers, from `POST /v2/publish/<dest>`
 * or from one entry of `POST /v2/batch` — into what the double stores and delivers. Header
 * meanings follow upstash/docs `qstash/api/publish` and the SDK's `processHeaders`.
 */
import { createHash } from "node:crypto";
import { parseHeaderDuration } from "./durations.ts";
import type { HeaderLookup } from "./header-map.ts";
import { compileRetryDelay, type RetryDelay } from "./retry-delay.ts";

const METHODS = new Set(["GET", "POST", "PUT", "DELETE", "PATCH"]);
const FORWARD = "upstash-forward-";
const FAILURE_CALLBACK_FORWARD = "upstash-failure-callback-forward-";

/** Flow control as set by `Upstash-Flow-Control-Key` / `-Value`. */
export interface FlowSpec {
  key: string;
  parallelism?: number;
  rate?: number;
  /** Window of `rate`. @default 1000 */
  periodMs: number;
}

/** Where and how a message that gave up is reported. */
export interface FailureCallbackSpec {
  url: string;
  method: string;
  retries: number;
  timeoutMs: number | undefined;
  forward: [string, string][];
}

/** A publish, read and checked. */
export interface MessageSpec {
  /** The destination exactly as published; also the signature's `sub`. */
  url: string;
  method: string;
  body: Buffer;
  contentType: string | undefined;
  /** Headers to deliver, `Upstash-Forward-` stripped. */
  forward: [string, string][];
  /** Epoch ms; the message is not delivered before it. */
  notBefore: number;
  /** Dedup key (explicit id, or the content hash), when asked for. */
  dedupKey: string | undefined;
  retries: number;
  retryDelay: RetryDelay | undefined;
  retryDelayExpression: string | undefined;
  /** Per-attempt HTTP timeout; `undefined` for the plan's maximum. */
  timeoutMs: number | undefined;
  failureCallback: FailureCallbackSpec | undefined;
  flow: FlowSpec | undefined;
}

/** A publish QStash would refuse (answered 400 `{error}`, or a batch entry `{error}`). */
export class PublishRejection extends Error {
  override readonly name = "PublishRejection";
}

/** Read a publish. Throws {@link PublishRejection} for anything QStash would refuse. */
export function parseMessage(
  destination: string,
  headers: HeaderLookup,
  body: Buffer,
  options: { now: number; defaultRetries: number; maxDelayMs?: number },
): MessageSpec {
  const url = checkUrl(destination, "destination");
  const retries = integerHeader(headers, "upstash-retries") ?? options.defaultRetries;
  const method = (headers.get("upstash-method") ?? "POST").toUpperCase();
  if (!METHODS.has(method)) throw new PublishRejection(`invalid Upstash-Method: ${method}`);
  const forward: [string, string][] = [];
  for (const [name, value] of headers) {
    if (name.startsWith(FORWARD) && name.length > FORWARD.length) {
      forward.push([name.slice(FORWARD.length), value]);
    }
  }
  const contentType = headers.get("content-type") ?? undefined;
  const retryDelayExpression = headers.get("upstash-retry-delay")?.trim() || undefined;
  let retryDelay: RetryDelay | undefined;
  if (retryDelayExpression !== undefined) {
    try {
      retryDelay = compileRetryDelay(retryDelayExpression);
    } catch (error) {
      throw new PublishRejection(`invalid Upstash-Retry-Delay: ${(error as Error).message}`);
    }
  }
  const due = notBefore(headers, options.now);
  if (options.maxDelayMs !== undefined && due - options.now > options.maxDelayMs) {
    throw new PublishRejection("delay exceeds the maximum delay allowed by your plan");
  }
  return {
    url,
    method,
    body,
    contentType,
    forward,
    notBefore: due,
    dedupKey: dedupKey(headers, url, body, contentType, forward),
    retries,
    retryDelay,
    retryDelayExpression,
    timeoutMs: durationHeader(headers, "upstash-timeout"),
    failureCallback: failureCallback(headers, retries),
    flow: flow(headers),
  };
}

/** `Upstash-Not-Before` (unix seconds) wins over `Upstash-Delay`; neither means now. */
function notBefore(headers: HeaderLookup, now: number): number {
  const seconds = integerHeader(headers, "upstash-not-before");
  if (seconds !== undefined) return seconds * 1000;
  const delay = durationHeader(headers, "upstash-delay");
  return now + (delay ?? 0);
}

function dedupKey(
  headers: HeaderLookup,
  url: string,
  body: Buffer,
  contentType: string | undefined,
  forward: [string, string][],
): string | undefined {
  const id = headers.get("upstash-deduplication-id");
  if (id !== null && id !== "") return `id:${id}`;
  if (headers.get("upstash-content-based-deduplication")?.toLowerCase() !== "true")
    return undefined;
  const hash = createHash("sha256").update(url).update("\0").update(body).update("\0");
  hash.update(contentType ?? "").update("\0");
  for (const [name, value] of [...forward].sort()) hash.update(`${name}:${value}\n`);
  return `content:${hash.digest("hex")}`;
}

/**
 * The failure callback a publish asks for. Its retries are `Upstash-Failure-Callback-Retries`, or
 * else the message's own (QStash's openapi.yaml: "Failure callbacks will use the retry setting
 * from the original request").
 */
function failureCallback(headers: HeaderLookup, retries: number): FailureCallbackSpec | undefined {
  const value = headers.get("upstash-failure-callback");
  if (value === null || value === "") return undefined;
  const forward: [string, string][] = [];
  for (const [name, v] of headers) {
    if (name.startsWith(FAILURE_CALLBACK_FORWARD)) {
      forward.push([name.slice(FAILURE_CALLBACK_FORWARD.length), v]);
    }
  }
  const method = (headers.get("upstash-failure-callback-method") ?? "POST").toUpperCase();
  if (!METHODS.has(method)) throw new PublishRejection(`invalid failure callback method ${method}`);
  return {
    url: checkUrl(value, "Upstash-Failure-Callback"),
    method,
    retries: integerHeader(headers, "upstash-failure-callback-retries") ?? retries,
    timeoutMs: durationHeader(headers, "upstash-failure-callback-timeout"),
    forward,
  };
}

/** `Upstash-Flow-Control-Value: parallelism=5, rate=10, period=1m`. */
function flow(headers: HeaderLookup): FlowSpec | undefined {
  const key = headers.get("upstash-flow-control-key");
  const value = headers.get("upstash-flow-control-value");
  if (key === null && value === null) return undefined;
  if (!key || !value) {
    throw new PublishRejection("Upstash-Flow-Control-Key and -Value must be set together");
  }
  const spec: FlowSpec = { key, periodMs: 1000 };
  for (const part of value.split(",")) {
    const [name, raw] = part.split("=").map((s) => s.trim());
    if (name === "parallelism" || name === "rate") {
      const n = Number(raw);
      if (!Number.isInteger(n) || n < 1) throw new PublishRejection(`invalid flow control ${name}`);
      spec[name] = n;
    } else if (name === "period") {
      const ms = raw === undefined ? undefined : parseHeaderDuration(raw);
      if (ms === undefined || ms <= 0) throw new PublishRejection("invalid flow control period");
      spec.periodMs = ms;
    } else {
      throw new PublishRejection(`unknown flow control setting ${JSON.stringify(name)}`);
    }
  }
  if (spec.parallelism === undefined && spec.rate === undefined) {
    throw new PublishRejection("flow control needs parallelism or rate");
  }
  return spec;
}

/** Destinations already checked (a tick publishes thousands to the same few URLs). */
const checkedUrls = new Set<string>();

function checkUrl(value: string, what: string): string {
  if (checkedUrls.has(value)) return value;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new PublishRejection(
      `invalid ${what} ${JSON.stringify(value)}: not a URL (URL groups are not supported by the double)`,
    );
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new PublishRejection(`invalid ${what} ${JSON.stringify(value)}: must be http(s)`);
  }
  if (checkedUrls.size >= 1_000) checkedUrls.clear();
  checkedUrls.add(value);
  return value;
}

function integerHeader(headers: HeaderLookup, name: string): number | undefined {
  const value = headers.get(name)?.trim();
  if (value === undefined || value === "") return undefined;
  if (!/^\d+$/.test(value)) throw new PublishRejection(`invalid ${name}: ${JSON.stringify(value)}`);
  return Number(value);
}

function durationHeader(headers: HeaderLookup, name: string): number | undefined {
  const value = headers.get(name);
  if (value === null || value === "") return undefined;
  const ms = parseHeaderDuration(value);
  if (ms === undefined) throw new PublishRejection(`invalid ${name}: ${JSON.stringify(value)}`);
  return ms;
}
