/**
 * Two dev servers (two processes, one Redis, one prefix) each ticking
 * every second on their own, and ten callers racing `POST /v1/tick` at both. Every occurrence
 * must run exactly once: one succeeded job per fire time, each on its first attempt; and the
 * callers must have met the lease held by another tick at least once.
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
/** The dev server's tick look-ahead (its banner: "look-ahead 2 s"). */
const LOOK_AHEAD_MS = 2_000;
/** Races run at most until one saw a follower answer. */
const MAX_RACES = 3;

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

  /**
   * One race: two schedules, ten callers ticking both servers until ticks have run past the
   * moment either schedule would fire again; every occurrence checked to have run exactly once.
   * Returns how the callers' ticks were answered.
   */
  async function race(): Promise<{ leader: number; follower: number }> {
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

    // A tick takes the lease only when something is due (else it answers an idle leader), so the
    // callers meet a lease holder only around the instants an occurrence falls due: its fire time
    // minus the dev server's 2 s look-ahead. Each caller paces itself 10 ms apart but lands on
    // those instants exactly, so all ten arrive together there.
    const dueAt = plans
      .flatMap((p) =>
        Array.from(
          { length: p.runs },
          (_, k) => Date.parse(p.handle.schedule!.nextRunAt!) + k * p.every - LOOK_AHEAD_MS,
        ),
      )
      .sort((x, y) => x - y);
    const pace = () => {
      const now = Date.now();
      const next = dueAt.find((t) => t > now);
      return next !== undefined && next - now < 10 ? next - now : 10;
    };

    let racing = true;
    const answers = { leader: 0, follower: 0 };
    /** When each leader tick answered to a caller was sent. */
    const leaderTicksSentAt: number[] = [];
    const callers = Array.from({ length: CALLERS }, async (_, i) => {
      const client = clients[i % 2]!;
      while (racing) {
        const sentAt = Date.now();
        const result: TickResult = await client.tick();
        answers[result.leader ? "leader" : "follower"]++;
        if (result.leader) leaderTicksSentAt.push(sentAt);
        await sleep(pace());
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
        waitFor(() => finished(p.handle.id, p.runs), `schedule ${p.handle.id}`, 30_000, 200),
      ),
    );
    // Keep racing until ticks have run past the moment a further occurrence of either schedule
    // would be due (its last fire time plus one period): nothing may run again.
    const nextWouldFire = Math.max(
      ...plans.map((p, i) => Math.max(...results[i]!.map((j) => Date.parse(j.fireAt!))) + p.every),
    );
    await waitFor(
      async () =>
        leaderTicksSentAt.filter((at) => at > nextWouldFire).length >= 2 ? true : undefined,
      "two leader ticks after the last fire time plus one period",
      15_000,
      50,
    );
    racing = false;
    await Promise.all(callers);

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
    return answers;
  }

  test("every occurrence runs exactly once", { timeout: 150_000 }, async () => {
    // The callers must have met a tick holding the lease (a follower answer), or they did not
    // race. Whether one lands inside a lease (a few ms, around each due instant) is up to the
    // scheduler of a busy machine, so a race is run again, each fully checked, until one did.
    const answers = { leader: 0, follower: 0 };
    for (let round = 0; round < MAX_RACES && answers.follower === 0; round++) {
      const { leader, follower } = await race();
      answers.leader += leader;
      answers.follower += follower;
    }
    expect(answers.follower).toBeGreaterThan(0);
  });
});
