/**
 * Two dev servers (two processes, one Redis, one prefix) each ticking
 * every second on their own, and ten callers racing `POST /v1/tick` at both. Every occurrence
 * must run exactly once: one succeeded job per fire time, each on its first attempt.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createClient, type Job, type TickResult } from "../../src/client/index.ts";
import {
  type DevServer,
  deletePrefix,
  REDIS_URL,
  randomPrefix,
  sleep,
  startDevServer,
  waitFor,
} from "./server.ts";

const CALLERS = 10;

describe("two dev servers on one Redis, ten callers racing POST /v1/tick", () => {
  const prefix = randomPrefix();
  let servers: DevServer[] = [];

  beforeAll(async () => {
    const env = { REDIS_URL, TICKWORK_PREFIX: prefix };
    servers = await Promise.all([startDevServer({ env }), startDevServer({ env })]);
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await deletePrefix(prefix);
  });

  test("every occurrence runs exactly once", async () => {
    const clients = servers.map((s) => createClient({ url: s.url }));
    const [a, b] = clients as [ReturnType<typeof createClient>, ReturnType<typeof createClient>];
    const plans = [
      {
        handle: await a.schedules.create({ handler: "echo", schedule: "1s", maxRuns: 5 }),
        every: 1000,
        runs: 5,
      },
      {
        handle: await b.schedules.create({
          handler: "echo",
          schedule: "*/2 * * * * *",
          maxRuns: 3,
        }),
        every: 2000,
        runs: 3,
      },
    ];

    let racing = true;
    const answers = { leader: 0, follower: 0 };
    const callers = Array.from({ length: CALLERS }, async (_, i) => {
      const client = clients[i % 2]!;
      while (racing) {
        const result: TickResult = await client.tick();
        answers[result.leader ? "leader" : "follower"]++;
        await sleep(10);
      }
    });

    const finished = async (id: string, runs: number): Promise<Job[] | undefined> => {
      const schedule = await a.schedules.get(id);
      if (schedule.status !== "completed") return undefined;
      const jobs = await a.jobs.list({ scheduleId: id, limit: 100 }).toArray();
      return jobs.length === runs && jobs.every((j) => j.status === "succeeded") ? jobs : undefined;
    };
    const results = await Promise.all(
      plans.map((p) =>
        waitFor(() => finished(p.handle.id, p.runs), `schedule ${p.handle.id}`, 15_000, 200),
      ),
    );
    // Keep racing a little longer: nothing may run again.
    await sleep(1_500);
    racing = false;
    await Promise.all(callers);

    expect(answers.follower).toBeGreaterThan(0);
    for (const [i, plan] of plans.entries()) {
      const jobs = await a.jobs.list({ scheduleId: plan.handle.id, limit: 2 }).toArray();
      expect(jobs).toHaveLength(plan.runs);
      expect(jobs.map((j) => j.id).sort()).toEqual(results[i]!.map((j) => j.id).sort());
      for (const job of jobs) expect(job).toMatchObject({ status: "succeeded", attempts: 1 });
      const fires = jobs.map((j) => Date.parse(j.fireAt!)).sort((x, y) => x - y);
      expect(new Set(fires).size).toBe(plan.runs);
      for (let k = 1; k < fires.length; k++) expect(fires[k]! - fires[k - 1]!).toBe(plan.every);
      expect((await b.schedules.get(plan.handle.id)).runs).toBe(plan.runs);
    }
  });
});
