/**
 * A worker that stops interrupts its blocked read. Redis may already have handed that read an
 * entry (it is pending with this consumer from then on): the read must still return it, so the
 * worker hands it back, rather than its connection being dropped with the reply unread, which
 * left the entry pending with a consumer that never ran it until another took it over
 * (`claimIdleMs`, 30 s). Seen in a graceful SIGTERM of `tickwork start --role worker` right after
 * a batch submit. The interrupt here comes as the entry's publish is answered, which is when
 * Redis has written the blocked read's reply too; on a private redis-server, so that the blocked
 * read is seen in `CLIENT LIST`.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterEach, expect, it } from "vitest";
import { RedisStreams } from "../../src/store/redis/index.ts";
import { message } from "../support/messages.ts";
import { startRedisServer } from "../support/redis-server.ts";

const opened: Redis[] = [];
afterEach(() => {
  for (const redis of opened.splice(0)) redis.disconnect();
});

it("an interrupted read returns what Redis handed it: nothing is left pending unread", async () => {
  const server = await startRedisServer();
  try {
    const redis = new Redis(server.url);
    const admin = new Redis(server.url);
    opened.push(redis, admin);
    const prefix = `interrupt-${randomUUID()}`;
    const streams = new RedisStreams({ redis, prefix, consumer: "c1" });
    await streams.open();
    const stream = `{${prefix}}:q`;
    let published = 0;
    let returned = 0;
    let stranded = 0;
    for (let round = 0; round < 300; round++) {
      const pulling = streams.pull(10, 60_000);
      // Blocked in its read (the first round's maintenance comes before it).
      await expect
        .poll(async () => /cmd=xreadgroup/.test(String(await admin.client("LIST"))))
        .toBe(true);
      await streams.publish([message()]).then(() => streams.interrupt());
      published++;
      const got = await pulling;
      returned += got.length;
      await streams.ack(got.map((m) => m.id));
      // Whatever is still pending was handed to this consumer and never returned.
      const [count] = (await admin.call("XPENDING", stream, "tickwork")) as [number];
      if (count > 0) {
        stranded += count;
        const ids = (await admin.call("XPENDING", stream, "tickwork", "-", "+", 100)) as [string][];
        await admin.call("XACK", stream, "tickwork", ...ids.map(([id]) => id));
      }
    }
    // What no interrupted read took is still on the stream for the next read.
    for (;;) {
      const rest = await streams.pull(100, 10);
      if (rest.length === 0) break;
      returned += rest.length;
      await streams.ack(rest.map((m) => m.id));
    }
    expect(stranded).toBe(0);
    expect(returned).toBe(published);
    await streams.close();
  } finally {
    await server.stop();
  }
});
