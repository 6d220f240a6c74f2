/**
 * Cost on the production path, counted at the wire through a counting `fetch`: REST requests of
 * `@upstash/redis` (through the bridge) and QStash requests (to the double) for one tick.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { RedisStore } from "../../src/store/redis/index.ts";
import { scripts } from "../../src/store/redis/scripts.generated.ts";
import { QStashTransport } from "../../src/transport/qstash/index.ts";
import { scheduleRecord } from "../contract/fixtures.ts";
import { deletePrefix, freshPrefix, sharedBridge, upstashClient } from "../redis-rest/harness.ts";
import { type QStashDouble, startQStashDouble } from "../support/qstash-double/index.ts";

let qstash: QStashDouble;
let bridgeUrl: string;
const counts = { rest: 0, qstash: 0 };
const realFetch = globalThis.fetch;

beforeAll(async () => {
  qstash = await startQStashDouble({ backoffScale: 0.001 });
  bridgeUrl = (await sharedBridge()).url;
  // Steady state: every script cached, so no NOSCRIPT → EVAL second request is counted. Loaded
  // through the bridge, which runs scripts in its sandbox under SHA-1s of its own.
  const rest = await upstashClient();
  for (const script of Object.values(scripts)) await rest.scriptLoad(script.source);
  globalThis.fetch = (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (url.startsWith(bridgeUrl)) counts.rest++;
    if (url.startsWith(qstash.url)) counts.qstash++;
    return realFetch(input, init);
  };
});

afterAll(async () => {
  globalThis.fetch = realFetch;
  await qstash?.close();
});

/** A due-able "1h" schedule with a given id and next run. */
function schedule(id: string, nextRunAt: number) {
  return scheduleRecord({
    id,
    handler: "work",
    schedule: "1h",
    input: null,
    nextRunAt,
    // Anchored at its first occurrence: the next one is an hour after it, whatever the time of
    // day (anchored at the hour, a run in the minute before one crossed it between the ticks).
    startAt: nextRunAt,
    rev: 0,
    runs: 0,
  });
}

describe("production-path cost, counted at the wire", () => {
  it("a tick with M due makes <= ceil(M/100) QStash requests and a constant number of REST requests per chunk; an idle tick <= 3", async () => {
    const prefix = freshPrefix("cost");
    try {
      // Auto-pipelining off: each store call is then exactly one REST request.
      const store = new RedisStore({
        client: await upstashClient({ enableAutoPipelining: false }),
        prefix,
      });
      const engine = createEngine({
        store,
        transport: new QStashTransport({
          token: qstash.token,
          baseUrl: qstash.url,
          workerUrl: "http://127.0.0.1:9/v1/worker",
          currentSigningKey: qstash.currentSigningKey,
          nextSigningKey: qstash.nextSigningKey,
        }),
        handlers: { work: { run: () => null } },
        logger: silentLogger,
        // No look-ahead: only the occurrence due now is dispatched, not the next one's too.
        tick: { horizonMs: 0 },
      });
      const M = 250;
      const dueAt = (await store.now()) - 1_000;
      await Promise.all(
        Array.from({ length: M }, (_, i) => store.putSchedule(schedule(`s${i}`, dueAt))),
      );

      counts.rest = 0;
      counts.qstash = 0;
      const result = await engine.ticker.tick();
      const busy = { ...counts };
      counts.rest = 0;
      counts.qstash = 0;
      const idle = await engine.ticker.tick();
      console.log("tick with", M, "due:", busy, result, "idle tick:", { ...counts });

      expect(result).toMatchObject({ leader: true, dispatched: M });
      const chunks = Math.ceil(M / engine.options.tick.chunk);
      expect(busy.qstash).toBeLessThanOrEqual(Math.ceil(M / 100));
      // begin (1) + per chunk: commit (1) + next/ack or end (1)
      expect(busy.rest).toBe(1 + 2 * chunks);
      expect(idle).toMatchObject({ idle: true });
      expect(counts.rest).toBeLessThanOrEqual(3);
      expect(counts.qstash).toBe(0);
    } finally {
      await deletePrefix(prefix);
    }
  });
});
