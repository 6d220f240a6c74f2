/**
 * The blocking reader of `RedisStore({ blocking })` while Redis cannot be reached
 * (docs/adr/0021-realtime-streams.md): the waiting stream is woken when the read fails (it reads
 * the log itself, and fails there), and the reader's own connection does not print every
 * reconnect attempt to the console (ioredis does, for a connection without an `error` listener).
 * The blocking connection is a real ioredis client pointed at a port nothing listens on.
 */
import { Redis } from "ioredis";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";

describe("RedisStore waitForEvents during an outage", () => {
  const opened: Redis[] = [];
  afterEach(() => {
    for (const redis of opened.splice(0)) redis.disconnect();
    vi.restoreAllMocks();
  });

  it("wakes the waiter when the read fails, and keeps the console quiet", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const shared = new Redis("redis://127.0.0.1:6379", { lazyConnect: true });
    opened.push(shared);
    let refused: Redis | undefined;
    const blocking = {
      duplicate: () => {
        // Port 1: connection refused at once, retried every 20 ms, the read failed after 2.
        refused = new Redis({
          host: "127.0.0.1",
          port: 1,
          lazyConnect: true,
          maxRetriesPerRequest: 2,
          retryStrategy: () => 20,
        });
        opened.push(refused);
        return refused;
      },
    };
    const store = new RedisStore({ client: fromIoredis(shared), prefix: "swout", blocking });
    // Would end only at its 60 s timeout if the failed read did not wake it.
    await store.waitForEvents?.("1-0", 60_000, new AbortController().signal);
    expect(refused).toBeDefined();
    expect(errors.mock.calls.filter((c) => String(c[0]).includes("[ioredis]"))).toEqual([]);
    await store.close();
  });
});
