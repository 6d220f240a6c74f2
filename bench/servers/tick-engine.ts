/**
 * @module
 * The tick section's engine in a process of its own, as a tick runs in production (a cron-called
 * function, or `tickwork start`): its CPU figure is then the engine's alone, not shared with the
 * benchmark's own load generators and their heaps. `benchEngine` on `REDIS_URL`, publishing to the
 * QStash double named by `QSTASH_*`, the tick budget from `TICK_BUDGET_MS`.
 *
 * Requests (besides the built-in `cpu` and `exit`, see `serveParent`):
 * - `arm { count, aheadMs }`: store `count` schedules, each with one occurrence `aheadMs` from now;
 * - `tick`: one `engine.ticker.tick()`; answers `{ ms, cpu_us, round_trips, dispatched, leader,
 *   settings }` (wall time, this process's CPU and the script calls made, over the tick alone).
 */
import { serveParent } from "../lib/children.ts";
import { armDue, benchEngine } from "../lib/engine.ts";

const env = process.env;
const need = (name: string): string => {
  const value = env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const { engine, store, counter } = await benchEngine(
  need("REDIS_URL"),
  {
    url: need("QSTASH_URL"),
    token: need("QSTASH_TOKEN"),
    currentSigningKey: need("QSTASH_CURRENT_SIGNING_KEY"),
    nextSigningKey: need("QSTASH_NEXT_SIGNING_KEY"),
  },
  { tick: { budgetMs: Number(need("TICK_BUDGET_MS")) } },
);

serveParent(
  {},
  {
    arm: async (m) => {
      await armDue(engine, "due-", Number(m.count), (await store.now()) + Number(m.aheadMs));
      return true;
    },
    tick: async () => {
      const rt0 = counter.roundTrips;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const result = await engine.ticker.tick();
      const ms = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const { chunk, publishBatch, budgetMs, horizonMs } = engine.options.tick;
      return {
        ms,
        cpu_us: cpu.user + cpu.system,
        round_trips: counter.roundTrips - rt0,
        dispatched: result.leader ? result.dispatched : 0,
        leader: result.leader,
        settings: { chunk, publishBatch, budgetMs, horizonMs },
      };
    },
  },
);
