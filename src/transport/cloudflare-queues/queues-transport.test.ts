import { describe, expect, it } from "vitest";
import type { DeliveryOutcome } from "../../core/delivery.ts";
import type { OutboxMessage } from "../../core/model.ts";
import {
  answerFor,
  BUSY_FLOOR_CAP_MS,
  busyFloorWithin,
  CloudflareQueuesTransport,
  consumeQueueBatch,
  DEFER_MARGIN_MS,
  defaultBusyFloor,
  MAX_BATCH_BYTES,
  MAX_DELAY_SECONDS,
  MAX_MESSAGE_BYTES,
  MESSAGE_OVERHEAD_BYTES,
  type QueueMessage,
  type QueueSendRequest,
  QueuesPublishError,
} from "./index.ts";

const NOW = 1_800_000_000_000;

/** The producer binding as the runtime shapes it, recording each `sendBatch` and held to its limits. */
function producer(fail?: (call: number) => boolean) {
  const calls: QueueSendRequest[][] = [];
  return {
    calls,
    send: async () => undefined,
    async sendBatch(messages: Iterable<QueueSendRequest>) {
      const batch = [...messages];
      calls.push(batch);
      if (fail?.(calls.length)) throw new Error("Too Many Requests");
      const bytes = batch.reduce(
        (n, m) => n + new TextEncoder().encode(String(m.body)).byteLength + MESSAGE_OVERHEAD_BYTES,
        0,
      );
      if (batch.length > 100 || bytes > MAX_BATCH_BYTES) throw new Error("batch over the limits");
      for (const m of batch) {
        if ((m.delaySeconds ?? 0) > MAX_DELAY_SECONDS) throw new Error("delay over 12 h");
      }
    },
  };
}

function message(id: string, notBefore = NOW, input: unknown = { n: 1 }): OutboxMessage {
  return {
    id,
    dedupId: id,
    notBefore,
    recoverAt: notBefore + 30_000,
    job: {
      id,
      tenant: "default",
      handler: "echo",
      input,
      priority: 5,
      timeoutMs: 30_000,
      retries: 3,
      tags: [],
      runAt: notBefore,
      createdAt: NOW,
    },
  };
}

describe("CloudflareQueuesTransport.publish", () => {
  it("sends each job as its JSON text, due ones without a delay, later ones with whole seconds rounded up", async () => {
    const queue = producer();
    const transport = new CloudflareQueuesTransport({ queue, now: () => NOW });
    const outcomes = await transport.publish([
      message("a"),
      message("b", NOW + 1),
      message("c", NOW + 2_500),
      message("d", NOW + MAX_DELAY_SECONDS * 1000),
      message("e", NOW - 10_000),
    ]);
    expect(outcomes.map((o) => [o.id, o.ok])).toEqual([
      ["a", true],
      ["b", true],
      ["c", true],
      ["d", true],
      ["e", true],
    ]);
    expect(queue.calls).toHaveLength(1);
    const sent = queue.calls[0]!;
    expect(sent.map((m) => m.delaySeconds)).toEqual([
      undefined,
      1,
      3,
      MAX_DELAY_SECONDS,
      undefined,
    ]);
    expect(sent.every((m) => m.contentType === "text")).toBe(true);
    expect(JSON.parse(String(sent[2]!.body))).toEqual(message("c", NOW + 2_500).job);
  });

  it("keeps a message due beyond 12 h out of the queue: ok false, deferred, nothing sent", async () => {
    const queue = producer();
    const transport = new CloudflareQueuesTransport({ queue, now: () => NOW });
    const [far, near] = await transport.publish([
      message("far", NOW + MAX_DELAY_SECONDS * 1000 + 1),
      message("near", NOW + 5_000),
    ]);
    // retryAt: when the queue can take it (12 h before it is due, plus a margin for clock skew).
    expect(far).toMatchObject({
      id: "far",
      ok: false,
      deferred: true,
      retryAt: NOW + 1 + DEFER_MARGIN_MS,
    });
    expect((far as unknown as { error: QueuesPublishError }).error).toBeInstanceOf(
      QueuesPublishError,
    );
    expect((far as unknown as { error: QueuesPublishError }).error.reason).toBe("beyond-max-delay");
    expect(near).toMatchObject({ id: "near", ok: true });
    expect(queue.calls.flat().map((m) => JSON.parse(String(m.body)).id)).toEqual(["near"]);
  });

  it("refuses a message over 128 KB with a clear error, and sends the others", async () => {
    const queue = producer();
    const transport = new CloudflareQueuesTransport({ queue, now: () => NOW });
    const big = "é".repeat(MAX_MESSAGE_BYTES / 2); // two UTF-8 bytes each: counted as bytes
    const outcomes = await transport.publish([message("big", NOW, big), message("small")]);
    expect(outcomes[0]).toMatchObject({ id: "big", ok: false });
    expect(outcomes[0]).not.toHaveProperty("deferred");
    // Permanent: the publisher dead-letters the job rather than re-sending it forever.
    expect(outcomes[0]).toMatchObject({ permanent: true });
    const error = (outcomes[0] as unknown as { error: QueuesPublishError }).error;
    expect(error.reason).toBe("too-large");
    expect(error.message).toMatch(/at most 128000/);
    expect(outcomes[1]).toMatchObject({ id: "small", ok: true });
    expect(queue.calls.flat()).toHaveLength(1);
  });

  it("splits batches at 100 messages and at 256 KB", async () => {
    const queue = producer();
    const transport = new CloudflareQueuesTransport({ queue, now: () => NOW });
    const many = Array.from({ length: 250 }, (_, i) => message(`m${i}`));
    expect((await transport.publish(many)).every((o) => o.ok)).toBe(true);
    expect(queue.calls.map((c) => c.length)).toEqual([100, 100, 50]);

    queue.calls.length = 0;
    // ~100 KB each: two fit in 256 KB, a third does not.
    const heavy = Array.from({ length: 5 }, (_, i) => message(`h${i}`, NOW, "x".repeat(100_000)));
    expect((await transport.publish(heavy)).every((o) => o.ok)).toBe(true);
    expect(queue.calls.map((c) => c.length)).toEqual([2, 2, 1]);
    expect(queue.calls.flat().map((m) => JSON.parse(String(m.body)).id)).toEqual(
      heavy.map((m) => m.id),
    );
  });

  it("reports every message of a failed sendBatch ok false, never throwing, and the other batches ok", async () => {
    const queue = producer((call) => call === 2);
    const transport = new CloudflareQueuesTransport({ queue, now: () => NOW });
    const outcomes = await transport.publish(
      Array.from({ length: 150 }, (_, i) => message(`m${i}`)),
    );
    expect(outcomes.slice(0, 100).every((o) => o.ok)).toBe(true);
    for (const o of outcomes.slice(100)) {
      expect(o).toMatchObject({ ok: false });
      expect((o as unknown as { error: QueuesPublishError }).error.reason).toBe("request");
      expect(o).not.toHaveProperty("deferred");
    }
  });

  it("needs a producer binding, and verifies no pushed request", async () => {
    expect(() => new CloudflareQueuesTransport({ queue: undefined as never })).toThrow(TypeError);
    const transport = new CloudflareQueuesTransport({ queue: producer() });
    expect(await transport.verify()).toBe(false);
  });
});

