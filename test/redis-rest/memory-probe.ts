/**
 * Preloaded (`node --expose-gc --import tsx --import ./test/redis-rest/memory-probe.ts …`) into a
 * process the tests start with an IPC channel: answers `{ type: "memory", gc?, resetPeak? }`
 * with the process's memory now (after two full collections when `gc`) and its peak since the
 * last reset, sampled every few milliseconds (and at every question).
 *
 * A question asked as soon as the test has read an answer can arrive before the server has seen
 * its own write of that answer complete: the request it answered is still referenced then (a
 * busy run measured a 10 MB pipeline's body and commands as 18.5 MB kept after collection). So
 * the collection waits for two more turns of the event loop first: the completions of writes the
 * peer has already read are delivered in the turn's I/O phase, which each turn passes through.
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
  const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
  process.on("message", async (message: { type?: string; gc?: boolean; resetPeak?: boolean }) => {
    if (message?.type !== "memory") return;
    sample();
    const seen = peak;
    const collect = (globalThis as { gc?: () => void }).gc;
    if (message.gc && collect) {
      await nextTurn();
      await nextTurn();
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
