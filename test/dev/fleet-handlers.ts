/**
 * @module
 * The handlers module of the fleet tests (`fleet-limits.test.ts`, `fleet-nodes.test.ts`), loaded
 * by `tickwork start --handlers` in each child process. No `tickwork` import: plain data and
 * functions, as a user's module would be once built.
 *
 * - `fleet.limited` (`concurrency: 2` across the fleet, ADR 0013): records its run in a Redis
 *   list named by its input (`RPUSH <ledger> {job, attempt, pid, event, at}` when it starts and
 *   when it finishes), sleeps `input.ms`, and returns `{ pid, startedAt, finishedAt }`. Both
 *   records are taken inside the run (after `beginRun` took the slot, before `finishRun` frees
 *   it), so their intervals overlap no more than the slots do.
 * - `fleet.where`: answers where it ran — `{ pid, capabilities }` (`TICKWORK_CAPABILITIES` of the
 *   process) — for placement checks.
 *
 * The ledger must live under a test's own key prefix (`{twdev…}:`), so a stray input cannot
 * write elsewhere, and the test's prefix cleanup removes it.
 */
import { Redis } from "ioredis";

const redis = new Redis(process.env.FLEET_LEDGER_URL ?? "redis://127.0.0.1:6379", {
  lazyConnect: true,
});

interface Ctx {
  jobId: string;
  attempt: number;
  signal: AbortSignal;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

function limitedInput(input: unknown): { ledger: string; ms: number } {
  const { ledger, ms } = (input ?? {}) as { ledger?: unknown; ms?: unknown };
  if (typeof ledger !== "string" || !/^\{twdev[a-z0-9]{1,16}\}:fleet:[a-z]{1,16}$/.test(ledger)) {
    throw new Error("fleet.limited: input.ledger must be a key under a test's own prefix");
  }
  if (typeof ms !== "number" || !Number.isInteger(ms) || ms < 0 || ms > 10_000) {
    throw new Error("fleet.limited: input.ms must be a whole number from 0 to 10000");
  }
  return { ledger, ms };
}

export const handlers = {
  "fleet.limited": {
    concurrency: 2,
    timeout: 15_000,
    // Retries left: a deferral charged as an attempt would show as `attempts` > 1, not a dead job.
    retries: 3,
    run: async (input: unknown, ctx: Ctx) => {
      const { ledger, ms } = limitedInput(input);
      const startedAt = Date.now();
      const run = { job: ctx.jobId, attempt: ctx.attempt, pid: process.pid };
      await redis.rpush(ledger, JSON.stringify({ ...run, event: "start", at: startedAt }));
      await sleep(ms, ctx.signal);
      const finishedAt = Date.now();
      await redis.rpush(ledger, JSON.stringify({ ...run, event: "finish", at: finishedAt }));
      return { pid: process.pid, startedAt, finishedAt };
    },
  },
  "fleet.where": {
    run: () => ({
      pid: process.pid,
      capabilities: JSON.parse(process.env.TICKWORK_CAPABILITIES || "{}") as Record<string, string>,
    }),
  },
};
