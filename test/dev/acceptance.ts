/**
 * The dev server's promises, through the typed client against the dev server running as a child
 * process — once in memory, once with REDIS_URL (two test files, so they run in parallel). The
 * cases run concurrently against one server: each waits on real time (delays, backoff, "1s"
 * schedules), not on the others. Waits are for what the server shows (a job's state, a
 * schedule's runs) with generous bounds; a window in which nothing may happen is closed by a
 * tick of the test's own, so it holds however late the server's timer runs on a busy machine.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  createClient,
  type Job,
  JobCancelledError,
  JobFailedError,
  NotFoundError,
  type TickworkClient,
} from "../../src/client/index.ts";
import {
  type DevServer,
  deletePrefix,
  REDIS_URL,
  randomPrefix,
  sleep,
  startDevServer,
  waitFor,
} from "./server.ts";

const ms = (iso: string | undefined) => (iso === undefined ? Number.NaN : Date.parse(iso));

/** Every job a schedule fired (all pages), oldest fire time first; works after it is deleted. */
async function runsOf(client: TickworkClient, id: string): Promise<Job[]> {
  const runs = await client.jobs.list({ scheduleId: id, limit: 100 }).toArray();
  return runs.sort((a, b) => ms(a.fireAt) - ms(b.fireAt));
}

