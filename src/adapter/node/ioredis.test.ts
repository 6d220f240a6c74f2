/**
 * `connectIoredis` against the shared Redis at 127.0.0.1:6379: a database written as anything
 * but a whole number is refused before anything is written (ioredis's `parseInt` read `/1e3` as
 * database 1), and a password Redis refuses is named as such (the first error, not the NOAUTH of
 * every command after it).
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StartError } from "./errors.ts";
import { connectIoredis, databaseWritten } from "./ioredis.ts";

const REDIS = "redis://127.0.0.1:6379";

describe("databaseWritten", () => {
  it("takes a whole number or nothing, in the path and in ?db=", () => {
    for (const url of [REDIS, `${REDIS}/`, `${REDIS}/0`, `${REDIS}/15`, `${REDIS}/3?db=3`]) {
      expect(databaseWritten(url), url).toBe(true);
    }
    for (const suffix of ["/1e3", "/0x3", "/5abc", "/4.9", "/-1", "/%31", "/?db=1e3", "/?db="]) {
      expect(databaseWritten(`${REDIS}${suffix}`), suffix).toBe(false);
    }
    expect(databaseWritten("rediss://user:pw@example.com:6380/2")).toBe(true);
    // Other forms are ioredis's to read (a socket path).
    expect(databaseWritten("/var/run/redis.sock")).toBe(true);
  });
});

describe("connectIoredis refusals", () => {
  const user = `tw-test-${randomUUID()}`;
  const admin = new Redis(REDIS);
  beforeAll(async () => {
    await admin.call("ACL", "SETUSER", user, "on", ">right-password", "~*", "+@all");
  });
  afterAll(async () => {
    await admin.call("ACL", "DELUSER", user);
    admin.disconnect();
  });

  it("refuses a database that is not written as a whole number, before it connects", async () => {
    for (const url of [`${REDIS}/1e3`, `${REDIS}/1abc`, `${REDIS}/?db=1.5`]) {
      const refused = connectIoredis({ url, purpose: "the test", maxRetriesPerRequest: 1 });
      await expect(refused, url).rejects.toBeInstanceOf(StartError);
      await expect(refused).rejects.toThrow(/must be a whole number/);
    }
  });

  it("names a refused password as Redis said it, not as a missing one", async () => {
    const refused = connectIoredis({
      url: `redis://${user}:wrong-password@127.0.0.1:6379/0`,
      purpose: "the test",
      maxRetriesPerRequest: 1,
    });
    await expect(refused).rejects.toThrow(/^cannot use Redis at .*: WRONGPASS /);
    await expect(refused).rejects.not.toThrow(/wrong-password/);
    const ok = await connectIoredis({
      url: `redis://${user}:right-password@127.0.0.1:6379/0`,
      purpose: "the test",
      maxRetriesPerRequest: 1,
    });
    expect(await ok.redis.ping()).toBe("PONG");
    await ok.close();
  });
});
