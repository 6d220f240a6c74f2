import { expect, test } from "vitest";
import { curlLines, formatBanner, redactRedisUrl } from "./banner.ts";

test("redactRedisUrl drops the password and keeps the rest", () => {
  expect(redactRedisUrl("redis://user:secret@cache:6379/2")).toBe("redis://user@cache:6379/2");
  expect(redactRedisUrl("rediss://:secret@cache.internal:6380")).toBe(
    "rediss://cache.internal:6380",
  );
  expect(redactRedisUrl("redis://127.0.0.1:6379")).toBe("redis://127.0.0.1:6379");
  expect(redactRedisUrl("not a url")).toBe("(unparseable URL)");
});

test("the banner names store, transport, tick, auth and handlers, then the curl lines", () => {
  const url = "http://127.0.0.1:8787";
  const banner = formatBanner({
    mode: "dev",
    url,
    store: { redisUrl: "redis://:pw@h:6379", prefix: "tw" },
    tickEveryMs: 1000,
    horizonMs: 1000,
    auth: false,
    handlers: ["sleep", "echo"],
  });
  expect(banner).not.toContain("pw");
  expect(banner).toContain('store      redis redis://h:6379 (key prefix "tw")');
  expect(banner).toContain("handlers   echo, sleep");
  for (const line of curlLines(url, false)) expect(banner).toContain(`  ${line}\n`);
});

test("with auth, the curl lines send the key from the shell", () => {
  for (const line of curlLines("http://x:1", true)) {
    expect(line).toContain('-H "authorization: Bearer $TICKWORK_API_KEY"');
  }
});
