/**
 * A script client that counts its calls: each EVAL or EVALSHA is one Redis round trip. Used by the
 * cost tests and the benchmarks to count round trips at the client, where they happen.
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
  return { client, counter };
}
