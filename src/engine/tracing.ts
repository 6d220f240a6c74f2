/**
 * @module
 * OpenTelemetry spans (docs/adr/0019-opentelemetry-traces.md): submit, tick, publish and run,
 * through `@opentelemetry/api` only — without an SDK registered by the application every span is
 * the API's no-op, and what a submit costs is one header read and that no-op span. Attributes are
 * set only on a recording span, and links added only then.
 *
 * A job keeps the trace context of its submit (`JobSpec.trace`): the submit span's when it is
 * recorded, else the caller's valid `traceparent`/`tracestate`. Its run span is a child of that
 * context; a schedule's occurrence carries its tick's context instead, and its run starts a trace
 * of its own with a link to the tick.
 */
import {
  type Attributes,
  type Context,
  context,
  createTraceState,
  type Exception,
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  type TraceState,
  trace,
} from "@opentelemetry/api";
import type { JobSpec, OutboxMessage } from "../core/model.ts";
import {
  formatTraceparent,
  type TraceContext,
  traceContextOf,
  traceparentParts,
} from "../core/trace.ts";

/** The instrumentation scope of every tickwork span. */
export const TRACER_NAME = "tickwork";

/** `messaging.system` of every span. */
const SYSTEM = "tickwork";
/** Most links a publish span gets (the SDK's default span limit). */
const MAX_LINKS = 128;
/** Most occurrence ids a tick span lists. */
const MAX_LISTED = 100;

const tracer = trace.getTracer(TRACER_NAME);

const PRODUCER: SpanOptions = { kind: SpanKind.PRODUCER };
const CONSUMER: SpanOptions = { kind: SpanKind.CONSUMER };

/** A submit's trace context as the caller hands it over: raw header values, checked here. */
export interface IncomingTrace {
  traceparent?: string | null | undefined;
  tracestate?: string | null | undefined;
}

/** The valid trace context of raw `traceparent`/`tracestate` values, or `undefined`. */
export function incomingTrace(raw: IncomingTrace | undefined): TraceContext | undefined {
  return raw === undefined ? undefined : traceContextOf(raw.traceparent, raw.tracestate);
}

/** The incoming trace context of a request's headers (no validation yet; none without a `traceparent`). */
export function traceHeaders(headers: {
  get(name: string): string | null;
}): IncomingTrace | undefined {
  const traceparent = headers.get("traceparent");
  return traceparent === null ? undefined : { traceparent, tracestate: headers.get("tracestate") };
}

/** `{ trace }` for a submit's `SubmitVia` when the request has a `traceparent`, else `{}`. */
export function traceVia(headers: Headers): { trace?: IncomingTrace } {
  const trace = traceHeaders(headers);
  return trace === undefined ? {} : { trace };
}

/**
 * Start a job's submit span (`PRODUCER`, `messaging.operation.type` `create`): a child of the
 * active span, or of `incoming` when the active context has no span of that trace.
 */
export function startSubmitSpan(incoming: TraceContext | undefined): Span {
  const active = context.active();
  if (incoming === undefined) return tracer.startSpan("submit", PRODUCER, active);
  const current = trace.getSpanContext(active);
  const parts = traceparentParts(incoming.traceparent);
  if (current && isSpanContextValid(current) && current.traceId === parts.traceId) {
    return tracer.startSpan("submit", PRODUCER, active);
  }
  return tracer.startSpan("submit", PRODUCER, remoteContext(incoming, active));
}

/**
 * The trace context to store with a job submitted under `span`: the span's own when it is
 * recorded (or sampled out but valid), else `incoming` as the caller sent it.
 */
export function storedTrace(
  span: Span,
  incoming: TraceContext | undefined,
): TraceContext | undefined {
  if (!span.isRecording() && incoming !== undefined) return incoming;
  const sc = span.spanContext();
  // Without an SDK and without an incoming trace: the API's invalid context, known without
  // checking its ids.
  if (sc === INVALID_SPAN_CONTEXT) return incoming;
  return isSpanContextValid(sc) ? traceContextOfSpan(sc) : incoming;
}

/** Name and attributes of a submit span once the store answered. */
export function submitSpanDone(span: Span, job: JobSpec, replayed: boolean): void {
  if (!span.isRecording()) return;
  span.updateName(`submit ${job.handler}`);
  const attributes = messaging("create", "submit", job);
  attributes["tickwork.tenant"] = job.tenant;
  attributes["tickwork.job.replayed"] = replayed;
  span.setAttributes(attributes);
}

