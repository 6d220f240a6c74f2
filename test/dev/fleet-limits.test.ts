/**
 * A handler's concurrency limit holds across a fleet of real processes (ADR 0013,
 * docs/adr/0013-concurrency-limits.md): on one Redis prefix, an api+tick `tickwork start` and two
 * `tickwork start --role worker` processes pulling from Redis Streams, 5 deliveries at once each
 * (10 slots in the fleet). The handlers module (`fleet-handlers.ts`) declares `fleet.limited`
 * with `concurrency: 2`; each run records when it starts and finishes, in which process, in a
 * Redis list, and sleeps 2 s. 20 jobs are submitted over HTTP.
 *
 * Then: all 20 `succeeded`, each with `attempts: 1` (a delivery deferred by the limit is not an
 * attempt); the store counted deferrals (`totals.limited` > 0: the limit was reached, so the
 * check below is not passed by a fleet that never tried more than 2) and exactly 20 attempts; a
 * sweep over the recorded run intervals never finds more than 2 at once, and finds 2 (the fleet
 * used its slots); every run was in a worker process, never the api server.
 *
 * Not asserted: that both workers ran some. Nothing in the design makes it so: the stream hands
 * new and deferred deliveries to whichever worker's blocking read is served first, so one worker
 * may in principle win every slot. The split is reported in the test's annotations instead.
 *
 * Signals only: banners, HTTP answers, the ledger in Redis, each polled with a deadline.
 * Runs the built CLI (`npm run build` first).
 */
import { Redis } from "ioredis";
import { afterAll, describe, expect, test } from "vitest";
import { createClient, type Job } from "../../src/client/index.ts";
import {
  type DevServer,
  deletePrefix,
  REDIS_URL,
  randomPrefix,
  startDevServer,
  waitFor,
} from "./server.ts";

const API_KEY = "fleet-limits-key";
const JOBS = 20;
const LIMIT = 2;
const HANDLER_MS = 2_000;
const HANDLERS = "test/dev/fleet-handlers.ts";

interface LedgerEntry {
  job: string;
  attempt: number;
  pid: number;
  event: "start" | "finish";
  at: number;
}

/**
 * The most runs open at once: a sweep over the intervals' ends. At equal times an end counts
 * before a start (the earlier run recorded its end before it freed its slot).
 */
function peakOverlap(intervals: readonly { start: number; end: number }[]): number {
  const events = intervals.flatMap(({ start, end }) => [
    { at: start, delta: 1 },
    { at: end, delta: -1 },
  ]);
  events.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let open = 0;
  let peak = 0;
  for (const { delta } of events) {
    open += delta;
    peak = Math.max(peak, open);
  }
  return peak;
}

