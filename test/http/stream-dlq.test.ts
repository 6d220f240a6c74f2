/**
 * The stream of a job retried from the dead-letter list follows the new run: the log holds the
 * old `job.dead`, then `job.retried` and the new attempt, so `dead` is not the end. Before, the
 * stream stopped at the first final status it read and sent `done` with a job still running. On
 * memory, Redis over TCP and `@upstash/redis` (polled), over a real socket; every wait is on an
 * update or a status.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createClient } from "../../src/client/index.ts";
import { NonRetryableError } from "../../src/core/errors.ts";
import type { Handlers } from "../../src/engine/handlers.ts";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { runJobStream } from "../../src/http/stream/job-stream.ts";
import { resolveStreamConfig } from "../../src/http/stream/sse.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { recordingTransport } from "../support/recording-transport.ts";
import type { StoreHandle } from "../support/stores.ts";
import { call, type Harness, startHarness, until } from "./harness.ts";
import { streamStores as factories } from "./stream-stores.ts";

describe.each(factories)(
  "the stream of a job retried from the dead-letter list on $name",
  (factory) => {
    let handle: StoreHandle;
    let h: Harness;
    let fail = true;
    let open: () => void = () => {};
    const gated = new Promise<void>((resolve) => {
      open = resolve;
    });
    const handlers: Handlers = {
      flaky: {
        retries: 0,
        run: async () => {
          if (fail) throw new NonRetryableError("boom");
          await gated;
          return "ok";
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

    it("goes on past the old `dead` to the new run's end", async () => {
      const client = createClient({ url: h.origin });
      const job = await client.jobs.submit({ handler: "flaky" });
      await until(async () => (await job.status()).status === "dead");
      fail = false;
      expect((await call(h.origin, "POST", `/v1/dlq/${job.id}/retry`)).status).toBe(202);
      await until(async () => (await job.status()).status === "running");
      const seen: string[] = [];
      for await (const update of job.updates()) {
        if (update.type === "status") {
          seen.push(`status:${update.status}`);
          // The new run began: let it finish.
          if (update.status === "running" && seen.includes("status:dead")) open();
        } else if (update.type === "done") seen.push(`done:${update.job.status}`);
      }
      expect(seen.slice(seen.indexOf("status:dead"))).toEqual([
        "status:dead",
        "status:queued",
        "status:running",
        "status:succeeded",
        "done:succeeded",
      ]);
    });
  },
);

describe("the stream of a dead job retried between the record read and the log read", () => {
  it("follows the log's job.retried rather than the record's stale dead", async () => {
    // Each round reads the record, then the log: a retry that lands between the two must not
    // end the stream on the record's `dead`.
    const store = new MemoryStore();
    const engine = createEngine({
      store,
      transport: recordingTransport(),
      handlers: { h: { run: async () => 1 } },
      logger: silentLogger,
    });
    const { job } = await engine.broker.submit({ handler: "h" });
    await store.markDead(job, { name: "E", message: "boom" });
    const dead = await engine.broker.getJob(job.id);
    expect(dead.status).toBe("dead");
    const events = store.events.bind(store);
    let retried = false;
    store.events = async (query) => {
      if (!retried) {
        retried = true;
        await engine.broker.retryDead(job.id);
      }
      return events(query);
    };
    const sent: string[] = [];
    const abort = new AbortController();
    await runJobStream({
      engine,
      config: resolveStreamConfig({ maxMs: 1_000, pollMs: 50 }),
      actor: {},
      id: job.id,
      job: dead,
      resume: undefined,
      signal: abort.signal,
      out: {
        event: (name, _id, data) => {
          sent.push(`${name}:${(data as { status?: string }).status}`);
          // Following the retried job: enough seen.
          if (sent.length === 3) abort.abort();
        },
        comment: () => {},
        position: () => {},
        idleMs: () => 0,
      },
    });
    expect(sent).toEqual(["status:queued", "status:dead", "status:queued"]);
  });
});
