/**
 * The engine on Cloudflare Queues where the outbox meets the queue's limits (issue #18's review,
 * docs/adr/0018-cloudflare-queues.md), on the memory store with a fake clock:
 * - a message due beyond 12 h is deferred once, to 12 h before it is due (`Store.deferOutbox`):
 *   the ticks after that are idle, whichever path put it in the outbox (a schedule's jitter, a job
 *   released by `after`);
 * - `createTickwork` on Queues re-publishes an unacknowledged message only after 5 min (Queues has
 *   no deduplication: 30 s would duplicate every job behind a lagging consumer);
 * - a job behind a concurrency limit waits with growing delays and does not spend the queue's
 *   100 retries while the limit's holder runs;
 * - a message too large for the queue dead-letters its job (an occurrence included) instead of
 *   failing at every recovery, and `createTickwork` refuses a `maxInputBytes` that cannot fit;
 * - with `createTickwork`'s `maxJobBytes`, a job or schedule whose input is within
 *   `maxInputBytes` but whose tags and placement take it past a message is refused at the write
 *   (413, nothing stored), and one just within it makes a message the queue takes.
 *
 * The queue is a producer binding recording what was sent, and the consumer `consumeQueueBatch`:
 * the platform boundary, the only double.
 */
import { describe, expect, it } from "vitest";
import { createTickwork } from "../../src/adapter/cloudflare/tickwork.ts";
import { TickworkConfigError } from "../../src/core/errors.ts";
import {
  createEngine,
  type EngineOptions,
  type Handlers,
  silentLogger,
  type TickResult,
} from "../../src/engine/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import {
  CloudflareQueuesTransport,
  consumeQueueBatch,
  MAX_DELAY_SECONDS,
  MAX_MESSAGE_BYTES,
  MESSAGE_OVERHEAD_BYTES,
  QUEUES_MAX_JOB_BYTES,
  QUEUES_RECOVER_GRACE_MS,
  type QueueSendRequest,
} from "../../src/transport/cloudflare-queues/index.ts";

const START = 1_800_000_000_000;
const HOUR = 3_600_000;

function setup(handlers: Handlers, options: EngineOptions = {}) {
  const clock = { now: START };
  const sent: { body: string; delaySeconds: number; at: number }[] = [];
  const queue = {
    send: async () => {},
    sendBatch: async (messages: Iterable<QueueSendRequest>) => {
      for (const m of messages) {
        sent.push({ body: String(m.body), delaySeconds: m.delaySeconds ?? 0, at: clock.now });
      }
    },
  };
  const engine = createEngine({
    ...options,
    store: new MemoryStore({ clock: () => clock.now }),
    transport: new CloudflareQueuesTransport({ queue, now: () => clock.now }),
    handlers,
    logger: silentLogger,
  });
  return { clock, sent, engine };
}

/** Whether a tick found nothing to do (the only ticker here is always the leader). */
const idle = (tick: TickResult): boolean => "idle" in tick && tick.idle;

/** A handler that returns its input. */
const work = { run: (input: unknown) => input };

