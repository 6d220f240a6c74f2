/**
 * The Redis Streams transport's acceptance scenario, with real processes: two `tickwork start`
 * servers on one Redis prefix (no QStash, so Streams is chosen by default), each pulling with
 * concurrency 50; 300 jobs of ~3 s (timeout 5 s, so a dead attempt's run lease — timeout + 5 s
 * grace — lapses quickly). Server A is SIGKILLed once it has finished some handlers, while it
 * runs more, and restarted; a live server takes over what A held; then delayed jobs are
 * submitted, both servers are SIGKILLed while those wait (B after finishing many), and one is
 * restarted.
 *
 * Every job must end `succeeded`, every handler's side effect must have completed exactly once,
 * and all of it within 60 s of the last restart. A stopped consumer's deliveries come back through
 * another worker's maintenance (XAUTOCLAIM of deliveries idle ≥ `claimIdleMs`, 30 s by default:
 * `tickwork start` exposes no setting for it nor for `maintainEveryMs`), so the drain takes about
 * that long.
 *
 * The one exception (documented, and counted apart as the chaos runner does): a process killed
 * after a handler's side effect and before its result was recorded runs that job again. The
 * handler's result names its run (`{ pid, attempt }`), so each extra completion is checked to be
 * that: from a process this test killed, before the kill, of an attempt that was not the recorded
 * one, of a job the store recorded succeeded once (its `job.succeeded` events).
 *
 * Signals only: banners, side effects seen in the ledger, Redis state, job records — each polled
 * with a deadline.
 */
import { Redis } from "ioredis";
import { afterAll, describe, expect, test } from "vitest";
import {
  type DevServer,
  deletePrefix,
  REDIS_URL,
  randomPrefix,
  startDevServer,
  waitFor,
} from "../dev/server.ts";

const API_KEY = "crash-test-key";
const JOBS = 300;
const DELAYED = 20;
const HANDLER_MS = 3_000;
const CONCURRENCY = 50;
/** Every job must be done this long after the last restart. */
const DRAIN_LIMIT_MS = 60_000;

interface Run {
  job: string;
  pid: number;
  attempt: number;
  at: number;
}

interface JobView {
  id: string;
  status: string;
  attempts: number;
  result?: { pid: number; attempt: number } | null;
}

