/**
 * @module
 * The handlers module of `crash.test.ts`, loaded by `tickwork start --handlers` in each child
 * process. `slow` works for `input.ms` (about 3 s), then completes its side effect: it counts the
 * completion per job (`HINCRBY <ledger>:done <jobId> 1`) and logs who completed it
 * (`RPUSH <ledger>:completed {job, pid, attempt, at}`), in one MULTI. Its result names the same
 * run (`{ pid, attempt }`), so the job's recorded result tells which completion was the recorded
 * one and any other can be explained (or not) by the test.
 *
 * The ledger lives on `CRASH_LEDGER_URL` under the key prefix `CRASH_LEDGER`, apart from the
 * server's own keys. No `tickwork` import: the module is plain data and functions.
 */
import { Redis } from "ioredis";

const ledger = process.env.CRASH_LEDGER;
if (!ledger) throw new Error("CRASH_LEDGER is not set: this module is crash.test.ts's");
const redis = new Redis(process.env.CRASH_LEDGER_URL ?? "redis://127.0.0.1:6379");

interface Ctx {
  jobId: string;
  attempt: number;
  signal: AbortSignal;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });
}

export const handlers = {
  slow: {
    timeout: 5_000,
    // Each kill of a process running it costs an attempt; the job must survive several.
    retries: 10,
    run: async (input: unknown, ctx: Ctx) => {
      const ms = (input as { ms?: number } | null)?.ms ?? 3_000;
      const run = { job: ctx.jobId, pid: process.pid, attempt: ctx.attempt };
      await redis.rpush(`${ledger}:started`, JSON.stringify({ ...run, at: Date.now() }));
      await sleep(ms, ctx.signal);
      ctx.signal.throwIfAborted();
      await redis
        .multi()
        .hincrby(`${ledger}:done`, ctx.jobId, 1)
        .rpush(`${ledger}:completed`, JSON.stringify({ ...run, at: Date.now() }))
        .exec();
      return { pid: process.pid, attempt: ctx.attempt };
    },
  },
};