describe("Cloudflare Queues: a message due beyond 12 h is deferred once", () => {
  it("jitter over 12 h: the ticks after the first deferral are idle, and each job is sent 12 h before it is due", async () => {
    // Nothing consumes here: a reap (after reapAfterMs, 1 h by default) would re-send a watch.
    const { clock, sent, engine } = setup({ work }, { reapAfterMs: 48 * HOUR });
    for (let k = 0; k < 20; k++) {
      await engine.broker.createSchedule({
        id: `s${k}`,
        handler: "work",
        schedule: "1d",
        jitter: "23h",
        startAt: START + 1_000,
        maxRuns: 1,
      });
    }
    // A day of once-a-minute ticks: every occurrence is planned by the first and sent once.
    let busy = 0;
    while (clock.now < START + 24 * HOUR) {
      clock.now += 60_000;
      if (!idle(await engine.ticker.tick())) busy++;
    }
    const specs = sent.map((m) => ({
      ...m,
      spec: JSON.parse(m.body) as { id: string; runAt: number },
    }));
    expect(new Set(specs.map((m) => m.spec.id)).size).toBe(20);
    expect(sent).toHaveLength(20);
    const deferred = specs.filter((m) => m.at > START + 60_000);
    expect(deferred.length).toBeGreaterThan(3); // the jitter put them beyond the queue's 12 h
    for (const m of specs) {
      expect(m.delaySeconds).toBeLessThanOrEqual(MAX_DELAY_SECONDS);
      expect(m.at + m.delaySeconds * 1000).toBeGreaterThanOrEqual(m.spec.runAt); // never early
    }
    for (const m of deferred) {
      // Sent by the first tick after its 12 h mark (plus the margin): on time, not late.
      expect(m.at).toBeLessThanOrEqual(m.spec.runAt - MAX_DELAY_SECONDS * 1000 + 120_000);
    }
    // The first tick, then one per deferred occurrence when its time came: otherwise idle.
    // Before the fix every tick re-published the deferred ones (1440 busy ticks).
    expect(busy).toBeLessThanOrEqual(1 + deferred.length);
  });

  it("a job released by `after`, due in 3 days: one deferral, then idle ticks", async () => {
    const { clock, sent, engine } = setup({ work });
    const parent = await engine.broker.submit({ handler: "work", input: 1 });
    const child = await engine.broker.submit({
      handler: "work",
      input: 2,
      after: [parent.job.id],
      runAt: START + 72 * HOUR,
    });
    expect(await engine.runner.runPulled(JSON.stringify(parent.job))).toMatchObject({
      kind: "done",
    });
    expect((await engine.store.getJob(child.job.id))?.status).toBe("queued");
    let busy = 0;
    for (let i = 0; i < 60; i++) {
      clock.now += 60_000;
      if (!idle(await engine.ticker.tick())) busy++;
    }
    expect(busy).toBe(1); // the tick that recovered the released child and deferred it
    expect(sent).toHaveLength(1); // the parent only

    clock.now = START + 60 * HOUR + 60_000;
    expect(await engine.ticker.tick()).toMatchObject({ recovered: 1 });
    expect(sent.at(-1)).toMatchObject({ delaySeconds: MAX_DELAY_SECONDS - 60 });
    expect(JSON.parse(sent.at(-1)!.body)).toMatchObject({ id: child.job.id });
  });
});

describe("Cloudflare Queues: no deduplication, so a longer recover grace", () => {
  const redis = {
    eval: () => Promise.reject(new Error("unused")),
    evalsha: () => Promise.reject(),
  };
  const queue = { send: async () => {}, sendBatch: async () => {} };

  it("createTickwork with a queue defaults tick.recoverGraceMs to 5 min, unless configured", () => {
    const on = (engine?: EngineOptions) =>
      createTickwork({ handlers: {}, redis, queue, apiKeys: ["k"], ...(engine ? { engine } : {}) })
        .engine.options;
    expect(on().tick.recoverGraceMs).toBe(QUEUES_RECOVER_GRACE_MS);
    expect(on({ tick: { recoverGraceMs: 45_000 } }).tick.recoverGraceMs).toBe(45_000);
    expect(on({ reapAfterMs: 120_000 }).tick.recoverGraceMs).toBe(120_000);
    const qstash = createTickwork({
      handlers: {},
      redis,
      qstash: { token: "t", currentSigningKey: "c", nextSigningKey: "n" },
      publicUrl: "https://x.test",
      apiKeys: ["k"],
    });
    expect(qstash.engine.options.tick.recoverGraceMs).toBe(30_000);
  });

  it("queue() while QStash is the transport runs the batch and warns once per isolate", async () => {
    const warnings: string[] = [];
    const logger = { ...silentLogger, warn: (msg: string) => warnings.push(msg) };
    const tickwork = createTickwork({
      handlers: {},
      redis,
      qstash: { token: "t", currentSigningKey: "c", nextSigningKey: "n" },
      publicUrl: "https://x.test",
      apiKeys: ["k"],
      engine: { logger },
    });
    const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };
    const answers: string[] = [];
    const batch = {
      queue: "tickwork",
      messages: [
        {
          id: "m",
          body: "not a job",
          attempts: 1,
          ack: () => answers.push("ack"),
          retry: () => {},
        },
      ],
    };
    await tickwork.queue(batch, {}, ctx);
    await tickwork.queue(batch, {}, ctx);
    expect(answers).toEqual(["ack", "ack"]);
    expect(warnings.filter((w) => w.includes("while QStash is the transport"))).toHaveLength(1);
  });

  it("with it, a consumer lagging 31 s (or 4 min) gets no second message of a submitted job", async () => {
    const grace = createTickwork({ handlers: {}, redis, queue, apiKeys: ["k"] }).engine.options.tick
      .recoverGraceMs;
    const { clock, sent, engine } = setup({ work }, { tick: { recoverGraceMs: grace } });
    for (let i = 0; i < 50; i++) await engine.broker.submit({ handler: "work", input: i });
    expect(sent).toHaveLength(50);
    clock.now += 31_000;
    await engine.ticker.tick();
    clock.now += 209_000;
    await engine.ticker.tick();
    expect(sent).toHaveLength(50);
  });
});

