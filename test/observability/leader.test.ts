/**
 * A leadership change between two instances on one real Redis (one key prefix, a connection
 * each): A ticks as leader and stalls in the middle (its queue hangs); B is refused while A's lease
 * runs, then A's lease expires (its TTL fast-forwarded in Redis, so no test waits on a clock) and
 * B's tick takes over. The change shows in `/metrics` (changes, flaps, holder), in
 * `/v1/events?type=leader.changed`, and in each instance's log, with the tick request's id.
 */
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { jsonLogger } from "../../src/engine/logger.ts";
import { TICK_LEASE } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { keys } from "../../src/store/redis/keys.ts";
import { LocalTransport } from "../../src/transport/local/index.ts";
import type { Transport } from "../../src/transport/port.ts";
import {
  call,
  type Harness,
  SIGNING_KEY,
  startHarness,
  testHandlers,
  until,
} from "../http/harness.ts";
import { makeRedisStore, REDIS_URL } from "../support/stores.ts";
import { parsePrometheus, sampleValue } from "./prometheus-parser.ts";

type Line = Record<string, unknown>;

describe("leadership changes between two instances on one Redis", () => {
  let cleanup: () => Promise<void>;
  let prefix: string;
  let redis: Redis;
  const closers: (() => Promise<void> | void)[] = [];

  beforeEach(async () => {
    const handle = await makeRedisStore();
    prefix = handle.prefix;
    redis = handle.redis;
    cleanup = handle.cleanup;
  });

  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await cleanup();
  });

  /** An instance: its own Redis connection and store object on the shared prefix, its own server. */
  async function instance(
    instanceId: string,
    options: { leaseMs: number; horizonMs: number; stallPublish?: Promise<void> },
  ) {
    const redis = new Redis(REDIS_URL);
    closers.push(() => redis.disconnect());
    const store = new RedisStore({ client: fromIoredis(redis), prefix });
    const lines: Line[] = [];
    const logger = jsonLogger({ sink: (line) => lines.push(JSON.parse(line) as Line) });
    // The instance's queue is the real local one, bound once the server's URL is known; A's can
    // hang in publish (a stalled queue), keeping A inside its tick while its lease runs out.
    let local: LocalTransport | undefined;
    const transport: Transport = {
      publish: async (messages) => {
        await options.stallPublish;
        return local!.publish(messages);
      },
      verify: (delivery) => local!.verify(delivery),
    };
    const h: Harness = await startHarness({
      store,
      handlers: testHandlers().handlers,
      transport,
      engine: {
        instanceId,
        logger,
        tick: { leaseMs: options.leaseMs, horizonMs: options.horizonMs },
      },
    });
    local = new LocalTransport({
      workerUrl: `${h.origin}/v1/worker`,
      failureCallbackUrl: `${h.origin}/v1/dead`,
      signingKey: SIGNING_KEY,
      onError: () => {},
    });
    closers.push(
      () => h.close(),
      () => local?.close(),
    );
    return { h, lines };
  }

  async function metrics(h: Harness) {
    const res = await call(h.origin, "GET", "/metrics");
    expect(res.status).toBe(200);
    return parsePrometheus(res.body as string);
  }

  it("B takes over when A's lease expires: metrics, events and both logs show it", async () => {
    let unstall!: () => void;
    const stalled = new Promise<void>((resolve) => {
      unstall = resolve;
    });
    const a = await instance("instance-a", {
      leaseMs: 60_000,
      horizonMs: 1_500,
      stallPublish: stalled,
    });
    // B looks further ahead than A dispatched, so it has work (and asks for the lease) at once.
    const b = await instance("instance-b", { leaseMs: 30_000, horizonMs: 10_000 });
    closers.push(() => unstall()); // never leave A hanging

    const created = await call(a.h.origin, "POST", "/v1/schedules", {
      json: { id: "every-second", handler: "echo", schedule: "1s" },
    });
    expect(created.status).toBe(201);

    // A takes the lease, commits, and hangs publishing.
    const tickA = call(a.h.origin, "POST", "/v1/tick", { headers: { "x-request-id": "tick-a" } });
    tickA.catch(() => {}); // awaited below; a failed test must not leave it unhandled
    await until(async () => sampleValue(await metrics(b.h), "tickwork_leader_active") === 1);
    const held = await metrics(b.h);
    expect(sampleValue(held, "tickwork_leader_info", { holder: "instance-a" })).toBe(1);
    expect(sampleValue(held, "tickwork_leader_changes_total")).toBe(1);

    // B is refused while A holds the lease, and leads once it has expired.
    const refused = await call(b.h.origin, "POST", "/v1/tick");
    expect(refused.body).toMatchObject({ leader: false });
    expect(refused.body.leaseRemainingMs).toBeGreaterThan(0);
    expect(await redis.pexpire(keys(prefix).lease(TICK_LEASE), 1)).toBe(1);
    const answers: { leader: boolean; due?: number }[] = [];
    await until(async () => {
      const tick = await call(b.h.origin, "POST", "/v1/tick", {
        headers: { "x-request-id": `tick-b-${answers.length}` },
      });
      answers.push(tick.body);
      return tick.body.leader === true && tick.body.due > 0;
    }, 10_000);
    unstall();
    expect((await tickA).status).toBe(200);

    const after = await metrics(a.h);
    expect(sampleValue(after, "tickwork_leader_changes_total")).toBe(2);
    expect(sampleValue(after, "tickwork_leader_flaps_total")).toBe(1); // within 5 minutes
    expect(sampleValue(after, "tickwork_leader_info", { holder: "instance-b" })).toBe(1);
    expect(() => sampleValue(after, "tickwork_leader_info", { holder: "instance-a" })).toThrow();

    const events = await call(b.h.origin, "GET", "/v1/events?type=leader.changed");
    expect(events.body.items).toEqual([
      expect.objectContaining({ type: "leader.changed", holder: "instance-a", previous: null }),
      expect.objectContaining({
        type: "leader.changed",
        holder: "instance-b",
        previous: "instance-a",
      }),
    ]);
    const [first, second] = (events.body.items as { id: string }[]).map((e) => {
      const [ms, seq] = e.id.split("-").map(Number);
      return ms! * 1e6 + seq!;
    });
    expect(first).toBeLessThan(second!);

    // Each transition is logged by the instance that took over, with its tick request's id.
    expect(a.lines.filter((l) => l.msg === "leader changed")).toEqual([
      expect.objectContaining({ holder: "instance-a", previous: null, requestId: "tick-a" }),
    ]);
    const tookOver = b.lines.filter((l) => l.msg === "leader changed");
    expect(tookOver).toEqual([
      expect.objectContaining({
        level: "info",
        holder: "instance-b",
        previous: "instance-a",
        requestId: `tick-b-${answers.length - 1}`,
      }),
    ]);
  });
});
