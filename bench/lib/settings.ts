/**
 * @module
 * Settings shared by the benchmark's sections and its server processes.
 */
import type { DegradationOptions } from "../../src/engine/options.ts";

/** Thresholds no benchmark reaches. */
const NEVER = { normal: 1e12, degraded: 2e12, critical: 4e12 };

/**
 * The degradation controller as the submit benchmark runs it: on (it evaluates inside every
 * submit, as in production) but unable to leave `normal`. The submit benchmark's jobs are
 * published and never started, so with the default thresholds its own backlog would turn the
 * controller `critical` within a second and every later submit would be rejected with 503.
 */
export const BENCH_DEGRADATION: DegradationOptions = {
  queueDepth: NEVER,
  lagMs: NEVER,
  failureRate: NEVER,
  cpu: NEVER,
  memory: NEVER,
};

/** The job every submit benchmark contender receives. */
export const SUBMIT_BODY = JSON.stringify({ handler: "bench.work", input: { n: 1 } });

/**
 * The API key the tickwork contender requires (`Authorization: Bearer`), as production does. The
 * load generator sends it to every contender; the others ignore it.
 */
export const BENCH_API_KEY = "bench-0123456789abcdef0123456789abcdef";
