/**
 * @module
 * CPU and memory of this Node process, for the degradation controller (`localSignals`). Sampled
 * at most once a second, on demand, so a submit pays nothing but a clock read in between.
 *
 * - CPU: this process's CPU time over the wall time since the previous sample, as a percent of
 *   one core (the event loop runs on one: 100 % means it is saturated); capped at 100.
 * - Memory: resident set size as a percent of the memory the process may use (the cgroup limit
 *   of a container when Node reports one, else the machine's total).
 */
import { totalmem } from "node:os";

/** How often a new sample is taken, at most. */
const SAMPLE_MS = 1_000;

/**
 * A sampler to pass as the engine's `localSignals`.
 *
 * @example
 * const engine = createEngine({ store, transport, handlers, localSignals: nodeSignals() });
 */
export function nodeSignals(): () => { cpu?: number; memory?: number } {
  let at = performance.now();
  let usage = process.cpuUsage();
  let last: { cpu?: number; memory?: number } = {};
  return () => {
    const now = performance.now();
    if (now - at < SAMPLE_MS) return last;
    const spent = process.cpuUsage(usage);
    const cpu = Math.min(100, ((spent.user + spent.system) / 1000 / (now - at)) * 100);
    at = now;
    usage = process.cpuUsage();
    const limit = constrainedMemory() || totalmem();
    const memory = Math.min(100, (process.memoryUsage.rss() / limit) * 100);
    last = { cpu: round(cpu), memory: round(memory) };
    return last;
  };
}

/** The cgroup memory limit, where Node reports one (0 or undefined otherwise). */
function constrainedMemory(): number | undefined {
  const fn = (process as { constrainedMemory?: () => number | undefined }).constrainedMemory;
  const limit = fn?.call(process);
  // Without a limit some platforms report a huge number: ignore anything above the machine.
  return limit && limit < totalmem() ? limit : undefined;
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