describe("Cloudflare Queues: a busy job does not spend the queue's retries", () => {
  it("behind a concurrency limit, waits with growing delays: fewer than 100 deliveries while the holder runs", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { clock, sent, engine } = setup({
      slow: {
        concurrency: 1,
        timeout: "15m",
        run: async () => {
          await gate;
          return 1;
        },
      },
    });
    await engine.broker.submit({ handler: "slow", input: 1 });
    const b = await engine.broker.submit({ handler: "slow", input: 2 });
    const holder = engine.runner.runPulled(sent[0]!.body);
    const leaseEnd = START + 15 * 60_000;
    const delays: number[] = [];
    let deliveries = 0;
    while (clock.now < leaseEnd && deliveries < 100) {
      deliveries++;
      const answers: number[] = [];
      await consumeQueueBatch(
        {
          queue: "tickwork",
          messages: [
            {
              id: "b",
              body: sent[1]!.body,
              attempts: deliveries,
              ack: () => answers.push(-1),
              retry: (o) => answers.push(o?.delaySeconds ?? 0),
            },
          ],
        },
        (body) => engine.runner.runPulled(body),
      );
      expect(answers).toHaveLength(1);
      expect(answers[0]).toBeGreaterThan(0); // retried, not acked: still queued
      delays.push(answers[0]!);
      clock.now += answers[0]! * 1000;
    }
    // Before the fix: 1–2 s each, 100 deliveries spent within ~3 min of a 15 min lease.
    expect(deliveries).toBeLessThan(20);
    expect(delays.at(-1)!).toBeGreaterThan(delays[0]! * 8);
    for (let i = 1; i < delays.length; i++) {
      expect(delays[i]!).toBeGreaterThanOrEqual(delays[i - 1]!);
    }
    expect((await engine.store.getJob(b.job.id))?.status).toBe("queued");
    release();
    await holder;
  });
});

describe("Cloudflare Queues: a message the queue can never take", () => {
  it("dead-letters a submitted job over 128 KB as a message, and a schedule's occurrence", async () => {
    const { clock, sent, engine } = setup({ work }, { maxInputBytes: 200_000 });
    const input = "x".repeat(130_000);
    const { job } = await engine.broker.submit({ handler: "work", input });
    expect(sent).toHaveLength(0);
    expect(await engine.store.getJob(job.id)).toMatchObject({
      status: "dead",
      error: { name: "MessageTooLargeError" },
    });

    await engine.broker.createSchedule({
      id: "big",
      handler: "work",
      schedule: "1h",
      input,
      startAt: START + 1_000,
      maxRuns: 1,
    });
    clock.now += 60_000;
    expect(await engine.ticker.tick()).toMatchObject({ dispatched: 0 });
    const dead = (await engine.broker.listDead({ limit: 10 })).items;
    expect(dead.map((j) => j.id).sort()).toEqual([`big@${START + 1_000}`, job.id].sort());
    // Nothing left to re-publish: the ticks after are idle.
    clock.now += 60_000;
    expect(idle(await engine.ticker.tick())).toBe(true);
    expect(sent).toHaveLength(0);
  });

  it("createTickwork refuses a maxInputBytes that cannot fit a queue message", () => {
    const redis = {
      eval: () => Promise.reject(new Error("unused")),
      evalsha: () => Promise.reject(),
    };
    const queue = { send: async () => {}, sendBatch: async () => {} };
    expect(() =>
      createTickwork({
        handlers: {},
        redis,
        queue,
        apiKeys: ["k"],
        engine: { maxInputBytes: 200_000 },
      }),
    ).toThrow(TickworkConfigError);
    expect(
      createTickwork({
        handlers: {},
        redis,
        queue,
        apiKeys: ["k"],
        engine: { maxInputBytes: 127_000 },
      }).engine.options.maxInputBytes,
    ).toBe(127_000);
  });
});