describe("answerFor: the runner's outcome as a queue answer", () => {
  const error = { name: "Error", message: "x" };
  const cases: [DeliveryOutcome, number, ReturnType<typeof answerFor>][] = [
    [{ kind: "done", id: "j", status: "succeeded" }, 1_000, { kind: "ack" }],
    [{ kind: "give-up", id: "j", error }, 1_000, { kind: "ack" }],
    [{ kind: "bad-request", expected: "job" }, 1_000, { kind: "ack" }],
    [{ kind: "retry", id: "j", error }, 4_000, { kind: "retry", delaySeconds: 4 }],
    [
      { kind: "retry", id: "j", error, retryAfterMs: 1_500 },
      4_000,
      { kind: "retry", delaySeconds: 2 },
    ],
    [{ kind: "retry", id: "j", error, retryAfterMs: 13 * 3_600_000 }, 1_000, { kind: "ack" }],
    [
      { kind: "busy", reason: "limited", retryAfterMs: 10 },
      1_000,
      { kind: "retry", delaySeconds: 1 },
    ],
    [
      { kind: "busy", reason: "attempt-running", retryAfterMs: 1e12 },
      1_000,
      { kind: "retry", delaySeconds: MAX_DELAY_SECONDS },
    ],
  ];
  it.each(cases)("%j → %j", (outcome, backoff, answer) => {
    expect(answerFor(outcome, backoff)).toEqual(answer);
  });
  it("waits at least the busy floor on busy, which grows with the deliveries up to 30 min", () => {
    const busy: DeliveryOutcome = { kind: "busy", reason: "limited", retryAfterMs: 1_000 };
    expect(answerFor(busy, 1_000, defaultBusyFloor(3))).toEqual({ kind: "retry", delaySeconds: 8 });
    expect(defaultBusyFloor(0)).toBe(1_000);
    expect(defaultBusyFloor(99)).toBe(BUSY_FLOOR_CAP_MS);
    expect(defaultBusyFloor(Number.MAX_SAFE_INTEGER)).toBe(BUSY_FLOOR_CAP_MS);
    expect(busyFloorWithin(600_000)(20)).toBe(300_000);
    // A busy answer that asks for longer still gets it (at most 12 h).
    const long: DeliveryOutcome = { kind: "busy", reason: "limited", retryAfterMs: 1e12 };
    expect(answerFor(long, 1_000, defaultBusyFloor(99))).toEqual({
      kind: "retry",
      delaySeconds: MAX_DELAY_SECONDS,
    });
  });
  it("treats a retryAfterMs that is NaN or negative as none: the backoff", () => {
    const error = { name: "Error", message: "x" };
    for (const retryAfterMs of [Number.NaN, -5]) {
      expect(answerFor({ kind: "retry", id: "j", error, retryAfterMs }, 2_000)).toEqual({
        kind: "retry",
        delaySeconds: 2,
      });
    }
  });
});

