/**
 * The publish coalescer (`src/engine/publish.ts`) and the broker's `backgroundPublish`: concurrent
 * submits share queue requests; in the background a submit is answered before its publish, the
 * publish still happens (or the message stays in the outbox), failures are logged and never
 * become unhandled rejections, and `settled()` waits for everything handed over.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { OutboxMessage } from "../../src/core/model.ts";
import { createEngine, type Logger, silentLogger } from "../../src/engine/index.ts";
import { PublishCoalescer } from "../../src/engine/publish.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { PublishOutcome, Transport } from "../../src/transport/port.ts";
import { until } from "../http/harness.ts";

/** A transport whose requests stay open until the test lets them go. */
class ManualTransport implements Transport {
  readonly requests: { ids: string[]; release: () => void; fail: (e: Error) => void }[] = [];

  publish(messages: OutboxMessage[]): Promise<PublishOutcome[]> {
    return new Promise((resolve, reject) => {
      this.requests.push({
        ids: messages.map((m) => m.id),
        release: () =>
          resolve(
            messages.map((m) => ({ id: m.id, ok: true, messageId: m.id, deduplicated: false })),
          ),
        fail: reject,
      });
    });
  }

  async verify(): Promise<boolean> {
    return true;
  }

  releaseAll(): void {
    for (const r of this.requests.splice(0)) r.release();
  }
}

function message(id: string): OutboxMessage {
  return {
    id,
    dedupId: id,
    job: {
      id,
      tenant: "default",
      handler: "h",
      input: null,
      priority: 5,
      timeoutMs: 1_000,
      retries: 0,
      tags: [],
      createdAt: 0,
      runAt: 0,
    },
    notBefore: 0,
    recoverAt: 0,
  } as OutboxMessage;
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  const logger = {
    ...silentLogger,
    warnings,
    warn: (msg: string) => {
      warnings.push(msg);
    },
    child: () => logger,
  };
  return logger;
}

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
process.on("unhandledRejection", onUnhandled);
afterEach(() => {
  expect(unhandled).toEqual([]);
});

describe("PublishCoalescer", () => {
  it("sends what is handed over in one turn as one request, in batches of `batch`", async () => {
    const transport = new ManualTransport();
    const coalescer = new PublishCoalescer(transport, 3, silentLogger);
    const accepted = ["a", "b"].map((id) => coalescer.publish(message(id)));
    coalescer.send(message("c")); // the third fills the batch: it goes at once
    expect(transport.requests.map((r) => r.ids)).toEqual([["a", "b", "c"]]);
    transport.releaseAll();
    expect(await Promise.all(accepted)).toEqual([true, true]);
    coalescer.send(message("d"));
    expect(transport.requests).toHaveLength(0);
    await turn();
    expect(transport.requests.map((r) => r.ids)).toEqual([["d"]]);
    const settled = coalescer.settled();
    transport.releaseAll();
    await settled;
  });

  it("settled() waits for every message handed over, including those not yet flushed", async () => {
    const transport = new ManualTransport();
    const coalescer = new PublishCoalescer(transport, 10, silentLogger);
    coalescer.send(message("a"));
    let done = false;
    const settled = coalescer.settled().then(() => {
      done = true;
    });
    await turn();
    expect(transport.requests.map((r) => r.ids)).toEqual([["a"]]);
    expect(done).toBe(false);
    transport.releaseAll();
    await settled;
    expect(done).toBe(true);
  });

  it("with hold, waits for the partial request under way, but sends a full batch at once", async () => {
    const transport = new ManualTransport();
    const coalescer = new PublishCoalescer(transport, 3, silentLogger, true);
    coalescer.send(message("a"));
    await turn();
    expect(transport.requests.map((r) => r.ids)).toEqual([["a"]]);
    coalescer.send(message("b"));
    await turn();
    expect(transport.requests).toHaveLength(1); // held behind "a"
    coalescer.send(message("c"));
    coalescer.send(message("d")); // b, c, d: a full batch
    expect(transport.requests.map((r) => r.ids)).toEqual([["a"], ["b", "c", "d"]]);
    coalescer.send(message("e"));
    await turn();
    expect(transport.requests).toHaveLength(2); // held: "a" still under way
    transport.requests[0]!.release();
    await turn();
    expect(transport.requests.map((r) => r.ids)).toEqual([["a"], ["b", "c", "d"], ["e"]]);
    const settled = coalescer.settled();
    for (const r of transport.requests) r.release();
    await settled;
  });

  it("with a linger, messages of separate turns wait for one request; settled() and a full batch do not wait", async () => {
    const transport = new ManualTransport();
    // A linger no test outlives: what goes out below is flushed by settled() or a full batch.
    const coalescer = new PublishCoalescer(transport, 10, silentLogger, true, undefined, 600_000);
    coalescer.send(message("a"));
    await turn();
    coalescer.send(message("b"));
    await turn();
    coalescer.send(message("c"));
    await turn();
    expect(transport.requests).toHaveLength(0); // without a linger, "a" went out after one turn
    const settled = coalescer.settled();
    expect(transport.requests.map((r) => r.ids)).toEqual([["a", "b", "c"]]);
    transport.releaseAll();
    await settled;
    for (const id of "defghijklm") coalescer.send(message(id));
    expect(transport.requests.map((r) => r.ids.length)).toEqual([10]);
    transport.releaseAll();
    await coalescer.settled();
  });

  it("with a linger, the message goes out once it has passed", async () => {
    const transport = new ManualTransport();
    const coalescer = new PublishCoalescer(transport, 10, silentLogger, true, undefined, 20);
    const accepted = coalescer.publish(message("a"));
    await until(() => transport.requests.length > 0);
    expect(transport.requests.map((r) => r.ids)).toEqual([["a"]]);
    transport.releaseAll();
    expect(await accepted).toBe(true);
  });

  it("logs a failed request, answers false, and never rejects", async () => {
    const transport = new ManualTransport();
    const logger = recordingLogger();
    const coalescer = new PublishCoalescer(transport, 10, logger);
    const accepted = coalescer.publish(message("a"));
    coalescer.send(message("b"));
    await turn();
    transport.requests[0]!.fail(new Error("queue down"));
    expect(await accepted).toBe(false);
    await coalescer.settled();
    expect(logger.warnings).toEqual(["publish batch failed"]);
  });

  it("a logger that throws does not turn a background publish into an unhandled rejection", async () => {
    const transport = new ManualTransport();
    const throwing: Logger = {
      ...silentLogger,
      warn: () => {
        throw new Error("logger broke");
      },
      child: () => throwing,
    };
    const coalescer = new PublishCoalescer(transport, 10, throwing);
    coalescer.send(message("a"));
    await turn();
    transport.requests[0]!.fail(new Error("queue down"));
    await coalescer.settled();
    await turn();
  });
});

