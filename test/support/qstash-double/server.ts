/**
 * The double's API side: a node:http server on 127.0.0.1, port 0, speaking QStash v2's publish
 * wire format — `POST /v2/publish/<destination>` and `POST /v2/batch`, bearer-token auth (or the
 * `qstash_token` query parameter), the 10-minute dedup window (a duplicate answers 202 with the
 * first message's id and `deduplicated: true`), `{error}` bodies for refusals.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { DEV_CURRENT_SIGNING_KEY, DEV_NEXT_SIGNING_KEY, DEV_TOKEN } from "./constants.ts";
import { Deliveries, randomId } from "./deliveries.ts";
import { type HeaderLookup, HeaderMap } from "./header-map.ts";
import { type MessageSpec, PublishRejection, parseMessage } from "./message.ts";
import type {
  DeliveryRecord,
  DlqEntry,
  MessageView,
  QStashDoubleCounters,
  QStashDoubleFaults,
} from "./records.ts";

const PUBLISH_PREFIX = "/v2/publish/";

/** Options of {@link startQStashDouble}. */
export interface QStashDoubleOptions {
  /** Bearer token publishers must send. @default the dev server's token */
  token?: string;
  /** @default the dev server's current key */
  currentSigningKey?: string;
  /** @default the dev server's next key */
  nextSigningKey?: string;
  /** Which key deliveries are signed with (QStash signs with the current one). @default "current" */
  signWith?: "current" | "next";
  /**
   * Multiplies every retry wait (default backoff, `Upstash-Retry-Delay`, `Retry-After`), so tests
   * need not wait QStash's 12 s, 2.5 min, 30 min … Not-before times and timeouts are not scaled.
   * @default 1
   */
  backoffScale?: number;
  /**
   * Multiplies QStash's default backoff only — the wait of a message with no `Upstash-Retry-Delay`
   * whose destination sent no `Retry-After`, such as a failure callback — on top of `backoffScale`:
   * shortens those 12 s, 2.5 min, 30 min … while `Retry-After` and retry-delay expressions stay as
   * given.
   * @default 1
   */
  defaultBackoffScale?: number;
  /** @default 600_000 (10 minutes) */
  dedupWindowMs?: number;
  /** `Upstash-Retries` when a publish does not say. @default 3 */
  defaultRetries?: number;
  /**
   * The plan's longest delay: a publish due later is refused, as QStash refuses it (Free: 7 days,
   * pay-as-you-go: a year). @default none
   */
  maxDelayMs?: number;
  /** Attempt timeout when a publish sets no `Upstash-Timeout`. @default 900_000 */
  maxTimeoutMs?: number;
  /** Randomness for the reorder fault. @default Math.random */
  random?: () => number;
  /** Initial faults. */
  faults?: Partial<QStashDoubleFaults>;
}

/** A running double. */
export interface QStashDouble {
  /** Base URL, for `QSTASH_URL` / the client's `baseUrl`. */
  url: string;
  token: string;
  currentSigningKey: string;
  nextSigningKey: string;
  /** Which key signs deliveries from now on. */
  signWith: "current" | "next";
  /** Faults to inject; mutate freely. */
  faults: QStashDoubleFaults;
  readonly counters: QStashDoubleCounters;
  /** Every delivery attempt, in the order they started. */
  readonly deliveries: DeliveryRecord[];
  /** Messages that gave up. */
  readonly dlq: DlqEntry[];
  /** Every stored message. */
  messages(): MessageView[];
  /** Resolves once nothing is scheduled, waiting or in flight. @param timeoutMs default 10_000 */
  idle(timeoutMs?: number): Promise<void>;
  /** Stop the server and drop every pending delivery. */
  close(): Promise<void>;
}

