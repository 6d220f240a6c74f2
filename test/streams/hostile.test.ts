/**
 * The Redis Streams queue against data and changes it did not make, as they happen in production:
 * entries someone else XADDed (no `j`, a `j` that is no job spec), a malformed delayed body, a
 * consumer group created or reset at `$` by someone else (the entries before it are in the stream,
 * never delivered to the group and pending with nobody), the stream deleted under a blocked
 * worker, and the wall clock stepped back under a running worker. What must hold: each foreign
 * entry goes with one log line naming it, no real job is lost, and the worker keeps pulling.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { createEngine, type Engine, type Logger, PullWorker } from "../../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { keys } from "../../src/store/redis/keys.ts";
import { REDIS_URL } from "../support/stores.ts";

const admin = new Redis(REDIS_URL);
const opened: Redis[] = [];
const stops: (() => Promise<unknown>)[] = [];
const prefixes: string[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const stop of stops.splice(0).reverse()) await stop();
  for (const redis of opened.splice(0)) redis.disconnect();
  for (const prefix of prefixes.splice(0)) {
    const found = await admin.keys(`{${prefix}}*`);
    if (found.length > 0) await admin.del(...found);
  }
});
afterAll(() => admin.disconnect());

/** Resolves once `check()` holds, looking again after each round trip to Redis (no sleeps). */
async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000) {
  const end = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await admin.ping();
  }
}