describe("broker with backgroundPublish", () => {
  it("answers a submit before its publish, and settled() waits for the publish", async () => {
    const transport = new ManualTransport();
    const store = new MemoryStore();
    const engine = createEngine({
      store,
      transport,
      handlers: { echo: { run: (input) => input } },
      logger: silentLogger,
      backgroundPublish: true,
    });
    const submitted = await Promise.all([
      engine.broker.submit({ handler: "echo", input: 1 }),
      engine.broker.submit({ handler: "echo", input: 2 }),
    ]);
    expect(submitted.map((s) => s.job.status)).toEqual(["queued", "queued"]);
    // Once the linger has passed: both publishes went out together, and neither submit waited.
    await until(() => transport.requests.length > 0);
    expect(transport.requests.map((r) => r.ids)).toEqual([submitted.map((s) => s.job.id)]);
    let done = false;
    const settled = engine.broker.settled().then(() => {
      done = true;
    });
    await turn();
    expect(done).toBe(false);
    transport.releaseAll();
    await settled;
    expect(done).toBe(true);
  });

  it("without it, a submit waits for its publish (the default)", async () => {
    const transport = new ManualTransport();
    const engine = createEngine({
      store: new MemoryStore(),
      transport,
      handlers: { echo: { run: (input) => input } },
      logger: silentLogger,
    });
    let answered = false;
    const submit = engine.broker.submit({ handler: "echo" }).then(() => {
      answered = true;
    });
    await turn();
    await turn();
    expect(transport.requests).toHaveLength(1);
    expect(answered).toBe(false);
    transport.releaseAll();
    await submit;
    expect(answered).toBe(true);
  });

  it("a failed background publish is logged and leaves the job in the outbox", async () => {
    const transport = new ManualTransport();
    const logger = recordingLogger();
    const store = new MemoryStore();
    const engine = createEngine({
      store,
      transport,
      handlers: { echo: { run: (input) => input } },
      logger,
      backgroundPublish: true,
    });
    await engine.broker.submit({ handler: "echo" });
    await until(() => transport.requests.length > 0);
    transport.requests[0]!.fail(new Error("queue down"));
    await engine.broker.settled();
    expect(logger.warnings).toEqual(["publish batch failed"]);
    expect((await engine.stats()).outbox).toBe(1);
  });
});
