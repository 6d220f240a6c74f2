import { expect, test } from "vitest";
import { curlLines, formatBanner, NO_SUBMIT_ROUTE_LINE, redactRedisUrl } from "./banner.ts";

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

test("the banner names the roles, Upstash and QStash, and says when this server does not tick", () => {
  const banner = formatBanner({
    mode: "start",
    url: "http://127.0.0.1:8080",
    roles: ["api", "worker"],
    store: { upstashUrl: "https://eu1-fine-cat.upstash.io", prefix: "jobs" },
    transport: {
      kind: "qstash",
      baseUrl: "https://qstash.upstash.io",
      workerUrl: "https://jobs.example.com/v1/worker",
    },
    tickEveryMs: undefined,
    horizonMs: 1000,
    auth: true,
    handlers: ["echo"],
  });
  expect(banner).toContain("  roles      api, worker\n");
  expect(banner).toContain(
    '  store      upstash https://eu1-fine-cat.upstash.io/ (REST; key prefix "jobs")\n',
  );
  expect(banner).toContain(
    "  transport  QStash https://qstash.upstash.io, delivers to https://jobs.example.com/v1/worker\n",
  );
  expect(banner).toMatch(/ {2}tick {7}no timer here \(roles without tick\)/);
  expect(banner).toContain("  curl -sS -X POST http://127.0.0.1:8080/v1/jobs");
});

test("a server without the api role prints no curl lines and says where to submit", () => {
  const banner = formatBanner({
    mode: "start",
    url: "http://127.0.0.1:8080",
    roles: ["tick"],
    store: { redisUrl: "redis://cache:6379", prefix: "tw" },
    transport: { kind: "local", workerUrl: "http://workers:8787/v1/worker", sharedKey: true },
    tickEveryMs: 1000,
    horizonMs: 1000,
    auth: false,
    handlers: [],
  });
  expect(banner).toContain(
    "  transport  local queue, delivers to http://workers:8787/v1/worker (signed with TICKWORK_SIGNING_KEY)\n",
  );
  expect(banner).toContain("  tick       internal timer every 1 s, look-ahead 1 s\n");
  expect(banner).toMatch(/ {2}auth {7}no API routes here/);
  expect(banner).not.toContain("curl");
  expect(banner.trimEnd().endsWith(NO_SUBMIT_ROUTE_LINE)).toBe(true);
});