interface Line {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

/** A logger that keeps its lines (a child's lines go to the same list). */
function capture(lines: Line[], base: Record<string, unknown> = {}): Logger {
  const at =
    (level: string) =>
    (msg: string, fields: Record<string, unknown> = {}) =>
      void lines.push({ level, msg, fields: { ...base, ...fields } });
  return {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: (fields) => capture(lines, { ...base, ...fields }),
  };
}

/** The lines that name `text` anywhere (message or fields). */
function naming(lines: Line[], text: string): Line[] {
  return lines.filter((l) => JSON.stringify(l).includes(text));
}

function rig(
  opts: {
    prefix?: string;
    claimIdleMs?: number;
    idleWaitMs?: number;
    concurrency?: number;
    readAhead?: number;
    readAheadHoldMs?: number;
    name?: string;
    handlers?: Record<string, { run: (input: unknown) => unknown }>;
    backoff?: (retried: number) => number;
  } = {},
) {
  const prefix = opts.prefix ?? `hostile-${randomUUID()}`;
  prefixes.push(prefix);
  const redis = new Redis(REDIS_URL, opts.name ? { connectionName: opts.name } : {});
  opened.push(redis);
  const lines: Line[] = [];
  const logger = capture(lines);
  const ran: unknown[] = [];
  const streams = new RedisStreams({
    redis,
    prefix,
    claimIdleMs: opts.claimIdleMs ?? 300,
    maintainEveryMs: 50,
    ...(opts.backoff ? { backoff: opts.backoff } : {}),
    logger,
  });
  const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" });
  const engine: Engine = createEngine({
    store,
    transport: streams,
    handlers: opts.handlers ?? { ok: { run: async (input: unknown) => void ran.push(input) } },
    logger,
  });
  const worker = new PullWorker({
    runner: engine.runner,
    queue: streams,
    idleWaitMs: opts.idleWaitMs ?? 1_000,
    concurrency: opts.concurrency ?? 10,
    readAhead: opts.readAhead ?? 0,
    ...(opts.readAheadHoldMs ? { readAheadHoldMs: opts.readAheadHoldMs } : {}),
    logger,
  });
  stops.push(async () => {
    await worker.stop({ deadlineMs: 1_000 });
    await streams.close();
  });
  return {
    prefix,
    redis,
    streams,
    store,
    engine,
    worker,
    lines,
    ran,
    stream: `${keys(prefix).root}:q`,
  };
}

async function status(engine: Engine, id: string): Promise<string> {
  return (await engine.broker.getJob(id)).status;
}

/** Nothing on the stream, nothing pending. */
async function drained(stream: string): Promise<boolean> {
  const [pending] = (await admin.xpending(stream, "tickwork")) as [number];
  return (await admin.xlen(stream)) === 0 && pending === 0;
}

describe("Redis Streams, foreign entries", () => {
  it("an entry with neither a delivery nor a wake-up is acknowledged with one line naming it", async () => {
    const r = rig();
    await r.streams.open();
    const foreign = (await admin.xadd(r.stream, "*", "x", "y"))!;
    const { job } = await r.engine.broker.submit({ handler: "ok", input: 1 });
    await r.worker.start();
    await until(async () => (await status(r.engine, job.id)) === "succeeded", "the real job");
    await until(() => drained(r.stream), "the foreign entry acknowledged");
    const about = naming(r.lines, foreign);
    expect(about).toHaveLength(1);
    expect(about[0]!.level).toBe("warn");
  });

  it("a `j` that is no job spec (not JSON, JSON null, an object without the fields) is acknowledged with one line each", async () => {
    const r = rig();
    await r.streams.open();
    const ids = [
      (await admin.xadd(r.stream, "*", "j", "not json"))!,
      (await admin.xadd(r.stream, "*", "j", "null"))!,
      (await admin.xadd(r.stream, "*", "j", '{"id":"x","__proto__":{"polluted":1}}'))!,
    ];
    const { job } = await r.engine.broker.submit({ handler: "ok", input: 1 });
    await r.worker.start();
    await until(async () => (await status(r.engine, job.id)) === "succeeded", "the real job");
    await until(() => drained(r.stream), "the foreign entries acknowledged");
    for (const id of ids) {
      const about = naming(r.lines, id);
      expect(about, id).toHaveLength(1);
      expect(about[0]!.level).toBe("warn");
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(r.worker.stats().failed).toBe(0);
  });

  it("a malformed delayed body is dropped with a line naming its member", async () => {
    const r = rig();
    await admin.zadd(`${r.stream}:delayed`, 1, "bad-member");
    await admin.hset(`${r.stream}:bodies`, "bad-member", "garbage");
    const { job } = await r.engine.broker.submit({ handler: "ok", input: 1, delay: 1 });
    await r.worker.start();
    await until(async () => (await status(r.engine, job.id)) === "succeeded", "the real job");
    expect(await admin.zcard(`${r.stream}:delayed`)).toBe(0);
    expect(naming(r.lines, "bad-member")).toHaveLength(1);
  });

  it("a foreign entry held ahead and handed back (every slot taken) goes back to the stream, then is dropped with one line", async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const r = rig({
      concurrency: 1,
      readAhead: 2,
      // Read-ahead runs while slots free in under a tenth of this on average: 300 ms leaves a
      // loaded machine room (at 100 ms, slow quick jobs left it off and nothing was held ahead).
      readAheadHoldMs: 3_000,
      handlers: { held: { run: () => gate }, fast: { run: () => null } },
    });
    // Quick deliveries first: they turn reading ahead on.
    const quick = [];
    for (let n = 0; n < 4; n++)
      quick.push((await r.engine.broker.submit({ handler: "fast", input: n })).job);
    await r.worker.start();
    for (const job of quick) {
      await until(async () => (await status(r.engine, job.id)) === "succeeded", "the quick jobs");
    }
    const blocker = (await r.engine.broker.submit({ handler: "held", input: null })).job;
    await until(async () => (await status(r.engine, blocker.id)) === "running", "the held job");
    // Read ahead of the one slot, held past readAheadHoldMs, handed back.
    const foreign = (await admin.xadd(r.stream, "*", "j", "not json"))!;
    await until(
      () => r.worker.stats().handedBack + r.worker.stats().failed === 1,
      "the hand-back",
      30_000,
    );
    expect(r.lines.filter((l) => l.msg.includes("could not hand"))).toEqual([]);
    open();
    await until(() => r.lines.some((l) => l.msg.includes("not a job spec")), "the drop");
    await until(() => drained(r.stream), "the stream drained");
    expect(r.lines.filter((l) => l.msg.includes("not a job spec"))).toHaveLength(1);
    expect(r.worker.stats().failed).toBe(0);
    void foreign;
  });
});

describe("Redis Streams, hostile settings and waits", () => {
  // The queue's `backoff` option answering no time: NaN reached the requeue script after it had
  // acknowledged and deleted the entry, which then failed on ZADD: the job stayed `failed` with no
  // delivery anywhere. Infinity parked the delivery in the delayed set at score `inf`, for good.
  it.each([
    ["NaN", () => Number.NaN],
    ["Infinity", () => Number.POSITIVE_INFINITY],
    [
      "a throw",
      () => {
        throw new Error("no backoff today");
      },
    ],
  ])(
    "a backoff answering %s: the retry still runs after the default backoff, with one line",
    async (_name, backoff) => {
      let runs = 0;
      const r = rig({
        backoff,
        claimIdleMs: 60_000,
        handlers: {
          flaky: {
            run: () => {
              runs++;
              if (runs === 1) throw new Error("first attempt fails");
            },
          },
        },
      });
      await r.worker.start();
      const { job } = await r.engine.broker.submit({ handler: "flaky", input: null });
      await until(async () => (await status(r.engine, job.id)) === "succeeded", "the retry");
      expect(runs).toBe(2);
      expect(await admin.zcard(`${r.stream}:delayed`)).toBe(0);
      expect(naming(r.lines, "backoff")).toHaveLength(1);
      expect(r.worker.stats().failed).toBe(0);
    },
  );

  // A delivery delayed 30 days (a submit may ask for up to 365): the mover's timer for it was set
  // past Node's limit (2^31 - 1 ms, about 24.8 days), fired after 1 ms, ran the maintenance script
  // and set it again — about 800 scripts a second, and a TimeoutOverflowWarning each, for the
  // whole month.
  it("a delivery delayed past Node's timer limit arms no timer beyond it", async () => {
    const r = rig();
    const real = globalThis.setTimeout;
    const long: number[] = [];
    vi.spyOn(globalThis, "setTimeout").mockImplementation(((
      fn: (...args: unknown[]) => void,
      ms?: number,
      ...rest: unknown[]
    ) => {
      if (typeof ms === "number" && ms > 1e9) long.push(ms);
      return real(fn, ms, ...rest);
    }) as typeof setTimeout);
    await r.worker.start();
    await r.engine.broker.submit({ handler: "ok", input: 1, delay: "30d" });
    await until(() => long.length > 0, "a timer armed for the delayed delivery");
    expect(Math.max(...long)).toBeLessThanOrEqual(2 ** 31 - 1);
    expect(await admin.zcard(`${r.stream}:delayed`)).toBe(1);
  });

  it("refuses a claimIdleMs or maintainEveryMs past Node's timer limit", () => {
    // claimIdleMs / 3 is the worker's keep interval: past the limit it ran every millisecond.
    for (const option of ["claimIdleMs", "maintainEveryMs"]) {
      expect(() => new RedisStreams({ redis: admin, [option]: 1e10 })).toThrow(new RegExp(option));
    }
  });
});

describe("Redis Streams, the consumer group made or moved by someone else", () => {
  it("a group created at `$` before the workers start: the deliveries already on the stream still run, once, with one line", async () => {
    const r = rig();
    // More than one maintenance puts back at a time (100).
    const before: string[] = [];
    for (let n = 0; n < 150; n++) {
      before.push((await r.engine.broker.submit({ handler: "ok", input: `before-${n}` })).job.id);
    }
    await admin.call("XGROUP", "CREATE", r.stream, "tickwork", "$", "MKSTREAM");
    await r.worker.start();
    const after = (await r.engine.broker.submit({ handler: "ok", input: "after" })).job;
    await until(async () => (await status(r.engine, after.id)) === "succeeded", "the later job");
    for (const id of before) {
      await until(
        async () => (await status(r.engine, id)) === "succeeded",
        "a job before the group",
      );
    }
    await until(() => drained(r.stream), "the stream drained");
    expect(r.ran).toHaveLength(151);
    expect(new Set(r.ran).size).toBe(151);
    expect(r.lines.filter((l) => l.msg.includes("skipped back"))).toHaveLength(1);
  });

  it("the group destroyed and made again at `$`: a killed consumer's delivery and an unread one still run, once", async () => {
    const r = rig({ claimIdleMs: 300 });
    const held = (await r.engine.broker.submit({ handler: "ok", input: "held" })).job;
    // A consumer that was killed holding one delivery, and one delivery nobody read yet.
    const dead = new RedisStreams({ redis: r.redis, prefix: r.prefix, claimIdleMs: 300 });
    await dead.open();
    expect(await dead.pull(1, 50)).toHaveLength(1);
    const unread = (await r.engine.broker.submit({ handler: "ok", input: "unread" })).job;
    await admin.call("XGROUP", "DESTROY", r.stream, "tickwork");
    await admin.call("XGROUP", "CREATE", r.stream, "tickwork", "$");
    await r.worker.start();
    const later = (await r.engine.broker.submit({ handler: "ok", input: "later" })).job;
    await until(async () => (await status(r.engine, later.id)) === "succeeded", "the later job");
    await until(async () => (await status(r.engine, unread.id)) === "succeeded", "the unread job");
    await until(async () => (await status(r.engine, held.id)) === "succeeded", "the held job");
    await until(() => drained(r.stream), "the stream drained");
    expect(r.ran.sort()).toEqual(["held", "later", "unread"]);
  });

  it("an entry skipped before the one another worker holds as the group's last: only the skipped one goes back", async () => {
    const r = rig();
    await r.streams.open();
    const skipped = (await r.engine.broker.submit({ handler: "ok", input: "skipped" })).job;
    // Read without being held (NOACK, as someone else's reader might): skipped.
    await admin.call(
      "XREADGROUP",
      "GROUP",
      "tickwork",
      "x",
      "NOACK",
      "COUNT",
      1,
      "STREAMS",
      r.stream,
      ">",
    );
    const held = (await r.engine.broker.submit({ handler: "ok", input: "held" })).job;
    // Another worker holds the newest entry: the oldest pending is the group's last delivered.
    const taken = (await admin.call(
      "XREADGROUP",
      "GROUP",
      "tickwork",
      "other",
      "COUNT",
      1,
      "STREAMS",
      r.stream,
      ">",
    )) as [string, [string, string[]][]][];
    expect(taken[0]![1][0]![1].join(" ")).toContain(held.id);
    // Maintenance puts back the skipped entry only; the held one stays where it is, once.
    const pulled = await r.streams.pull(10, 50);
    expect(pulled.map((m) => (JSON.parse(m.body) as { id: string }).id)).toEqual([skipped.id]);
    const stats = await r.streams.stats();
    expect(stats).toMatchObject({ length: 2, pending: 2 });
    expect(r.lines.filter((l) => l.msg.includes("skipped back"))).toHaveLength(1);
  });

  it("the group moved to `$` (XGROUP SETID) while the worker's slot is taken: what it skipped still runs", async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const ran: unknown[] = [];
    const r = rig({
      concurrency: 1,
      handlers: {
        held: { run: () => gate },
        ok: { run: async (input: unknown) => void ran.push(input) },
      },
    });
    const blocker = (await r.engine.broker.submit({ handler: "held", input: null })).job;
    await r.worker.start();
    await until(async () => (await status(r.engine, blocker.id)) === "running", "the held job");
    // Its one slot is taken: these wait on the stream, unread, when the group is moved past them.
    const jobs = [];
    for (let n = 0; n < 3; n++)
      jobs.push((await r.engine.broker.submit({ handler: "ok", input: n })).job);
    await admin.call("XGROUP", "SETID", r.stream, "tickwork", "$");
    open();
    for (const job of jobs) {
      await until(async () => (await status(r.engine, job.id)) === "succeeded", `job ${job.id}`);
    }
    await until(() => drained(r.stream), "the stream drained");
    expect(ran.sort()).toEqual([0, 1, 2]);
  });
});