/**
 * Record an error on a span (recording or not) and mark it failed. The error is a store's or a
 * queue's, whose message may quote a whole answer (an HTML error page of a proxy, say): its name,
 * message and stack are cut as a handler's error is (200 and 2,000 characters; the stack 8,000),
 * so one failure cannot make a span an exporter refuses or a collector's memory grow.
 */
export function spanFailed(span: Span, error: unknown): void {
  if (!span.isRecording()) return;
  let text: string;
  if (error instanceof Error) {
    const name = ownText(error, "name", 200) ?? "Error";
    const message = ownText(error, "message", 2000) ?? "";
    const stack = ownText(error, "stack", 8000);
    const exception: Exception = { name, message };
    if (stack !== undefined) exception.stack = stack;
    // A system error's code (ECONNREFUSED), which the SDK records as its type.
    let code: unknown;
    try {
      code = (error as { code?: unknown }).code;
    } catch {}
    if (typeof code === "number" || (typeof code === "string" && code.length <= 200)) {
      exception.code = code;
    }
    span.recordException(exception);
    text = message === "" ? name : `${name}: ${message}`;
  } else {
    text = safeText(error);
  }
  span.setStatus({ code: SpanStatusCode.ERROR, message: text.slice(0, 500) });
}

/** `error[field]` cut to `max` characters when it is text; undefined when not, or its getter throws. */
function ownText(
  error: Error,
  field: "name" | "message" | "stack",
  max: number,
): string | undefined {
  try {
    const value: unknown = error[field];
    return typeof value === "string" ? value.slice(0, max) : undefined;
  } catch {
    return undefined;
  }
}

/** `String(value)`, or a placeholder when its conversion throws (an object's own toString). */
function safeText(value: unknown): string {
  try {
    return String(value);
  } catch {
    return "unprintable error";
  }
}

/**
 * Call `fn` with `span` as the active span (its children — a publish, the handler's own spans,
 * the jobs a handler submits — join its trace); without a recording span, just call it.
 */
export function inSpan<A extends unknown[], R>(
  span: Span,
  fn: (...args: A) => R,
  thisArg: unknown,
  ...args: A
): R {
  if (!span.isRecording()) return fn.apply(thisArg, args);
  return context.with(trace.setSpan(context.active(), span), fn, thisArg, ...args);
}

/** Start a tick span (`INTERNAL`), begun at `startedAt` (ms), a child of the active context. */
export function startTickSpan(startedAt: number): Span {
  return tracer.startSpan(
    "tick",
    { kind: SpanKind.INTERNAL, startTime: startedAt },
    context.active(),
  );
}

/**
 * The trace context a tick gives the occurrences it dispatches: its span's `traceparent` (no
 * `tracestate`, so an occurrence's message grows by a fixed 70 bytes), or none without a valid
 * span.
 */
export function tickTrace(span: Span): TraceContext | undefined {
  const sc = span.spanContext();
  return isSpanContextValid(sc)
    ? { traceparent: formatTraceparent(sc.traceId, sc.spanId, sc.traceFlags) }
    : undefined;
}

/** What a tick did, on its span. */
export function tickSpanDone(
  span: Span,
  result: { dispatched: number; recovered: number; due: number; held: number; fenced: boolean },
  occurrences: readonly string[],
): void {
  if (!span.isRecording()) return;
  span.setAttributes({
    "messaging.system": SYSTEM,
    "messaging.batch.message_count": result.dispatched,
    "tickwork.tick.due": result.due,
    "tickwork.tick.recovered": result.recovered,
    "tickwork.tick.held": result.held,
    "tickwork.tick.fenced": result.fenced,
    "tickwork.tick.occurrences": occurrences.slice(0, MAX_LISTED),
  });
}

/**
 * Start the span of one queue request (`PRODUCER`, `send`) for `messages`, a child of the active
 * context, linked to each message's job's trace context (its creation context).
 */