export function acceptanceSuite(store: "memory" | "redis"): void {
  describe.concurrent(`acceptance 3 via the client, ${store} store`, () => {
    let server: DevServer;
    let client: TickworkClient;
    const prefix = randomPrefix();

    beforeAll(async () => {
      server = await startDevServer({
        env: store === "redis" ? { REDIS_URL, TICKWORK_PREFIX: prefix } : {},
      });
      client = createClient({ url: server.url });
    });
    afterAll(async () => {
      await server?.stop();
      if (store === "redis") await deletePrefix(prefix);
    });

    test("echo returns its input", async () => {
      const input = { text: "héllo", n: [1, 2, 3], nested: { ok: true } };
      const job = await client.jobs.submit({ handler: "echo", input });
      expect(job.submitted).toMatchObject({ handler: "echo", status: "queued", attempts: 0 });
      expect(await job.result({ timeout: "10s" })).toEqual(input);
      expect(await job.status()).toMatchObject({ status: "succeeded", attempts: 1, result: input });
    });

    test("a 2 s delay is respected", async () => {
      const started = Date.now();
      const job = await client.jobs.submit({ handler: "echo", input: 1, delay: "2s" });
      expect(ms(job.submitted?.runAt) - ms(job.submitted?.createdAt)).toBe(2000);
      expect(await job.result({ timeout: "10s" })).toBe(1);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_900);
      const done = await job.status();
      expect(ms(done.startedAt)).toBeGreaterThanOrEqual(ms(done.runAt));
    });

    test("fail {times: 2} with retries: 3 succeeds on attempt 3", async () => {
      const job = await client.jobs.submit({ handler: "fail", input: { times: 2 }, retries: 3 });
      expect(await job.result({ timeout: "20s" })).toEqual({ attempt: 3 });
      expect(await job.status()).toMatchObject({ status: "succeeded", attempts: 3 });
    });

    test("always failing with retries: 1 ends dead, is in the DLQ, and a retry runs it again", async () => {
      const job = await client.jobs.submit({ handler: "fail", retries: 1 });
      const error = await job.result({ timeout: "20s" }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(JobFailedError);
      const dead = (error as JobFailedError).job;
      expect(dead).toMatchObject({ id: job.id, status: "dead", attempts: 2 });
      expect(dead.error?.message).toContain("failed on purpose");

      const inDlq = async () => {
        for await (const item of client.dlq.list({ limit: 2 })) if (item.id === job.id) return item;
        return undefined;
      };
      expect(await inDlq()).toMatchObject({ status: "dead" });

      const retried = await client.dlq.retry(job.id);
      expect(retried.submitted).toMatchObject({ id: job.id, status: "queued" });
      const again = await retried.result({ timeout: "20s" }).catch((e: unknown) => e);
      expect(again).toBeInstanceOf(JobFailedError);
      // It ran again: two more attempts (the queue gives it a fresh retry budget), dead again.
      expect((again as JobFailedError).job).toMatchObject({ status: "dead", attempts: 4 });
      expect(await inDlq()).toBeDefined();
    });

    test("a replayed idempotency key answers 200, the same id and Idempotent-Replayed: true", async () => {
      const body = { handler: "echo", input: { once: true }, idempotencyKey: `k-${prefix}` };
      const first = await client.jobs.submit(body);
      expect(first.replayed).toBe(false);
      const second = await client.jobs.submit(body);
      expect(second).toMatchObject({ id: first.id, replayed: true });

      const raw = await fetch(`${server.url}/v1/jobs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(raw.status).toBe(200);
      expect(raw.headers.get("idempotent-replayed")).toBe("true");
      expect(((await raw.json()) as { id: string }).id).toBe(first.id);
    });

    test("cancelling a delayed job → cancelled", async () => {
      const job = await client.jobs.submit({ handler: "echo", input: "never", delay: "5s" });
      expect(await job.cancel()).toEqual({ id: job.id, status: "cancelled" });
      expect((await job.status()).status).toBe("cancelled");
      await expect(job.result({ timeout: "2s" })).rejects.toBeInstanceOf(JobCancelledError);
    });

    test('a "1s" schedule runs once a second, each with a distinct fireAt', async () => {
      const s = await client.schedules.create({ handler: "echo", schedule: "1s", input: "tick" });
      expect(s.created).toBe(true);
      expect(s.schedule).toMatchObject({ status: "active", runs: 0 });
      await waitFor(
        async () => ((await runsOf(client, s.id)).length >= 4 ? true : undefined),
        "4 runs",
        15_000,
      );
      await s.delete();
      const runs = (await runsOf(client, s.id)).filter((r) => r.status === "succeeded");
      expect(runs.length).toBeGreaterThanOrEqual(3);
      const fires = runs.map((r) => ms(r.fireAt));
      expect(new Set(fires).size).toBe(fires.length);
      for (let i = 1; i < fires.length; i++) expect(fires[i]! - fires[i - 1]!).toBe(1000);
      for (const run of runs) {
        expect(run.attempts).toBe(1);
        expect(run.result).toBe("tick");
        // Dispatched ahead (look-ahead 2 s) but never delivered before its fire time; nor held
        // back to a later delivery (a bound on correctness, loose enough for a busy machine).
        expect(ms(run.startedAt)).toBeGreaterThanOrEqual(ms(run.fireAt));
        expect(ms(run.startedAt) - ms(run.fireAt)).toBeLessThan(10_000);
      }
    });

    test("a 6-field cron (*/2 * * * * *) runs on its seconds", async () => {
      const s = await client.schedules.create({ handler: "echo", schedule: "*/2 * * * * *" });
      await waitFor(
        async () => ((await runsOf(client, s.id)).length >= 2 ? true : undefined),
        "2 runs",
        15_000,
      );
      await s.delete();
      const runs = await runsOf(client, s.id);
      const fires = runs.map((r) => ms(r.fireAt));
      for (const fire of fires) expect(fire % 2000).toBe(0);
      for (let i = 1; i < fires.length; i++) expect(fires[i]! - fires[i - 1]!).toBe(2000);
    });

    test("pause stops runs, resume restarts them, delete → 404", async () => {
      const s = await client.schedules.create({ handler: "echo", schedule: "1s" });
      await waitFor(
        async () => ((await s.get()).runs >= 1 ? true : undefined),
        "a first run",
        10_000,
      );
      const pausedAt = Date.now();
      const paused = await s.pause();
      expect(paused.status).toBe("paused");
      // Two periods in which the schedule would have fired, closed by a tick of our own: a tick
      // has run after them, however late the server's timer is.
      await sleep(Math.max(0, pausedAt + 2_200 - Date.now()));
      await client.tick();
      // Occurrences dispatched before the pause (within the 2 s look-ahead) may still run: wait
      // until they have been delivered.
      await waitFor(
        async () => ((await runsOf(client, s.id)).length >= paused.runs ? true : undefined),
        "the runs dispatched before the pause",
        10_000,
      );
      const during = await s.get();
      expect(during.runs).toBe(paused.runs);
      expect(await runsOf(client, s.id)).toHaveLength(paused.runs);

      const resumedAt = Date.now();
      const resumed = await s.resume();
      expect(resumed.status).toBe("active");
      // `runs` counts dispatched occurrences; the job itself appears when it is delivered.
      const afterResume = await waitFor(
        async () => {
          const later = (await runsOf(client, s.id)).slice(paused.runs);
          return later.length > 0 ? later : undefined;
        },
        "a run after resume",
        10_000,
      );
      // Nothing that fell in the pause is replayed: every later run fires after the resume.
      for (const run of afterResume) expect(ms(run.fireAt)).toBeGreaterThanOrEqual(resumedAt - 50);

      expect(await s.delete()).toEqual({ id: s.id, status: "deleted" });
      await expect(s.get()).rejects.toBeInstanceOf(NotFoundError);
      await expect(client.schedules.get(s.id)).rejects.toMatchObject({ status: 404 });
    });

    test("maxRuns: 3 → completed after exactly 3 runs", async () => {
      const s = await client.schedules.create({ handler: "echo", schedule: "1s", maxRuns: 3 });
      const done = await waitFor(
        async () => {
          const now = await s.get();
          return now.status === "completed" ? now : undefined;
        },
        "the schedule to complete",
        15_000,
      );
      expect(done).toMatchObject({ runs: 3, nextRunAt: null });
      await waitFor(
        async () => {
          const runs = await runsOf(client, s.id);
          return runs.length === 3 && runs.every((r) => r.status === "succeeded")
            ? true
            : undefined;
        },
        "its runs to finish",
        10_000,
      );
      // Nothing more may run: wait until a fourth occurrence would be due (one period after the
      // third), then tick ourselves, so a tick has run after it.
      const lastFire = Math.max(...(await runsOf(client, s.id)).map((r) => ms(r.fireAt)));
      await sleep(Math.max(0, lastFire + 1_000 - Date.now()));
      await client.tick();
      const runs = await s.runs({ limit: 2 }).toArray();
      expect(runs).toHaveLength(3);
      expect(new Set(runs.map((r) => r.fireAt)).size).toBe(3);
      expect((await s.get()).runs).toBe(3);
    });
  });
}
