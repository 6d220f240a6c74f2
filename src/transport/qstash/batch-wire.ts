/**
 * @module
 * The `/v2/batch` request body built directly from the publish requests, byte for byte what the
 * SDK's `Client.batch` sends for them, without its per-message `Headers` objects.
 *
 * `Client.batch` turns every entry into three `Headers` (its `processHeaders`, `prefixHeaders` and
 * `wrapWithGlobalHeaders`, each validating and sorting on every call) and then back into a plain
 * object: 12–28 µs a message, measured (a tick of 10,000 occurrences spent 120–280 ms of its
 * ~1.1 s of CPU there). {@link BatchWire} writes the same entries with plain string work and
 * hands the body to the SDK's own HTTP client (`client.http.request`, the call `Client.batch`
 * ends with: same URL, headers, auth, retries and errors).
 *
 * It covers exactly the fields {@link toPublishRequest} sets, with values that `Headers` would
 * keep unchanged (printable ASCII, no surrounding space). For anything else `entry` answers
 * `undefined` and the caller uses `Client.batch`, so an odd value fails (or passes) exactly as
 * it does there. `batch-wire.test.ts` compares both bodies.
 */
import type { PublishBatchRequest } from "@upstash/qstash";

/** One entry of a `/v2/batch` body, as `Client.batch` writes it. */
export interface WireEntry {
  destination: string;
  headers: Record<string, string>;
  body: string;
}

/** The headers part of the SDK's HTTP client that `Client.batch` adds to every entry. */
export interface SdkHeaders {
  /** `Client` config `headers` (already `Upstash-Forward-` prefixed by the SDK). */
  headers?: Headers;
  /** `Upstash-Telemetry-*`; empty values are left out. */
  telemetryHeaders?: Headers;
}

/** The request fields {@link BatchWire.entry} knows how to write. */
const KNOWN_FIELDS = new Set([
  "url",
  "body",
  "headers",
  "deduplicationId",
  "retries",
  "timeout",
  "notBefore",
  "failureCallback",
  "retryDelay",
  "flowControl",
]);

/**
 * Per-message header names `Client.batch` may write for a request of {@link KNOWN_FIELDS}
 * (lower case, as `Headers` yields them).
 */
const MESSAGE_HEADERS = [
  "content-type",
  "upstash-deduplication-id",
  "upstash-failure-callback",
  "upstash-failure-callback-retries",
  "upstash-flow-control-key",
  "upstash-flow-control-value",
  "upstash-method",
  "upstash-not-before",
  "upstash-retries",
  "upstash-retry-delay",
  "upstash-timeout",
] as const;
type MessageHeader = (typeof MESSAGE_HEADERS)[number];

/** The per-message header a request `headers` name written by toPublishRequest stands for. */
function givenHeader(name: string): MessageHeader | undefined {
  if (name === "Content-Type") return "content-type";
  if (name === "Upstash-Failure-Callback-Retries") return "upstash-failure-callback-retries";
  return undefined;
}

/** A header value `Headers` stores as is: printable ASCII, not starting or ending with a space. */
const PLAIN_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/** One slot of the sorted header order: a per-message header, or a constant one. */
type Slot = { name: MessageHeader; value?: undefined } | { name: string; value: string };

/**
 * Writes `/v2/batch` entries as `Client.batch` would.
 *
 * @example
 * const wire = new BatchWire(client.http);
 * const entries = requests.map((r) => wire.entry(r));
 * if (entries.every((e) => e !== undefined)) body = JSON.stringify(entries);
 */
export class BatchWire {
  /** Header names in the order `Headers` iterates them (sorted), with the constant values. */
  readonly #slots: Slot[] | undefined;
  readonly #flow = new Map<string, [key: string, value: string] | null>();

  constructor(sdk: SdkHeaders) {
    this.#slots = slotsFor(sdk);
  }

  /**
   * The entry `Client.batch` would send for `request`, or `undefined` when this writer does not
   * cover it (an unknown field, or a value `Headers` would normalise, reject or re-encode).
   */
  entry(request: PublishBatchRequest): WireEntry | undefined {
    const slots = this.#slots;
    if (slots === undefined || typeof request.body !== "string") return undefined;
    for (const field in request) if (!KNOWN_FIELDS.has(field)) return undefined;
    const url = request.url;
    if (typeof url !== "string" || url === "") return undefined;
    const values = this.#messageHeaders(request);
    if (values === undefined) return undefined;
    const headers: Record<string, string> = {};
    for (const slot of slots) {
      const value = slot.value ?? values[slot.name as MessageHeader];
      if (value !== undefined) headers[slot.name] = value;
    }
    return { destination: url, headers, body: request.body };
  }