export function startPublishSpan(messages: readonly OutboxMessage[]): Span {
  const span = tracer.startSpan("publish", PRODUCER, context.active());
  if (!span.isRecording()) return span;
  const first = messages[0];
  const attributes: Attributes = {
    "messaging.system": SYSTEM,
    "messaging.operation.type": "send",
    "messaging.operation.name": "publish",
    "messaging.batch.message_count": messages.length,
  };
  if (messages.length === 1 && first) {
    attributes["messaging.message.id"] = first.id;
    attributes["messaging.destination.name"] = first.job.handler;
  }
  span.setAttributes(attributes);
  const links: Link[] = [];
  for (const m of messages) {
    if (links.length >= MAX_LINKS) break;
    if (m.job.trace)
      links.push({
        context: spanContextOf(m.job.trace),
        attributes: { "messaging.message.id": m.id },
      });
  }
  if (links.length > 0) span.addLinks(links);
  return span;
}

/** What the queue said to one publish request. */
export function publishSpanDone(span: Span, accepted: number): void {
  if (span.isRecording()) span.setAttribute("tickwork.publish.accepted", accepted);
}

/**
 * Start a job's run span (`CONSUMER`, `process`), around its handler: a child of the trace
 * context its delivery carries — or, for a schedule's occurrence, of the active context with a
 * link to the tick that dispatched it.
 */
export function startRunSpan(
  job: JobSpec,
  attempt: number,
  carried: TraceContext | undefined,
): Span {
  const active = context.active();
  let span: Span;
  if (carried === undefined) span = tracer.startSpan("run", CONSUMER, active);
  else if (job.scheduleId === undefined) {
    span = tracer.startSpan("run", CONSUMER, remoteContext(carried, active));
  } else {
    span = tracer.startSpan("run", CONSUMER, active);
    if (span.isRecording()) {
      span.addLink({
        context: spanContextOf(carried),
        attributes: { "tickwork.link": "tick" },
      });
    }
  }
  if (!span.isRecording()) return span;
  span.updateName(`run ${job.handler}`);
  const attributes = messaging("process", "run", job);
  attributes["tickwork.tenant"] = job.tenant;
  attributes["tickwork.job.attempt"] = attempt;
  if (job.scheduleId !== undefined) attributes["tickwork.schedule.id"] = job.scheduleId;
  span.setAttributes(attributes);
  return span;
}

/** A run span's outcome: the handler's error, if it failed. */
export function runSpanDone(
  span: Span,
  outcome: { ok: true } | { ok: false; final: boolean; error: { name: string; message: string } },
): void {
  if (!span.isRecording()) return;
  if (outcome.ok) {
    span.setAttribute("tickwork.job.outcome", "succeeded");
    return;
  }
  span.setAttribute("tickwork.job.outcome", outcome.final ? "failed" : "retry");
  span.setAttribute("error.type", outcome.error.name);
  span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error.message.slice(0, 500) });
}

/** The messaging attributes of one job's span. */
function messaging(type: string, name: string, job: JobSpec): Attributes {
  return {
    "messaging.system": SYSTEM,
    "messaging.operation.type": type,
    "messaging.operation.name": name,
    "messaging.message.id": job.id,
    "messaging.destination.name": job.handler,
  };
}

/** The span context of a stored trace context (a remote parent). */
function spanContextOf(stored: TraceContext): SpanContext {
  const { traceId, spanId, flags } = traceparentParts(stored.traceparent);
  return {
    traceId,
    spanId,
    traceFlags: flags,
    isRemote: true,
    ...(stored.tracestate !== undefined ? { traceState: lazyTraceState(stored.tracestate) } : {}),
  };
}

/**
 * A `tracestate` checked by `validTracestate`, parsed only when an SDK reads it: without an SDK the
 * API's no-op tracer never does, and a submit or run with a `tracestate` skips the parse.
 */
function lazyTraceState(value: string): TraceState {
  let parsed: TraceState | undefined;
  const state = () => {
    parsed ??= createTraceState(value);
    return parsed;
  };
  return {
    get: (key) => state().get(key),
    set: (key, v) => state().set(key, v),
    unset: (key) => state().unset(key),
    serialize: () => state().serialize(),
  };
}

/** `base` with the stored trace context as its (remote) span. */
function remoteContext(stored: TraceContext, base: Context = ROOT_CONTEXT): Context {
  return trace.setSpanContext(base, spanContextOf(stored));
}

function traceContextOfSpan(sc: SpanContext): TraceContext {
  const traceparent = formatTraceparent(sc.traceId, sc.spanId, sc.traceFlags);
  const state = sc.traceState?.serialize();
  return traceContextOf(traceparent, state) ?? { traceparent };
}
