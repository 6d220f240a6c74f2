/**
 * @module
 * The handlers module of the precision section (`bench/sections/precision.ts`), loaded by the
 * QStash-path worker (`precision-worker.ts`) and by `tickwork start --handlers`. No `tickwork`
 * import: plain data and functions, as a user's module would be.
 *
 * `precision.fire` reads the clock first, then records how late it started against the time it
 * was due — the occurrence's `ctx.fireAt`, or a delayed job's `input.due` (the `runAt` it was
 * submitted with) — as `RPUSH <PRECISION_LEDGER> {"case","via","due","error_ms"}` on
 * `PRECISION_REDIS_URL`. `via` comes from `PRECISION_VIA` (each process measures one path).
 */
import { Redis } from "ioredis";

const url = process.env.PRECISION_REDIS_URL;
const ledger = process.env.PRECISION_LEDGER ?? "precision:samples";
const via = process.env.PRECISION_VIA ?? "unknown";
if (!url) throw new Error("PRECISION_REDIS_URL is required");
const redis = new Redis(url);

interface Ctx {
  fireAt?: number;
}

export const handlers = {
  "precision.fire": {
    retries: 0,
    async run(input: unknown, ctx: Ctx) {
      const startedAt = Date.now();
      const { case: name, due } = (input ?? {}) as { case?: unknown; due?: unknown };
      const dueAt = ctx.fireAt ?? (typeof due === "number" ? due : undefined);
      if (typeof name !== "string" || dueAt === undefined) {
        throw new Error("precision.fire: input.case, and a fire time or input.due, are required");
      }
      const sample = { case: name, via, due: dueAt, error_ms: startedAt - dueAt };
      await redis.rpush(ledger, JSON.stringify(sample));
      return sample;
    },
  },
};