describe("a handler's concurrency limit across a fleet of tickwork start processes", () => {
  const prefix = randomPrefix();
  const ledger = `{${prefix}}:fleet:limited`;
  const redis = new Redis(REDIS_URL);
  const servers: DevServer[] = [];

  afterAll(async () => {
    await Promise.allSettled(servers.map((s) => s.stop()));
    await deletePrefix(prefix);
    redis.disconnect();
  });

  /** Start every process at once; any that started are stopped by `afterAll` even if one fails. */
  async function startAll(roles: string[][]): Promise<DevServer[]> {
    const started = await Promise.allSettled(
      roles.map((role) =>
        startDevServer({
          command: { bin: ["start", "--host", "127.0.0.1", "--handlers", HANDLERS, ...role] },
          env: {
            REDIS_URL,
            TICKWORK_PREFIX: prefix,
            TICKWORK_API_KEY: API_KEY,
            TICKWORK_CONCURRENCY: "5",
            FLEET_LEDGER_URL: REDIS_URL,
          },
          timeoutMs: 30_000,
        }),
      ),
    );
    for (const result of started) if (result.status === "fulfilled") servers.push(result.value);
    const failed = started.find((result) => result.status === "rejected");
    if (failed) throw failed.reason;
    return started.map((result) => (result as PromiseFulfilledResult<DevServer>).value);
  }

  test("20 jobs of a concurrency-2 handler: never more than 2 at once, none charged an attempt", async ({
    annotate,
  }) => {
    const [api, workerA, workerB] = (await startAll([
      ["--role", "api", "--role", "tick"],
      ["--role", "worker"],
      ["--role", "worker"],
    ])) as [DevServer, DevServer, DevServer];
    expect(workerA.banner).toMatch(/Redis Streams \(durable; workers pull, 5 at once/);
    expect(workerB.banner).toMatch(/Redis Streams \(durable; workers pull, 5 at once/);

    const client = createClient({ url: api.url, apiKey: API_KEY });
    const ids = await Promise.all(
      Array.from({ length: JOBS }, async (_, i) => {
        const job = await client.jobs.submit({
          handler: "fleet.limited",
          input: { ledger, ms: HANDLER_MS },
          idempotencyKey: `fleet-limits-${i}`,
        });
        return job.id;
      }),
    );
    expect(new Set(ids).size).toBe(JOBS);

    // 10 rounds of 2 s at best, plus deferrals' 0.5–1.5 s waits: well within 50 s.
    const jobs = await waitFor(
      async () => {
        const read = await Promise.all(ids.map((id) => client.jobs.get(id)));
        return read.every((job) => job.status === "succeeded" || job.status === "dead")
          ? read
          : undefined;
      },
      `${JOBS} jobs to end`,
      50_000,
      250,
    );
    const summary = (job: Job) => `${job.id} ${job.status} attempts=${job.attempts}`;
    for (const job of jobs) {
      expect(job.status, summary(job)).toBe("succeeded");
      expect(job.attempts, summary(job)).toBe(1);
    }

    // The store: exactly one attempt per job, and deliveries were deferred by the limit.
    const stats = (await (
      await fetch(`${api.url}/v1/stats`, { headers: { authorization: `Bearer ${API_KEY}` } })
    ).json()) as { totals: { started: number; succeeded: number; limited: number } };
    expect(stats.totals).toMatchObject({ started: JOBS, succeeded: JOBS });
    expect(stats.totals.limited).toBeGreaterThan(0);

    // The ledger: one start and one finish per job, in a worker process.
    const entries = (await redis.lrange(ledger, 0, -1)).map(
      (line) => JSON.parse(line) as LedgerEntry,
    );
    const runs = new Map<string, { pid: number; start: number; end: number }>();
    for (const entry of entries) {
      const key = `${entry.job}#${entry.attempt}`;
      const run = runs.get(key) ?? { pid: entry.pid, start: Number.NaN, end: Infinity };
      if (entry.event === "start") run.start = entry.at;
      else run.end = entry.at;
      runs.set(key, run);
    }
    expect(entries).toHaveLength(2 * JOBS);
    expect([...runs.keys()].sort()).toEqual(ids.map((id) => `${id}#1`).sort());
    for (const run of runs.values()) {
      expect(run.end - run.start).toBeGreaterThanOrEqual(HANDLER_MS - 5);
      expect([workerA.pid, workerB.pid]).toContain(run.pid);
    }
    // Each job's result names the same run as the ledger.
    for (const job of jobs) {
      const run = runs.get(`${job.id}#1`)!;
      expect(job.result).toEqual({ pid: run.pid, startedAt: run.start, finishedAt: run.end });
    }

    const intervals = [...runs.values()];
    expect(peakOverlap(intervals)).toBe(LIMIT);
    const byWorker = (pid: number) => intervals.filter((run) => run.pid === pid).length;
    await annotate(
      `runs per worker: ${byWorker(workerA.pid)} and ${byWorker(workerB.pid)}; ` +
        `deliveries deferred by the limit: ${stats.totals.limited}`,
    );
  }, 90_000);

  test("the sweep counts overlaps (so the check above can fail)", () => {
    expect(peakOverlap([])).toBe(0);
    expect(
      peakOverlap([
        { start: 0, end: 10 },
        { start: 10, end: 20 },
        { start: 20, end: 30 },
      ]),
    ).toBe(1);
    expect(
      peakOverlap([
        { start: 0, end: 10 },
        { start: 5, end: 15 },
        { start: 9, end: 12 },
        { start: 15, end: 16 },
      ]),
    ).toBe(3);
    expect(
      peakOverlap([
        { start: 0, end: Infinity },
        { start: 100, end: 200 },
      ]),
    ).toBe(2);
  });
});