describe("Cloudflare Queues: a job whose placement takes it past a message", () => {
  const utf8 = new TextEncoder();
  const bytes = (text: string) => utf8.encode(text).byteLength;
  // 32 capabilities of 200 characters of three UTF-8 bytes each, name and value: about 38 KB.
  const placement = {
    capabilities: Object.fromEntries(
      Array.from({ length: 32 }, (_, i) => [`${i}`.padStart(200, "€"), "€".repeat(200)]),
    ),
  };
  const input = "x".repeat(99_000);

  it("createTickwork on a queue sets maxJobBytes to what a message holds", () => {
    const redis = {
      eval: () => Promise.reject(new Error("unused")),
      evalsha: () => Promise.reject(),
    };
    const queue = { send: async () => {}, sendBatch: async () => {} };
    const { options } = createTickwork({ handlers: {}, redis, queue, apiKeys: ["k"] }).engine;
    expect(options.maxJobBytes).toBe(QUEUES_MAX_JOB_BYTES);
    expect(QUEUES_MAX_JOB_BYTES).toBe(MAX_MESSAGE_BYTES - MESSAGE_OVERHEAD_BYTES);
  });

  it("a submit, a batch item, a schedule and a patch over it get 413 and store nothing", async () => {
    const { sent, engine } = setup({ work }, { maxJobBytes: QUEUES_MAX_JOB_BYTES });
    const tooLarge = { status: 413, code: "input_too_large" };
    await expect(engine.broker.submit({ handler: "work", input, placement })).rejects.toMatchObject(
      tooLarge,
    );
    const batch = await engine.broker.submitMany([
      { handler: "work", input, placement },
      { handler: "work", input: 1 },
    ]);
    expect(batch.items[0]).toMatchObject({ outcome: "failed", error: tooLarge });
    expect(batch.items[1]).toMatchObject({ outcome: "accepted" });
    await expect(
      engine.broker.createSchedule({ id: "s", handler: "work", schedule: "1h", input, placement }),
    ).rejects.toMatchObject(tooLarge);
    expect(await engine.broker.getSchedule("s").catch(() => undefined)).toBeUndefined();

    await engine.broker.createSchedule({ id: "p", handler: "work", schedule: "1h", input });
    await expect(engine.broker.updateSchedule("p", { placement })).rejects.toMatchObject(tooLarge);
    expect((await engine.broker.getSchedule("p")).placement).toBeUndefined();

    await engine.broker.settled();
    const listed = (await engine.broker.listJobs({ limit: 10 })).items;
    expect(listed).toHaveLength(1);
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]!.body)).toMatchObject({ input: 1 });
  });

  it("a flow with one child over it gets 413 naming that child, and stores none of the flow", async () => {
    const { sent, engine } = setup({ work }, { maxJobBytes: QUEUES_MAX_JOB_BYTES });
    const small = { handler: "work" as const, input: 1 };
    const refused = await engine.broker
      .submitFlow({
        children: [small, small, { handler: "work", input, placement }],
        parent: small,
      })
      .catch((error) => error);
    expect(refused).toMatchObject({
      status: 413,
      code: "input_too_large",
      errors: [{ path: "children.2" }],
    });
    const parentTooLarge = await engine.broker
      .submitFlow({ children: [small], parent: { handler: "work", input, placement } })
      .catch((error) => error);
    expect(parentTooLarge).toMatchObject({ status: 413, errors: [{ path: "parent" }] });
    await engine.broker.settled();
    expect((await engine.broker.listJobs({ limit: 10 })).items).toEqual([]);
    expect(sent).toEqual([]);
  });

  it("a job and an occurrence just within it make messages the queue takes", async () => {
    const { clock, sent, engine } = setup({ work }, { maxJobBytes: QUEUES_MAX_JOB_BYTES });
    // The largest input accepted beside `placement`, by bisection.
    const largest = async (write: (padding: string) => Promise<unknown>) => {
      let low = 1;
      let high = 128_000;
      while (high - low > 1) {
        const mid = Math.floor((low + high) / 2);
        if (
          await write("x".repeat(mid)).then(
            () => true,
            () => false,
          )
        )
          low = mid;
        else high = mid;
      }
      return low;
    };
    const job = await largest((padding) =>
      engine.broker.submit({ handler: "work", input: padding, placement }),
    );
    await engine.broker.settled();
    const biggest = sent.filter((m) => JSON.parse(m.body).input.length === job);
    expect(biggest).toHaveLength(1);
    expect(bytes(biggest[0]!.body) + MESSAGE_OVERHEAD_BYTES).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
    // Not refused far below what fits: within the 64 bytes kept for createdAt and runAt.
    expect(bytes(biggest[0]!.body) + MESSAGE_OVERHEAD_BYTES).toBeGreaterThan(
      MAX_MESSAGE_BYTES - 64,
    );

    let n = 0;
    const schedule = await largest((padding) =>
      engine.broker.createSchedule({
        id: `s${n++}`,
        handler: "work",
        schedule: "1h",
        input: padding,
        placement,
        startAt: START + 1_000,
        maxRuns: 1,
      }),
    );
    clock.now += 60_000;
    const before = sent.length;
    await engine.ticker.tick();
    const occurrence = sent
      .slice(before)
      .filter((m) => JSON.parse(m.body).input.length === schedule);
    expect(occurrence).toHaveLength(1);
    expect(bytes(occurrence[0]!.body) + MESSAGE_OVERHEAD_BYTES).toBeLessThanOrEqual(
      MAX_MESSAGE_BYTES,
    );
    expect(await engine.broker.listDead({ limit: 10 })).toMatchObject({ items: [] });
  });
});