/** Resolves once the connection named `name` is blocked in XREADGROUP (a worker's read). */
async function blockedIn(name: string) {
  await until(async () => {
    const list = String(await admin.call("CLIENT", "LIST"));
    return list.split("\n").some((l) => l.includes(`name=${name}`) && l.includes("cmd=xreadgroup"));
  }, "the blocking read");
}

describe("Redis Streams, the stream and the clock under a running worker", () => {
  it("the stream deleted under a blocked worker: it makes it again without reporting a failed pull", async () => {
    const name = `hostile-${randomUUID().slice(0, 8)}`;
    const r = rig({ name, idleWaitMs: 60_000 });
    await r.worker.start();
    // Blocked in XREADGROUP (its read connection carries the same name).
    await blockedIn(name);
    await admin.del(r.stream);
    const { job } = await r.engine.broker.submit({ handler: "ok", input: 1 });
    await until(
      async () => (await status(r.engine, job.id)) === "succeeded",
      "a job after the DEL",
    );
    expect(r.lines.filter((l) => l.level === "warn")).toEqual([]);
    expect(r.worker.stats().failed).toBe(0);
  });

  it("the wall clock stepped back an hour: a stopped consumer's delivery is still taken over", async () => {
    const name = `hostile-${randomUUID().slice(0, 8)}`;
    const r = rig({ name, claimIdleMs: 300, idleWaitMs: 60_000 });
    const { job } = await r.engine.broker.submit({ handler: "ok", input: "taken" });
    // A consumer that is killed holding the delivery (it never answers).
    const dead = new RedisStreams({ redis: admin, prefix: r.prefix, claimIdleMs: 300 });
    await dead.open();
    expect(await dead.pull(1, 50)).toHaveLength(1);
    await r.worker.start();
    // Its first maintenance done (too early for a takeover), it blocks on the stream.
    await blockedIn(name);
    // NTP steps this host's clock back an hour.
    const real = Date.now.bind(Date);
    vi.spyOn(Date, "now").mockImplementation(() => real() - 3_600_000);
    await until(
      async () => (await status(r.engine, job.id)) === "succeeded",
      "the takeover",
      8_000,
    );
    expect(r.ran).toEqual(["taken"]);
  });
});