describe("consumeQueueBatch", () => {
  function messages(n: number, attempts = 1) {
    const answers: Record<string, unknown> = {};
    const list: QueueMessage[] = Array.from({ length: n }, (_, i) => ({
      id: `q${i}`,
      body: JSON.stringify({ id: `j${i}` }),
      attempts,
      ack: () => {
        answers[`q${i}`] ??= "ack";
      },
      retry: (options) => {
        answers[`q${i}`] ??= { retry: options?.delaySeconds };
      },
    }));
    return { list, answers };
  }

  it("answers each message on its own; a run that throws is retried and the others are unaffected", async () => {
    const { list, answers } = messages(4, 3);
    const warnings: string[] = [];
    const result = await consumeQueueBatch(
      { queue: "tickwork", messages: list },
      async (body) => {
        const id = (JSON.parse(body) as { id: string }).id;
        if (id === "j0") return { kind: "done", id, status: "succeeded" };
        if (id === "j1") throw new Error("store unreachable");
        if (id === "j2") return { kind: "retry", id, error: { name: "E", message: "m" } };
        return { kind: "busy", reason: "limited", retryAfterMs: 2_500 };
      },
      { logger: { warn: (msg) => warnings.push(msg) }, concurrency: 2 },
    );
    expect(answers).toEqual({
      q0: "ack",
      q1: { retry: 4 }, // backoff(2): the message's third delivery
      q2: { retry: 4 },
      q3: { retry: 4 }, // busy: 2.5 s, raised to the busy floor after 2 deliveries (4 s)
    });
    expect(result).toEqual({ acked: 1, retried: 1, deferred: 1, failed: 1 });
    expect(warnings).toEqual(["queue message not run; it will be delivered again"]);
  });

  it("acks a body it cannot encode (a cycle, a BigInt) with a warning, running nothing", async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const answers: string[] = [];
    const warnings: string[] = [];
    let ran = 0;
    const result = await consumeQueueBatch(
      {
        queue: "tickwork",
        messages: [cyclic, { n: 1n }].map((body, i) => ({
          id: `q${i}`,
          body,
          attempts: 1,
          ack: () => answers.push("ack"),
          retry: () => answers.push("retry"),
        })),
      },
      async () => {
        ran++;
        return { kind: "bad-request", expected: "job" };
      },
      { logger: { warn: (msg) => warnings.push(msg) } },
    );
    expect(answers).toEqual(["ack", "ack"]);
    expect(ran).toBe(0);
    expect(result).toEqual({ acked: 2, retried: 0, deferred: 0, failed: 0 });
    expect(warnings).toEqual([
      "queue message body cannot be read as a job; acknowledged and dropped",
      "queue message body cannot be read as a job; acknowledged and dropped",
    ]);
  });

  it("falls back to the default backoff when a custom one throws or answers NaN; never throws", async () => {
    for (const backoff of [
      () => {
        throw new Error("boom");
      },
      () => Number.NaN,
    ]) {
      const { list, answers } = messages(2, 3);
      const warnings: string[] = [];
      const result = await consumeQueueBatch(
        { queue: "tickwork", messages: list },
        async (body) => {
          const id = (JSON.parse(body) as { id: string }).id;
          if (id === "j0") throw new Error("store unreachable");
          return { kind: "retry", id, error: { name: "E", message: "m" } };
        },
        { backoff, logger: { warn: (msg) => warnings.push(msg) } },
      );
      // defaultQueueBackoff(2) = 4 s, for the run that threw and for the failed attempt.
      expect(answers).toEqual({ q0: { retry: 4 }, q1: { retry: 4 } });
      expect(result).toEqual({ acked: 0, retried: 1, deferred: 0, failed: 1 });
      expect(warnings.some((w) => w.startsWith("consumer backoff"))).toBe(true);
    }
  });

  it("runs at most `concurrency` messages at once", async () => {
    const { list } = messages(9);
    let running = 0;
    let most = 0;
    await consumeQueueBatch(
      { queue: "tickwork", messages: list },
      async (body) => {
        running++;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        return { kind: "done", id: body, status: "succeeded" };
      },
      { concurrency: 3 },
    );
    expect(most).toBe(3);
  });

  it("passes a JSON-typed body on as its JSON text", async () => {
    const bodies: string[] = [];
    await consumeQueueBatch(
      {
        queue: "tickwork",
        messages: [{ id: "q", body: { id: "j" }, attempts: 1, ack() {}, retry() {} }],
      },
      async (body) => {
        bodies.push(body);
        return { kind: "done", id: "j", status: "succeeded" };
      },
    );
    expect(bodies).toEqual(['{"id":"j"}']);
  });
});
