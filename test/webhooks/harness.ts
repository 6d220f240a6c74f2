/**
 * Shared by the webhook endpoint tests: what a test can see stored, and a handler that records
 * every run's input.
 */
import type { Handlers } from "../../src/engine/index.ts";
import type { Store } from "../../src/store/port.ts";

/** Everything a test can see stored: the default tenant's jobs, the events, and Redis keys. */
export async function footprint(store: Store, keys?: () => Promise<number>) {
  const jobs = await store.listJobs({ tenant: "default", limit: 100 });
  const events = await store.events({ limit: 1_000 });
  return { jobs: jobs.items.length, events: events.events.length, keys: keys ? await keys() : 0 };
}

/** A handler that records every run's input. */
export function recordingHandlers() {
  const runs: unknown[] = [];
  const handlers: Handlers = {
    "hook.receive": {
      run: async (input: unknown) => {
        runs.push(input);
        return { ok: true };
      },
    },
  };
  return { runs, handlers };
}