/**
 * Start a QStash double on a free port.
 *
 * @example
 * const qstash = await startQStashDouble({ backoffScale: 0.001 });
 * const client = new Client({ baseUrl: qstash.url, token: qstash.token });
 * await client.publishJSON({ url: "http://127.0.0.1:3000/hook", body: { hi: 1 } });
 * await qstash.idle();
 * await qstash.close();
 */
export async function startQStashDouble(options: QStashDoubleOptions = {}): Promise<QStashDouble> {
  const token = options.token ?? DEV_TOKEN;
  const dedupWindowMs = options.dedupWindowMs ?? 600_000;
  const defaultRetries = options.defaultRetries ?? 3;
  const faults: QStashDoubleFaults = {
    failPublishRequests: 0,
    failStatus: 500,
    publishDelayMs: 0,
    duplicateDeliveries: false,
    reorderMs: 0,
    holdDeliveries: false,
    ...options.faults,
  };
  const counters: QStashDoubleCounters = {
    requests: {},
    publishRequests: 0,
    batchSizes: [],
    messages: 0,
    deduplicated: 0,
    rejected: 0,
    deliveries: 0,
    delivered: 0,
    retries: 0,
    failed: 0,
    callbacks: 0,
    callbacksDelivered: 0,
    callbacksFailed: 0,
  };
  const dedup = new Map<string, { messageId: string; expiresAt: number }>();
  const send = globalThis.fetch;
  const double = {
    url: "",
    token,
    currentSigningKey: options.currentSigningKey ?? DEV_CURRENT_SIGNING_KEY,
    nextSigningKey: options.nextSigningKey ?? DEV_NEXT_SIGNING_KEY,
    signWith: options.signWith ?? "current",
    faults,
    counters,
  } as QStashDouble;
  const deliveries = new Deliveries({
    signingKey: () =>
      double.signWith === "next" ? double.nextSigningKey : double.currentSigningKey,
    backoffScale: options.backoffScale ?? 1,
    defaultBackoffScale: options.defaultBackoffScale ?? 1,
    maxTimeoutMs: options.maxTimeoutMs ?? 900_000,
    faults,
    counters,
    random: options.random ?? Math.random,
    send: (input, init) => send(input, init),
  });

  /** Accept one message: dedup or store it. */
  function accept(spec: MessageSpec, callerIp: string | undefined) {
    const now = Date.now();
    if (spec.dedupKey !== undefined) {
      const earlier = dedup.get(spec.dedupKey);
      if (earlier && earlier.expiresAt > now) {
        counters.deduplicated++;
        return { messageId: earlier.messageId, url: spec.url, deduplicated: true };
      }
    }
    const messageId = `msg_${randomId()}`;
    if (spec.dedupKey !== undefined) {
      dedup.set(spec.dedupKey, { messageId, expiresAt: now + dedupWindowMs });
    }
    counters.messages++;
    deliveries.add(spec, messageId, callerIp);
    return { messageId, url: spec.url };
  }

  function parse(destination: string, headers: HeaderLookup, body: Buffer) {
    return parseMessage(destination, headers, body, {
      now: Date.now(),
      defaultRetries,
      ...(options.maxDelayMs !== undefined ? { maxDelayMs: options.maxDelayMs } : {}),
    });
  }

  async function handle(req: IncomingMessage, body: Buffer): Promise<Reply> {
    const target = req.url ?? "/";
    const path = target.split("?")[0] ?? "/";
    const route = path.startsWith(PUBLISH_PREFIX) ? "/v2/publish" : path;
    const routeKey = `${req.method} ${route}`;
    counters.requests[routeKey] = (counters.requests[routeKey] ?? 0) + 1;
    const isPublish = req.method === "POST" && (route === "/v2/publish" || route === "/v2/batch");
    if (!isPublish) return { status: 404, body: { error: `not found: ${req.method} ${path}` } };
    counters.publishRequests++;
    if (!authorized(req, token)) return { status: 401, body: { error: "Unauthorized" } };
    if (faults.publishDelayMs > 0) await sleep(faults.publishDelayMs);
    if (faults.failPublishRequests > 0) {
      faults.failPublishRequests--;
      return { status: faults.failStatus, body: { error: "injected failure" } };
    }
    const callerIp = req.socket.remoteAddress;
    if (route === "/v2/publish") {
      // The destination follows the prefix verbatim, query included.
      const destination = target.slice(PUBLISH_PREFIX.length);
      try {
        const spec = parse(destination, requestHeaders(req), body);
        const result = accept(spec, callerIp);
        return { status: result.deduplicated ? 202 : 200, body: result };
      } catch (error) {
        return refuse(error);
      }
    }
    let entries: unknown;
    try {
      entries = JSON.parse(body.toString("utf8"));
    } catch {
      return { status: 400, body: { error: "batch body is not JSON" } };
    }
    if (!Array.isArray(entries)) return { status: 400, body: { error: "batch must be an array" } };
    counters.batchSizes.push(entries.length);
    const results = entries.map((entry: unknown) => {
      try {
        const { destination, headers, body: text } = batchEntry(entry);
        return accept(parse(destination, headers, Buffer.from(text, "utf8")), callerIp);
      } catch (error) {
        counters.rejected++;
        return { error: error instanceof Error ? error.message : String(error) };
      }
    });
    return { status: 200, body: results };
  }

  function refuse(error: unknown): Reply {
    counters.rejected++;
    if (error instanceof PublishRejection) return { status: 400, body: { error: error.message } };
    throw error;
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      handle(req, Buffer.concat(chunks)).then(
        (reply) => write(res, reply),
        (error: unknown) => write(res, { status: 500, body: { error: String(error) } }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  double.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  Object.defineProperties(double, {
    deliveries: { get: () => deliveries.records },
    dlq: { get: () => deliveries.dlq },
  });
  double.messages = () => deliveries.views();
  // A hang detector, not a measurement: generous, for a busy machine with slow loopback I/O.
  double.idle = (timeoutMs = 60_000) => deliveries.idle(timeoutMs);
  double.close = async () => {
    await deliveries.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return double;
}

interface Reply {
  status: number;
  body: unknown;
}

function write(res: ServerResponse, reply: Reply): void {
  const text = JSON.stringify(reply.body);
  res.writeHead(reply.status, { "content-type": "application/json" });
  res.end(text);
}

function authorized(req: IncomingMessage, token: string): boolean {
  const header = req.headers.authorization;
  if (header !== undefined) return header === `Bearer ${token}`;
  const query = new URL(req.url ?? "/", "http://double").searchParams.get("qstash_token");
  return query === token;
}

/** A publish request's headers, less the credentials. */
function requestHeaders(req: IncomingMessage): HeaderMap {
  const headers = new HeaderMap();
  for (const [name, value] of Object.entries(req.headers)) {
    if (name === "authorization" || value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}

/** `{destination, headers, body, queue?}`; queues are not supported by the double. */
function batchEntry(entry: unknown): { destination: string; headers: HeaderMap; body: string } {
  if (typeof entry !== "object" || entry === null) {
    throw new PublishRejection("batch entry must be an object");
  }
  const { destination, headers, body, queue } = entry as Record<string, unknown>;
  if (typeof destination !== "string") throw new PublishRejection("destination is required");
  if (queue !== undefined) throw new PublishRejection("queues are not supported by the double");
  const result = new HeaderMap();
  if (headers !== undefined) {
    if (typeof headers !== "object" || headers === null) {
      throw new PublishRejection("headers must be an object");
    }
    for (const [name, value] of Object.entries(headers)) {
      if (typeof value !== "string") throw new PublishRejection(`header ${name} must be a string`);
      result.append(name, value);
    }
  }
  if (body !== undefined && typeof body !== "string") {
    throw new PublishRejection("body must be a string");
  }
  return { destination, headers: result, body: body ?? "" };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
