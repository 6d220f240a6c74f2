/**
 * Preloaded (`node --expose-gc --import tsx --import ./test/redis-rest/memory-probe.ts …`) into a
 * process the tests start with an IPC channel: answers `{ type: "memory", gc?, resetPeak? }`
 * with the process's memory now (after two full collections when `gc`) and its peak since the
 * last reset, sampled every few milliseconds (and at every question).
 *
 * What a request held can outlive its answer for a moment; the test asks again until the memory
 * is back under its bound (`measure` in limits.test.ts).
 */

interface Usage {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

function usage(): Usage {
  const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
  return { rss, heapUsed, external, arrayBuffers };
}

if (typeof process.send === "function") {
  let peak = usage();
  const sample = () => {
    const now = usage();
    peak = {
      rss: Math.max(peak.rss, now.rss),
      heapUsed: Math.max(peak.heapUsed, now.heapUsed),
      external: Math.max(peak.external, now.external),
      arrayBuffers: Math.max(peak.arrayBuffers, now.arrayBuffers),
    };
  };
  setInterval(sample, 5).unref();
  process.on("message", (message: { type?: string; gc?: boolean; resetPeak?: boolean }) => {
    if (message?.type !== "memory") return;
    sample();
    const seen = peak;
    const collect = (globalThis as { gc?: () => void }).gc;
    if (message.gc && collect) {
      collect();
      collect();
    }
    const now = usage();
    if (message.resetPeak) peak = now;
    process.send?.({ type: "memory", now, peak: seen });
  });
  // The channel must not keep the process alive: SIGTERM ends it as usual.
  process.channel?.unref();
}
