/**
 * A store's or a queue's failure on a span (docs/adr/0019-opentelemetry-traces.md): the
 * exception a failed publish records is cut as a handler's error is (name 200, message 2,000,
 * stack 8,000 characters), whatever the failing service's message quoted, and keeps its code.
 */
import { SpanStatusCode } from "@opentelemetry/api";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { Transport } from "../../src/transport/port.ts";
import { registerSdk, type Sdk } from "../support/otel.ts";

let sdk: Sdk;
beforeAll(() => {
  sdk = registerSdk();
});
afterAll(() => sdk.shutdown());

/** A queue that fails every publish as a proxy in front of it might: a whole page quoted. */
function failingQueue(error: Error): Transport {
  return {
    publish: async () => {
      throw error;
    },
    verify: async () => false,
  };
}

it("a failed publish records the queue's exception cut to size, with its code", async () => {
  const page = `<html>${"x".repeat(200_000)}</html>`;
  const error = Object.assign(new Error(`queue answered 502: ${page}`), { code: "ECONNRESET" });
  error.name = `QueueError${"!".repeat(1_000)}`;
  error.stack = `${error.name}: ${error.message}\n${"    at somewhere\n".repeat(10_000)}`;
  const engine = createEngine({
    store: new MemoryStore(),
    transport: failingQueue(error),
    handlers: { echo: { run: (input) => input } },
    logger: silentLogger,
  });
  await engine.broker.submit({ handler: "echo", input: { n: 1 } });
  const [publish] = sdk.spans("publish");
  expect(publish).toBeDefined();
  expect(publish!.status.code).toBe(SpanStatusCode.ERROR);
  expect(publish!.status.message!.length).toBeLessThanOrEqual(500);
  expect(publish!.status.message).toMatch(/^QueueError!+: queue answered 502: <html>x+$/);
  const exception = publish!.events.find((e) => e.name === "exception");
  expect(exception).toBeDefined();
  const attributes = exception!.attributes!;
  expect(attributes["exception.type"]).toBe("ECONNRESET");
  expect(String(attributes["exception.message"])).toHaveLength(2_000);
  expect(String(attributes["exception.message"])).toMatch(/^queue answered 502: <html>x+$/);
  expect(String(attributes["exception.stacktrace"]).length).toBe(8_000);
  // The whole span, as an exporter would send it, stays small.
  expect(JSON.stringify(publish!.events).length).toBeLessThan(12_000);
});

it("an error whose conversion to text throws still marks the span failed", async () => {
  const hostile = {
    toString() {
      throw new Error("no text for you");
    },
  };
  const engine = createEngine({
    store: new MemoryStore(),
    transport: {
      publish: async () => {
        throw hostile;
      },
      verify: async () => false,
    },
    handlers: { echo: { run: (input) => input } },
    logger: silentLogger,
  });
  sdk.exporter.reset();
  await engine.broker.submit({ handler: "echo", input: { n: 2 } });
  const [publish] = sdk.spans("publish");
  expect(publish!.status).toEqual({ code: SpanStatusCode.ERROR, message: "unprintable error" });
});

it("an Error whose name, message or stack getter throws still marks the span failed", async () => {
  const error = new Error("x");
  // The stack first: V8 formats it from the name and message when it is replaced.
  for (const field of ["stack", "code", "message", "name"]) {
    Object.defineProperty(error, field, {
      get() {
        throw new Error(`no ${field} for you`);
      },
    });
  }
  const engine = createEngine({
    store: new MemoryStore(),
    transport: failingQueue(error),
    handlers: { echo: { run: (input) => input } },
    logger: silentLogger,
  });
  sdk.exporter.reset();
  // The submit itself may fail on such an error (its log line reads it too); the span is marked.
  await engine.broker.submit({ handler: "echo", input: { n: 3 } }).catch(() => {});
  const [publish] = sdk.spans("publish");
  expect(publish!.status).toEqual({ code: SpanStatusCode.ERROR, message: "Error" });
  expect(publish!.events.find((e) => e.name === "exception")).toBeDefined();
});
