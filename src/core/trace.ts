/**
 * @module
 * W3C Trace Context (`traceparent`, `tracestate`) as tickwork stores it with a job
 * (docs/adr/0019-opentelemetry-traces.md): checked strictly, so that a malformed value is
 * dropped — never an error, never stored. Pure string work, no OpenTelemetry import.
 */

/** The trace context a job carries from its submit to every delivery of it. */
export interface TraceContext {
  /** A version-00 `traceparent`: `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`. */
  traceparent: string;
  /** The `tracestate` list that came with it, when there was a valid one. */
  tracestate?: string;
}

/** The longest `tracestate` kept (W3C asks to propagate at least 512 characters). */
export const MAX_TRACESTATE_CHARS = 512;
/** The most list members a `tracestate` may have (W3C). */
const MAX_TRACESTATE_MEMBERS = 32;

const TRACEPARENT_00 = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
/** A later version (01–fe): the version-00 fields first, then `-` and anything, or nothing. */
const TRACEPARENT_LATER = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-|$)/;
const ZERO_TRACE_ID = "00000000000000000000000000000000";
const ZERO_SPAN_ID = "0000000000000000";
/** A list member's key: simple, or multi-tenant `tenant@system`. */
const KEY = /^(?:[a-z][_0-9a-z\-*/]{0,255}|[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13})$/;
/** A list member's value: printable ASCII but `,` and `=`, at most 256, not ending in a space. */
const VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/**
 * The version-00 form of a `traceparent` header, or `undefined` when it is not one W3C accepts:
 * lowercase hex only, trace and span ids not all zeros, version `ff` refused. A version-00 value
 * must be exactly 55 characters; a later version (01–fe) is read for its version-00 fields and
 * kept as version 00 with only the sampled flag.
 *
 * @example
 * validTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"); // the same
 * validTraceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"); // undefined
 */
export function validTraceparent(value: string): string | undefined {
  if (value.length === 55 && TRACEPARENT_00.test(value)) {
    return value.startsWith(ZERO_TRACE_ID, 3) || value.startsWith(ZERO_SPAN_ID, 36)
      ? undefined
      : value;
  }
  if (value.length < 55 || value.length > 1024 || value.startsWith("00") || value.startsWith("ff"))
    return undefined;
  const later = TRACEPARENT_LATER.exec(value);
  if (!later) return undefined;
  const [, traceId, spanId, flags] = later as unknown as [string, string, string, string];
  if (traceId === ZERO_TRACE_ID || spanId === ZERO_SPAN_ID) return undefined;
  return `00-${traceId}-${spanId}-0${Number.parseInt(flags, 16) & 1}`;
}

/**
 * `value` when it is a `tracestate` W3C accepts and at most {@link MAX_TRACESTATE_CHARS} long
 * (up to 32 `key=value` members, no key twice, optional spaces around members), else
 * `undefined`; an empty list is `undefined` too.
 *
 * @example
 * validTracestate("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"); // the same
 * validTracestate("Congo=t61rcWkgMzE");                         // undefined (uppercase key)
 */
export function validTracestate(value: string): string | undefined {
  if (value.length > MAX_TRACESTATE_CHARS) return undefined;
  const members = value.split(",");
  if (members.length > MAX_TRACESTATE_MEMBERS) return undefined;
  const keys = new Set<string>();
  for (const raw of members) {
    const member = raw.replace(/^[ \t]+|[ \t]+$/g, "");
    if (member === "") continue;
    const eq = member.indexOf("=");
    if (eq < 0) return undefined;
    const key = member.slice(0, eq);
    if (!KEY.test(key) || !VALUE.test(member.slice(eq + 1)) || keys.has(key)) return undefined;
    keys.add(key);
  }
  return keys.size > 0 ? value.trim() : undefined;
}

/**
 * The trace context of a request's `traceparent` and `tracestate`, or `undefined` when there is
 * no valid `traceparent` (a `tracestate` alone, or an invalid one, is dropped).
 *
 * @example
 * traceContextOf(req.headers.get("traceparent"), req.headers.get("tracestate"));
 */
export function traceContextOf(
  traceparent: string | null | undefined,
  tracestate?: string | null,
): TraceContext | undefined {
  if (typeof traceparent !== "string") return undefined;
  const parent = validTraceparent(traceparent);
  if (parent === undefined) return undefined;
  const state = typeof tracestate === "string" ? validTracestate(tracestate) : undefined;
  return state === undefined ? { traceparent: parent } : { traceparent: parent, tracestate: state };
}

/**
 * A stored or delivered job's `trace` field, checked again (a delivery's body is the queue's
 * word): a valid {@link TraceContext}, else `undefined`.
 */
export function traceOfUnknown(value: unknown): TraceContext | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { traceparent, tracestate } = value as Record<string, unknown>;
  return traceContextOf(
    typeof traceparent === "string" ? traceparent : undefined,
    typeof tracestate === "string" ? tracestate : undefined,
  );
}

/** The ids and flags of a valid version-00 `traceparent` (see {@link validTraceparent}). */
export function traceparentParts(traceparent: string): {
  traceId: string;
  spanId: string;
  flags: number;
} {
  return {
    traceId: traceparent.slice(3, 35),
    spanId: traceparent.slice(36, 52),
    flags: Number.parseInt(traceparent.slice(53, 55), 16),
  };
}

/** The version-00 `traceparent` of these ids and flags. */
export function formatTraceparent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${(flags & 0xff).toString(16).padStart(2, "0")}`;
}
