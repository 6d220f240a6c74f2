/**
 * A script client that counts its calls: each EVAL, EVALSHA or FCALL is one Redis round trip (a
 * FUNCTION LOAD travels with the FCALL after it). Used by the cost tests and the benchmarks to
 * count round trips at the client, where they happen.
 */
import type { ScriptClient } from "../../src/store/redis/index.ts";

/** Wrap `inner`; `counter.roundTrips` grows by one per call. */
export function countingClient(inner: ScriptClient): {
  client: ScriptClient;
  counter: { roundTrips: number };
} {
  const counter = { roundTrips: 0 };
  const client: ScriptClient = {
    evalsha: (...args) => {
      counter.roundTrips++;
      return inner.evalsha(...args);
    },
    eval: (...args) => {
      counter.roundTrips++;
      return inner.eval(...args);
    },
  };
  const { fcall, functionLoad } = inner;
  if (fcall && functionLoad) {
    client.fcall = (...args) => {
      counter.roundTrips++;
      return fcall(...args);
    };
    // Sent with the FCALL that follows it, in the same round trip (see `safeEval`).
    client.functionLoad = functionLoad;
  }
  return { client, counter };
}

/**
 * `inner` without Redis functions: scripts go as EVALSHA (EVAL on NOSCRIPT), as they do on
 * Upstash, whose billing the cost tests model. `functions.test.ts` checks that FCALL bills the
 * same commands, FCALL for EVALSHA.
 */
export function withoutFunctions(inner: ScriptClient): ScriptClient {
  return { evalsha: inner.evalsha, eval: inner.eval };
}
