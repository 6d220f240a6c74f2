/**
 * @module
 * The fault suite's load: schedules whose occurrences are known in advance (created before the
 * faults), then jobs submitted over HTTP across the schedules' span with client retries, a
 * dead-letter sweeper retrying dead jobs for the whole run, and a progress line every 10 s.
 */
import type { ChaosClient } from "./client.ts";
import type { Fleet } from "./fleet.ts";
import type { Ledger } from "./ledger.ts";
import { pool, sleep } from "./util.ts";
import {
  jobBody,
  lastFireAt,
  type PlannedSchedule,
  plannedSchedules,
  type WorkloadSize,
} from "./workload.ts";

export interface PlannedLoad {
  /** The schedules' common start. */
  t0: number;
  schedules: PlannedSchedule[];
  /** `<scheduleId>@<fireAt>` of every occurrence the schedules must run. */
  occurrenceIds: Set<string>;
  /** The last occurrence's fire time. */
  lastFire: number;
}

/** Create the planned schedules (before the faults start), starting a few seconds from now. */
export async function createSchedules(
  size: WorkloadSize,
  client: ChaosClient,
  log: (line: string) => void,
  faults: boolean,
): Promise<PlannedLoad> {
  const t0 = Math.ceil((Date.now() + 6_000) / 2_000) * 2_000;
  const schedules = plannedSchedules(size, t0);
  const occurrenceIds = new Set<string>();
  for (const s of schedules) {
    for (const fireAt of s.fireAts) occurrenceIds.add(`${String(s.body.id)}@${fireAt}`);
  }
  await pool(schedules, 20, async (s) => {
    const answer = await client.persist(`schedule ${String(s.body.id)}`, () =>
      client.api("POST", "/v1/schedules", s.body),
    );
    if (answer?.status !== 201 && answer?.status !== 200) {
      throw new Error(
        `creating ${String(s.body.id)}: ${answer?.status} ${JSON.stringify(answer?.body)}`,
      );
    }
  });
  if (Date.now() > t0 - 1_000) throw new Error("schedules were created too late for their startAt");
  const lastFire = lastFireAt(schedules);
  log(
    `${schedules.length} schedules, ${occurrenceIds.size} occurrences from ${new Date(t0).toISOString()} to +${(lastFire - t0) / 1000} s; faults ${faults ? "on" : "off"}`,
  );
  return { t0, schedules, occurrenceIds, lastFire };
}

/** The dead-letter sweeper: every 2 s, each dead job listed is retried. */
export interface Sweeper {
  readonly dlq: { retries: number; ids: Set<string>; lastSeen: number };
  /** Stop after the sweep under way. */
  stop(): Promise<void>;
}

function startSweeper(client: ChaosClient): Sweeper {
  const dlq = { retries: 0, ids: new Set<string>(), lastSeen: 0 };
  let sweeping = true;
  const sweeper = (async () => {
    while (sweeping) {
      await sleep(2_000);
      const page = await client.persist("dlq list", () => client.api("GET", "/v1/dlq?limit=100"));
      const items = (page?.body.items as { id: string }[] | undefined) ?? [];
      dlq.lastSeen = items.length;
      for (const { id } of items) {
        const r = await client.persist(`dlq retry ${id}`, () =>
          client.api("POST", `/v1/dlq/${encodeURIComponent(id)}/retry`),
        );
        if (r?.status === 200 || r?.status === 202) {
          dlq.retries++;
          dlq.ids.add(id);
        }
      }
    }
  })();
  return {
    dlq,
    async stop() {
      sweeping = false;
      await sweeper;
    },
  };
}

/**
 * The load phase: jobs spread over the schedules' span, each retried by its client until
 * accepted; the dead-letter sweeper started (it runs on through the drain); progress logged
 * until 3 s after the last fire time, and processes without a heartbeat for 5 s named. Resolves
 * once every submit has an answer or was given up.
 */
export async function runLoad(
  plan: PlannedLoad,
  options: { size: WorkloadSize; seed: number },
  client: ChaosClient,
  fleet: Fleet,
  ledger: Ledger,
  log: (line: string) => void,
): Promise<{ jobIds: Set<string>; sweeper: Sweeper }> {
  const { t0, lastFire } = plan;
  const { size, seed } = options;
  const jobIds = new Set<string>();
  const submitted = pool(
    Array.from({ length: size.jobs }, (_, i) => i),
    size.jobs,
    async (i) => {
      await sleep(Math.max(0, t0 + ((lastFire - t0) * i) / size.jobs - Date.now()));
      // A client gives up a minute after the load: its job may exist all the same (counted as
      // `submits_abandoned`; its runs show up as unexpected).
      const answer = await client.persist(
        `job ${i}`,
        () => client.api("POST", "/v1/jobs", jobBody(seed, i)),
        lastFire + 60_000,
      );
      if (!answer) client.counters.abandoned++;
      else if (answer.status === 202 || answer.status === 200) {
        if (answer.status === 200) client.counters.replayed++;
        jobIds.add(String(answer.body.id));
      } else {
        client.counters.refused.push(`job ${i}: ${answer.status} ${JSON.stringify(answer.body)}`);
      }
    },
  );

  // The dead-letter list, swept for the whole run: dead jobs are retried.
  const sweeper = startSweeper(client);

  let lastProgress = 0;
  const silent = new Set<number>();
  while (Date.now() < lastFire + 3_000) {
    await sleep(1_000);
    for (const [pid, life] of fleet.lives) {
      if (life.exit || !life.lastBeat || silent.has(pid)) continue;
      if (Date.now() - life.lastBeat.at > 5_000) {
        silent.add(pid);
        log(`${fleet.fate(pid)}: no heartbeat for 5 s`);
      }
    }
    if (Date.now() - lastProgress >= 10_000) {
      lastProgress = Date.now();
      log(
        `load: ${await ledger.doneCount()} completed, ${jobIds.size}/${size.jobs} jobs accepted, ${fleet.counts.killed} kills, apps up ${fleet.appPorts.filter((p) => p !== undefined).length}/3`,
      );
    }
  }
  await submitted;
  return { jobIds, sweeper };
}
