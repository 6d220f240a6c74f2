/**
 * A job stream tells `waiting` from `queued` by the status its job was stored with (the
 * `job.created` event's `status`), not by whether it names dependencies: a job whose dependencies
 * had all succeeded is stored `queued` and never waited, and one whose dependency had failed is
 * cancelled at once. On memory, Redis over TCP and `@upstash/redis`, over a real socket.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createClient } from "../../src/client/index.ts";
import { NonRetryableError } from "../../src/core/errors.ts";
import type { Handlers } from "../../src/engine/handlers.ts";
import type { StoreHandle } from "../support/stores.ts";
import { type Harness, startHarness, until } from "./harness.ts";
import { streamStores as factories } from "./stream-stores.ts";

describe.each(factories)("the stream of a job with dependencies on $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;
  let open: () => void = () => {};
  const handlers: Handlers = {
    echo: { run: async (input) => input },
    broken: {
      retries: 0,
      run: async () => {
        throw new NonRetryableError("boom");
      },
    },
    gated: {
      run: async () => {
        await new Promise<void>((resolve) => {
          open = resolve;
        });
        return "opened";
      },
    },
  };

  beforeEach(async () => {
    handle = await factory.make();
    h = await startHarness({
      store: handle.store,
      handlers,
      app: { stream: { pollMs: 50, retryMs: 20 } },
    });
  });

  afterEach(async () => {
    open();
    await h?.close();
    await handle?.cleanup();
  });

  /** Every update of the job's stream, to its `done`, as `status:<status>:<event>`. */
  async function updates(id: string, onStatus: (status: string) => void = () => {}) {
    const client = createClient({ url: h.origin });
    const seen: string[] = [];
    for await (const update of client.jobs.handle(id).updates()) {
      if (update.type === "status") {
        seen.push(`status:${update.status}:${update.event ?? "-"}`);
        onStatus(update.status);
      } else if (update.type === "done") seen.push(`done:${update.job.status}`);
    }
    return seen;
  }

  it("dependencies that had succeeded: queued from the start, never waiting", async () => {
    const client = createClient({ url: h.origin });
    const a = await client.jobs.submit({ handler: "echo", input: 1 });
    expect(await a.result({ timeout: "20s" })).toBe(1);
    const b = await client.jobs.submit({ handler: "echo", input: 2, after: [a.id] });
    const seen = await updates(b.id);
    expect(seen[0]).toBe("status:queued:job.created");
    expect(seen).not.toContain("status:waiting:job.created");
    expect(seen.at(-1)).toBe("done:succeeded");
  });

  it("a dependency that had failed: cancelled, never waiting nor queued", async () => {
    const client = createClient({ url: h.origin });
    const a = await client.jobs.submit({ handler: "broken" });
    await until(async () => (await a.status()).status === "dead");
    const b = await client.jobs.submit({ handler: "echo", after: [a.id] });
    expect(await updates(b.id)).toEqual(["status:cancelled:job.cancelled", "done:cancelled"]);
  });

  it("an unfinished dependency: waiting, then queued once it succeeds", async () => {
    const client = createClient({ url: h.origin });
    const a = await client.jobs.submit({ handler: "gated" });
    await until(async () => (await a.status()).status === "running");
    const b = await client.jobs.submit({ handler: "echo", input: 3, after: [a.id] });
    const seen = await updates(b.id, (status) => {
      if (status === "waiting") open();
      // Released, it is due now: the tick's recover step publishes it (the harness has no timer).
      if (status === "queued") void h.engine.ticker.tick();
    });
    expect(seen.slice(0, 2)).toEqual(["status:waiting:job.created", "status:queued:-"]);
    expect(seen.at(-1)).toBe("done:succeeded");
  });
});
