/**
 * A tick never sends a commit request much larger than `tick.maxCommitBytes` of messages, however
 * large the schedules' inputs (Redis REST services cap a request's size): a chunk's commits are
 * split into groups, and a schedule with a large input plans fewer occurrences per chunk. Every
 * occurrence is still dispatched exactly once.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { occurrenceId } from "../../src/core/model.ts";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { byBytes } from "../../src/engine/ticker.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { ScheduleCommit, Store } from "../../src/store/port.ts";
import { scheduleRecord } from "../contract/fixtures.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { prng } from "../support/prng.ts";
import { recordingTransport } from "../support/recording-transport.ts";

const MAX = 60_000;

describe("commit size", () => {
  it("splits commits by bytes and dispatches every occurrence of large-input schedules once", async () => {
    const memory = new MemoryStore();
    const sizes: number[] = [];
    const store = new Proxy(memory, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop === "commitTick") {
          return (token: number, commits: ScheduleCommit[]) => {
            const messages = commits.flatMap((c) => c.messages);
            if (messages.length > 0) {
              sizes.push(messages.reduce((n, m) => n + JSON.stringify(m).length, 0));
            }
            return target.commitTick(token, commits);
          };
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as Store;
    const queue = new ChaosQueue(prng(3));
    const engine = createEngine({
      store,
      transport: queue,
      handlers: { big: { run: () => null } },
      logger: silentLogger,
      degradation: false,
      tick: { maxCommitBytes: MAX, misfireGraceMs: 3_600_000 },
    });

    // Three schedules, 8 KB of input each, 30 occurrences each already due (misfire `all`).
    const now = await memory.now();
    const start = Math.floor((now - 30_000) / 1_000) * 1_000 + 1_000;
    const expected = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const s = scheduleRecord({
        id: `big${i}`,
        handler: "big",
        schedule: "1s",
        input: { blob: "x".repeat(8_000), i },
        misfire: "all",
        startAt: start,
        nextRunAt: start,
        maxRuns: 30,
      });
      expect((await memory.putSchedule(s)).kind).toBe("ok");
      for (let k = 0; k < 30; k++) expected.add(occurrenceId(s.id, start + k * 1_000));
    }

    for (let i = 0; i < 20 && queue.stats.published < expected.size; i++) {
      await engine.ticker.tick();
    }
    const published = queue.pending.map((p) => p.message.id);
    expect(new Set(published)).toEqual(expected);
    expect(published).toHaveLength(expected.size); // each once
    expect(sizes.length).toBeGreaterThan(3); // it had to split
    for (const size of sizes) expect(size).toBeLessThanOrEqual(MAX);
  });

  it("a sub-minute schedule with a large input keeps up with a once-a-minute tick", async () => {
    // The platform's cron ticks once a minute; a "1s" schedule's 65 s of occurrences do not fit
    // one commit of 100 KB inputs: the tick reads it again until its horizon is covered.
    const clock = { now: Date.parse("2025-01-01T00:00:00Z") };
    const queue = recordingTransport();
    const engine = createEngine({
      store: new MemoryStore({ clock: () => clock.now }),
      transport: queue,
      handlers: { echo: { run: (input: unknown) => input } },
      logger: silentLogger,
    });
    await engine.broker.createSchedule({
      id: "big",
      handler: "echo",
      schedule: "1s",
      input: { blob: "x".repeat(100_000) },
    });
    for (let minute = 1; minute <= 10; minute++) {
      clock.now = Date.parse("2025-01-01T00:00:00Z") + minute * 60_000;
      await engine.ticker.tick();
    }
    const upTo = Date.parse("2025-01-01T00:10:00Z");
    const fired = new Set(
      queue.published.map((m) => m.id).filter((id) => Number(id.split("@")[1]) <= upTo),
    );
    // 00:00:00 to 00:10:00, each second once.
    expect(fired.size).toBe(601);
    expect(queue.published.length).toBe(new Set(queue.published.map((m) => m.id)).size);
  });

  it("a schedule this runtime cannot plan is held, and the others still dispatch", async () => {
    const clock = { now: Date.parse("2025-01-01T00:00:00Z") };
    const store = new MemoryStore({ clock: () => clock.now });
    const queue = recordingTransport();
    const errors: unknown[] = [];
    const engine = createEngine({
      store,
      transport: queue,
      handlers: { echo: { run: (input: unknown) => input } },
      logger: {
        ...silentLogger,
        error: (message: string, fields?: unknown) => errors.push({ message, fields }),
      },
    });
    await engine.broker.createSchedule({ id: "good", handler: "echo", schedule: "* * * * *" });
    await engine.broker.createSchedule({ id: "bad", handler: "echo", schedule: "* * * * *" });
    // Stored by another runtime whose ICU knows a zone this one lacks.
    const bad = (await store.getSchedule("bad"))!;
    await store.putSchedule({ ...bad, tz: "Europe/Nowhere" }, bad.rev);
    clock.now += 60_000;
    await engine.ticker.tick();
    const ids = queue.published.map((m) => m.id);
    expect(ids.filter((id) => id.startsWith("good@")).length).toBeGreaterThan(0);
    expect(ids.filter((id) => id.startsWith("bad@"))).toEqual([]);
    expect(errors).toEqual([
      {
        message: "schedule could not be planned; held",
        fields: expect.objectContaining({ scheduleId: "bad" }),
      },
    ]);
  });

  it("byBytes keeps the order, and a group is within the bound or a single commit", () => {
    const commit = (id: string, n: number, bytes: number): ScheduleCommit => ({
      id,
      rev: 0,
      nextRunAt: null,
      runsAdded: n,
      messages: Array.from({ length: n }, (_, k) => ({
        id: `${id}@${k}`,
        dedupId: `${id}@${k}`,
        job: {
          id: `${id}@${k}`,
          tenant: "t",
          handler: "h",
          input: "x".repeat(bytes),
          priority: 5,
          timeoutMs: 1_000,
          retries: 0,
          tags: [],
          runAt: 0,
          createdAt: 0,
        },
        notBefore: 0,
        recoverAt: 0,
      })),
    });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 3_000 })), {
          maxLength: 20,
        }),
        fc.integer({ min: 1, max: 20_000 }),
        (shape, max) => {
          const commits = shape.map(([n, bytes], i) => commit(`s${i}`, n, bytes));
          const groups = byBytes(commits, max);
          expect(groups.flat()).toEqual(commits);
          for (const g of groups) {
            expect(g.length).toBeGreaterThan(0);
            // The estimate errs on the large side: a group of several fits in real bytes.
            const real = g
              .flatMap((c) => c.messages)
              .reduce((n, m) => n + JSON.stringify(m).length, 0);
            if (g.length > 1) expect(real).toBeLessThanOrEqual(max);
          }
        },
      ),
    );
  });
});
