/**
 * @module
 * A core of its own for Redis, where a measurement reads Redis's own time per command
 * (`INFO commandstats`, whose `usec` is the wall time a command ran). On a machine with few cores
 * the clients of a contender (its process, the QStash double) compete with Redis for them, and a
 * command the scheduler pauses halfway is billed the pause: a contender with more processes
 * beside Redis reads slower than its Redis work is. With the last core given to Redis and the
 * others to everything else (`taskset`, every thread), each contender's figure is Redis's work.
 * Off with `BENCH_SHARED_CORES=1`, and where there is one core or no `taskset`.
 */
import { spawnSync } from "node:child_process";
import { availableParallelism } from "node:os";

export interface CorePlan {
  /** The CPU list Redis runs on (`taskset` syntax). */
  redis: string;
  /** The CPU list of every other process of the measurement. */
  others: string;
  /** Every CPU, to hand the benchmark's own process back to when done. */
  all: string;
}

/** The plan for this machine, or `undefined` when Redis shares the cores (see the module). */
export function redisCorePlan(): CorePlan | undefined {
  const n = availableParallelism();
  if (n < 2 || process.env.BENCH_SHARED_CORES === "1") return undefined;
  if (spawnSync("taskset", ["-p", String(process.pid)]).status !== 0) return undefined;
  return {
    redis: String(n - 1),
    others: n === 2 ? "0" : `0-${n - 2}`,
    all: `0-${n - 1}`,
  };
}

/** Bind every thread of process `pid` to `cpus`; throws when `taskset` refuses. */
export function pinProcess(pid: number, cpus: string): void {
  const done = spawnSync("taskset", ["-a", "-cp", cpus, String(pid)], { encoding: "utf8" });
  if (done.status !== 0) {
    throw new Error(`taskset -a -cp ${cpus} ${pid} failed: ${done.stderr || done.error?.message}`);
  }
}