  /** The per-message headers (SDK `processHeaders`), or `undefined` for a value not covered. */
  #messageHeaders(r: PublishBatchRequest): Partial<Record<MessageHeader, string>> | undefined {
    const out: Partial<Record<MessageHeader, string>> = { "upstash-method": "POST" };
    const given = r.headers;
    if (given !== undefined) {
      // Only the headers toPublishRequest sets (`Content-Type`, `Upstash-Failure-Callback-Retries`):
      // anything else is forwarded (`Upstash-Forward-…`) or merged by rules not repeated here.
      if (given === null || typeof given !== "object" || Array.isArray(given)) return undefined;
      if (given instanceof Headers) return undefined;
      for (const name in given) {
        const header = givenHeader(name);
        if (header === undefined) return undefined;
        const value = (given as Record<string, unknown>)[name];
        if (typeof value !== "string" || !PLAIN_VALUE.test(value)) return undefined;
        out[header] = value;
      }
    }
    if (r.notBefore !== undefined) {
      if (!Number.isSafeInteger(r.notBefore)) return undefined;
      out["upstash-not-before"] = r.notBefore.toFixed(0);
    }
    if (r.deduplicationId !== undefined) {
      if (!PLAIN_VALUE.test(r.deduplicationId)) return undefined;
      out["upstash-deduplication-id"] = r.deduplicationId;
    }
    if (r.retries !== undefined) {
      if (!Number.isSafeInteger(r.retries)) return undefined;
      out["upstash-retries"] = r.retries.toFixed(0);
    }
    if (r.retryDelay !== undefined) {
      if (!PLAIN_VALUE.test(r.retryDelay)) return undefined;
      out["upstash-retry-delay"] = r.retryDelay;
    }
    if (r.failureCallback !== undefined) {
      if (!PLAIN_VALUE.test(r.failureCallback)) return undefined;
      out["upstash-failure-callback"] = r.failureCallback;
    }
    if (r.timeout !== undefined) {
      if (typeof r.timeout !== "number" || !Number.isSafeInteger(r.timeout)) return undefined;
      out["upstash-timeout"] = `${r.timeout}s`;
    }
    if (r.flowControl !== undefined) {
      const flow = this.#flowHeaders(r.flowControl);
      if (flow === undefined) return undefined;
      if (flow !== null) {
        out["upstash-flow-control-key"] = flow[0];
        out["upstash-flow-control-value"] = flow[1];
      }
    }
    return out;
  }

  /**
   * `Upstash-Flow-Control-Key` and `-Value` as the SDK writes them (`null`: none, as for an
   * empty key), memoised per distinct setting; `undefined` when not covered.
   */
  #flowHeaders(flow: unknown): [string, string] | null | undefined {
    if (typeof flow !== "object" || flow === null) return undefined;
    const f = flow as Record<string, unknown>;
    for (const field in f) {
      if (field !== "key" && field !== "parallelism" && field !== "rate" && field !== "period") {
        return undefined;
      }
    }
    const { key, parallelism, rate, period } = f;
    for (const value of [key, parallelism, rate, period]) {
      if (value !== undefined && typeof value !== "string" && typeof value !== "number") {
        return undefined;
      }
    }
    const memoKey = JSON.stringify([key, parallelism, rate, period]);
    if (this.#flow.has(memoKey)) return this.#flow.get(memoKey) ?? null;
    let result: [string, string] | null | undefined;
    if (key === undefined || key === "") result = null;
    else if (typeof key !== "string" || !PLAIN_VALUE.test(key)) result = undefined;
    else if (!isCount(parallelism) || !isCount(rate)) result = undefined;
    else {
      const periodText = typeof period === "number" ? `${period}s` : period;
      const parts = [
        parallelism ? `parallelism=${parallelism}` : undefined,
        rate ? `rate=${rate}` : undefined,
        periodText ? `period=${periodText}` : undefined,
      ].filter(Boolean);
      const value = parts.join(", ");
      // No part (the SDK throws) or an odd period: leave it to the SDK.
      result = parts.length === 0 || !PLAIN_VALUE.test(value) ? undefined : [key, value];
    }
    if (result !== undefined) this.#flow.set(memoKey, result);
    return result;
  }
}

/** `undefined`, or a positive safe integer (as options.ts checks them). */
function isCount(n: unknown): boolean {
  return n === undefined || (typeof n === "number" && Number.isSafeInteger(n) && n > 0);
}

/**
 * Every header an entry may carry, in `Headers` order, the constant ones (client `headers`, then
 * telemetry appended) with their values; `undefined` (never the fast path) when a constant one
 * could collide with a per-message one or needs normalising.
 */
function slotsFor(sdk: SdkHeaders): Slot[] | undefined {
  const constant = new Map<string, string>();
  for (const [name, value] of sdk.headers ?? []) constant.set(name, value);
  for (const [name, value] of sdk.telemetryHeaders ?? []) {
    if (!value) continue;
    const before = constant.get(name);
    constant.set(name, before === undefined ? value : `${before}, ${value}`);
  }
  const names = new Set<string>(MESSAGE_HEADERS);
  for (const [name, value] of constant) {
    if (names.has(name)) return undefined;
    if (!PLAIN_VALUE.test(value) || name !== name.toLowerCase()) return undefined;
  }
  const slots: Slot[] = [
    ...MESSAGE_HEADERS.map((name): Slot => ({ name })),
    ...[...constant].map(([name, value]): Slot => ({ name, value })),
  ];
  return slots.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
