/**
 * @module
 * An OpenTelemetry SDK for the trace tests, as an application would bring it: a
 * `BasicTracerProvider` whose spans go to an in-memory exporter, and an `AsyncLocalStorage`
 * context manager, registered globally for the test file (each file runs in its own worker).
 * Plus the questions the tests ask of the spans: which ones tickwork made, their parents, links.
 */
import { type Attributes, context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { TRACER_NAME } from "../../src/engine/tracing.ts";

export interface Sdk {
  exporter: InMemorySpanExporter;
  /** Finished spans of tickwork's tracer whose name starts with `name` (e.g. `"run"`). */
  spans(name?: string): ReadableSpan[];
  /** Every finished span (the test's own too). */
  all(): ReadableSpan[];
  shutdown(): Promise<void>;
}

/** Register the SDK globally; `shutdown` unregisters it. */
export function registerSdk(): Sdk {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const manager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(manager);
  trace.setGlobalTracerProvider(provider);
  return {
    exporter,
    spans: (name) =>
      exporter
        .getFinishedSpans()
        .filter(
          (s) =>
            s.instrumentationScope.name === TRACER_NAME &&
            (name === undefined || s.name === name || s.name.startsWith(`${name} `)),
        ),
    all: () => exporter.getFinishedSpans(),
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  };
}

/** The span that names job `id` (`messaging.message.id`) among `spans`; throws when none or more. */
export function spanOf(spans: ReadableSpan[], id: string): ReadableSpan {
  const found = spans.filter((s) => s.attributes["messaging.message.id"] === id);
  if (found.length !== 1) {
    throw new Error(`expected one span for job ${id}, found ${found.length}: ${names(spans)}`);
  }
  return found[0] as ReadableSpan;
}

/** The parent span id of `span` (undefined for a root). */
export function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/** A version-00 `traceparent` of random ids, sampled. */
export function randomTraceparent(): { traceparent: string; traceId: string; spanId: string } {
  const hex = (n: number) =>
    Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) =>
      b.toString(16).padStart(2, "0"),
    ).join("");
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceparent: `00-${traceId}-${spanId}-01`, traceId, spanId };
}

/** The attributes every tickwork span has. */
export const SYSTEM: Attributes = { "messaging.system": "tickwork" };

function names(spans: ReadableSpan[]): string {
  return spans.map((s) => `${s.name}(${String(s.attributes["messaging.message.id"])})`).join(", ");
}
