/**
 * @module
 * The QStash double (`test/support/qstash-double/`) in a process of its own, so the server under
 * load does not share its event loop with it. It accepts publishes exactly as QStash does; its
 * deliveries go to a sink in this process that answers 200 without any network I/O (the benchmark
 * measures the publishing side, not a worker), unless started with the argument `deliver` (then
 * over real HTTP to their destinations, for the precision section). Requests: `counters`.
 */
import { startQStashDouble } from "../../test/support/qstash-double/index.ts";
import { serveParent } from "../lib/children.ts";

let sunk = 0;
// `deliver` (the precision section): deliveries go out over real HTTP, as QStash's do.
if (process.argv[2] !== "deliver") {
  // The double captures `globalThis.fetch` when it starts: replace it first with the sink.
  globalThis.fetch = async () => {
    sunk++;
    return new Response(null, { status: 200 });
  };
}

const double = await startQStashDouble();

serveParent(
  {
    url: double.url,
    token: double.token,
    currentSigningKey: double.currentSigningKey,
    nextSigningKey: double.nextSigningKey,
  },
  {
    counters: () => {
      const { batchSizes, ...rest } = double.counters;
      return { ...rest, batches: batchSizes.length, sunk };
    },
  },
);