describe("Redis Streams: tickwork start servers SIGKILLed mid-handler and restarted", () => {
  const prefix = randomPrefix();
  /** The ledger's own hash-tag root, apart from the servers' keys. */
  const ledgerPrefix = `${prefix}-ledger`;
  const ledger = `{${ledgerPrefix}}`;
  const root = `{${prefix}}`;
  const redis = new Redis(REDIS_URL);
  const servers: DevServer[] = [];
  /** pid → when this test SIGKILLed it. */
  const killedAt = new Map<number, number>();

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await deletePrefix(prefix);
    await deletePrefix(ledgerPrefix);
    redis.disconnect();
  });

  async function start(): Promise<DevServer> {
    const server = await startDevServer({
      command: {
        cli: ["start", "--host", "127.0.0.1", "--handlers", "test/streams/crash-handlers.ts"],
      },
      env: {
        REDIS_URL,
        TICKWORK_PREFIX: prefix,
        TICKWORK_API_KEY: API_KEY,
        TICKWORK_CONCURRENCY: String(CONCURRENCY),
        CRASH_LEDGER: ledger,
        CRASH_LEDGER_URL: REDIS_URL,
      },
      timeoutMs: 30_000,
    });
    servers.push(server);
    return server;
  }

  async function kill(server: DevServer): Promise<void> {
    killedAt.set(server.pid, Date.now());
    await server.kill();
  }

  async function api(server: DevServer, method: string, path: string, body?: unknown) {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  /** Submit `count` jobs round-robin over `targets`, 25 at once; resolves with their ids. */
  async function submit(
    targets: DevServer[],
    count: number,
    extra: Record<string, unknown>,
    tag: string,
  ): Promise<string[]> {
    const ids: string[] = new Array(count);
    let next = 0;
    await Promise.all(
      Array.from({ length: 25 }, async () => {
        while (next < count) {
          const i = next++;
          const answer = await api(targets[i % targets.length] as DevServer, "POST", "/v1/jobs", {
            handler: "slow",
            input: { ms: HANDLER_MS },
            timeout: "5s",
            idempotencyKey: `${tag}-${i}`,
            ...extra,
          });
          expect(answer.status, JSON.stringify(answer.body)).toBe(202);
          ids[i] = String(answer.body.id);
        }
      }),
    );
    return ids;
  }

  const runsOf = async (list: "started" | "completed"): Promise<Run[]> =>
    (await redis.lrange(`${ledger}:${list}`, 0, -1)).map((line) => JSON.parse(line) as Run);
  const startedBy = async (pid: number) =>
    (await runsOf("started")).filter((r) => r.pid === pid).length;
  const completedBy = async (pid: number) =>
    (await runsOf("completed")).filter((r) => r.pid === pid).length;
  /** Per job, how many times the store recorded it succeeded (its `job.succeeded` events). */
  const successesRecorded = async (): Promise<Map<string, number>> => {
    const out = new Map<string, number>();
    for (const [, fields] of await redis.xrange(`${root}:events`, "-", "+")) {
      const event = JSON.parse(fields[1] as string) as { type: string; jobId?: string };
      if (event.type === "job.succeeded" && event.jobId) {
        out.set(event.jobId, (out.get(event.jobId) ?? 0) + 1);
      }
    }
    return out;
  };
  /** Delayed jobs still waiting in the delayed set (`<root>:q:delayed`, member: the job id). */
  const stillDelayed = async (ids: string[]) =>
    (await redis.zmscore(`${root}:q:delayed`, ...ids)).filter((s) => s !== null).length;

  test("every job succeeds, each side effect completes once, all within 60 s of the last restart", async () => {
    // ── two servers on one prefix; no QStash: Redis Streams by default ─────────────
    let [a, b] = (await Promise.all([start(), start()])) as [DevServer, DevServer];
    for (const server of [a, b]) {
      expect(server.banner).toMatch(/^ {2}transport {2}Redis Streams \(.*50 at once/m);
    }

    // ── 300 jobs over both; SIGKILL A once it has finished some handlers and runs more ─
    const ids = await submit([a, b], JOBS, {}, "now");
    await waitFor(
      async () => ((await completedBy(a.pid)) >= 5 ? true : undefined),
      "server A done with 5 handlers",
      30_000,
      50,
    );
    const runningOnA = (await startedBy(a.pid)) - (await completedBy(a.pid));
    await kill(a);
    const killedA = a.pid;
    a = await start();

    // ── a live server takes over what A held (its run lease lapsed, idle past claimIdleMs) ──
    await waitFor(
      async () =>
        (await runsOf("started")).some((r) => r.attempt >= 2 && r.pid !== killedA)
          ? true
          : undefined,
      "a live server running a job A held",
      60_000,
      250,
    );

    // ── delayed jobs; SIGKILL both while they wait (and handlers run), restart one ──
    const delayedIds = await submit([a, b], DELAYED, { delay: "5s" }, "later");
    await waitFor(
      async () => ((await startedBy(a.pid)) >= 1 ? true : undefined),
      "restarted server A running handlers",
      20_000,
      50,
    );
    expect(await stillDelayed(delayedIds)).toBe(DELAYED);
    await Promise.all([kill(a), kill(b)]);
    // Killed while every delayed job was still waiting for its time.
    expect(await stillDelayed(delayedIds)).toBe(DELAYED);
    const survivor = await start();
    const lastRestart = Date.now();
    const deadline = lastRestart + DRAIN_LIMIT_MS;

    // ── drain: every side effect completed, then every job recorded succeeded ───────
    const all = [...ids, ...delayedIds];
    await waitFor(
      async () => ((await redis.hlen(`${ledger}:done`)) >= all.length ? true : undefined),
      `side effects of all ${all.length} jobs`,
      Math.max(0, deadline - Date.now()),
      250,
    );
    const sideEffectsAfterMs = Date.now() - lastRestart;
    const views = new Map<string, JobView>();
    await waitFor(
      async () => {
        const open = all.filter((id) => views.get(id)?.status !== "succeeded");
        for (let i = 0; i < open.length; i += 25) {
          await Promise.all(
            open.slice(i, i + 25).map(async (id) => {
              const { status, body } = await api(survivor, "GET", `/v1/jobs/${id}`);
              expect(status).toBe(200);
              views.set(id, body as unknown as JobView);
            }),
          );
        }
        return all.every((id) => views.get(id)?.status === "succeeded") ? true : undefined;
      },
      `all ${all.length} jobs succeeded`,
      Math.max(0, deadline - Date.now()),
      500,
    );
    const drainedAfterMs = Date.now() - lastRestart;

    // ── each side effect exactly once, but for the kill-after-side-effect window ────
    const done = await redis.hgetall(`${ledger}:done`);
    const completed = await runsOf("completed");
    const successes = await successesRecorded();
    expect(Object.keys(done).sort()).toEqual([...all].sort());
    const doubled: string[] = [];
    const afterCompletionKill: string[] = [];
    for (const id of all) {
      const view = views.get(id) as JobView;
      const runs = completed.filter((r) => r.job === id);
      expect(runs).toHaveLength(Number(done[id]));
      // The recorded run: the one the job's result names, its last attempt.
      const recorded = runs.filter(
        (r) => r.pid === view.result?.pid && r.attempt === view.result?.attempt,
      );
      expect(recorded, `${id}: the recorded result's run completed once`).toHaveLength(1);
      expect(view.result?.attempt).toBe(view.attempts);
      const extra = runs.filter((r) => !recorded.includes(r));
      if (extra.length === 0) continue;
      // Explained only by a process this test killed, after the side effect and before the
      // result of that (earlier) attempt was recorded: the store recorded the job succeeded
      // once (a second success recorded means a succeeded job ran again).
      const explained =
        successes.get(id) === 1 &&
        extra.every((r) => {
          const killed = killedAt.get(r.pid);
          return killed !== undefined && r.at <= killed && r.attempt < view.attempts;
        });
      (explained ? afterCompletionKill : doubled).push(
        `${id}: ${runs.map((r) => `${r.pid}#${r.attempt}`).join(", ")}`,
      );
    }
    expect(doubled).toEqual([]);

    // ── the queue ends empty: nothing unread, pending or delayed ─────────────────
    await waitFor(
      async () => {
        const [length, delayed] = await Promise.all([
          redis.xlen(`${root}:q`),
          redis.zcard(`${root}:q:delayed`),
        ]);
        const pending = ((await redis.xpending(`${root}:q`, "tickwork")) as [number])[0];
        return length + delayed + pending === 0 ? true : undefined;
      },
      "the stream empty, nothing pending or delayed",
      10_000,
      200,
    );
    expect(drainedAfterMs).toBeLessThanOrEqual(DRAIN_LIMIT_MS);

    const attempts = all.map((id) => (views.get(id) as JobView).attempts);
    console.log(
      `crash.test: ${all.length} jobs succeeded; A ran ${runningOnA} handlers when killed (after finishing some); ` +
        `side effects all done ${(sideEffectsAfterMs / 1000).toFixed(1)} s and jobs all ` +
        `succeeded ${(drainedAfterMs / 1000).toFixed(1)} s after the last restart; ` +
        `${attempts.filter((n) => n > 1).length} jobs took more than one attempt ` +
        `(at most ${Math.max(...attempts)}); doubled by a kill after the side effect: ` +
        `${afterCompletionKill.length}${afterCompletionKill.length ? ` (${afterCompletionKill.join("; ")})` : ""}`,
    );
  }, 180_000);
});
