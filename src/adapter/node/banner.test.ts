import { describe, expect, test } from "vitest";
import * as z from "zod";
import {
  curlLines,
  formatBanner,
  NO_HANDLERS_LINE,
  NO_SUBMIT_ROUTE_LINE,
  redactRedisUrl,
  sampleJob,
} from "./banner.ts";

test("redactRedisUrl drops the password, masks query values, and keeps the rest", () => {
  expect(redactRedisUrl("redis://user:secret@cache:6379/2")).toBe("redis://user@cache:6379/2");
  expect(redactRedisUrl("rediss://:secret@cache.internal:6380")).toBe(
    "rediss://cache.internal:6380",
  );
  expect(redactRedisUrl("redis://127.0.0.1:6379")).toBe("redis://127.0.0.1:6379");
  expect(redactRedisUrl("redis://cache:abc/0")).toBe("(unparseable URL)");
  // What ioredis takes without a scheme is shown as written, less a password.
  expect(redactRedisUrl("127.0.0.1:6379")).toBe("127.0.0.1:6379");
  expect(redactRedisUrl(":secret@cache:6379")).toBe("cache:6379");
  expect(redactRedisUrl("/tmp/redis.sock")).toBe("/tmp/redis.sock");
  // ioredis takes options from the query, a password too: every value is masked.
  expect(redactRedisUrl("redis://cache:6379/0?password=hunter2&family=6")).toBe(
    "redis://cache:6379/0?password=***&family=***",
  );
  expect(redactRedisUrl("redis://cache:6379?pass%77ord=hunter2")).not.toContain("hunter2");
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

test("with tenants' keys only, the auth line says to set $TICKWORK_API_KEY to one of them", () => {
  const info = { url: "http://x:1", store: "memory" as const, tickEveryMs: 1000, horizonMs: 1000 };
  const only = formatBanner({
    ...info,
    mode: "start",
    auth: true,
    tenants: 2,
    plainKeys: false,
    handlers: ["echo"],
  });
  expect(only).toContain(
    "  auth       API key required: a key of the 2 tenants in TICKWORK_CONFIG (the lines below send $TICKWORK_API_KEY: set it in your shell to one of them)\n",
  );
  const both = formatBanner({
    ...info,
    mode: "start",
    auth: true,
    tenants: 1,
    plainKeys: true,
    handlers: ["echo"],
  });
  expect(both).toContain(
    "  auth       API key required: Authorization: Bearer $TICKWORK_API_KEY (or a key of the 1 tenant in TICKWORK_CONFIG)\n",
  );
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

describe("the sample job of the curl lines", () => {
  const run = () => null;

  test("echo when registered, with {hello: world}", () => {
    expect(
      sampleJob({ sleep: { input: z.object({ ms: z.number() }), run }, echo: { run } }),
    ).toEqual({ handler: "echo", input: { hello: "world" } });
  });

  test("else the first handler whose schema takes {} or no input", () => {
    const handlers = {
      "email.send": { input: z.object({ to: z.email() }), run },
      report: { input: z.object({ day: z.string().optional() }), run },
      cleanup: { run },
    };
    expect(sampleJob(handlers)).toEqual({ handler: "report", input: {} });
    expect(sampleJob({ cleanup: { run }, report: handlers.report })).toEqual({
      handler: "cleanup",
    });
    // No input at all reaches the schema as null (what the broker stores).
    expect(sampleJob({ nightly: { input: z.null(), run } })).toEqual({ handler: "nightly" });
  });

  test("a placeholder when no cheap input passes, or a schema cannot decide synchronously", () => {
    const refined = z.object({}).refine(async () => true);
    expect(sampleJob({ "email.send": { input: z.object({ to: z.email() }), run } })).toEqual({
      handler: "email.send",
      placeholder: true,
    });
    expect(sampleJob({ slow: { input: refined, run } })).toEqual({
      handler: "slow",
      placeholder: true,
    });
    expect(sampleJob({})).toBeUndefined();
  });

  test("the banner submits and reads the sample's handler, never an unregistered one", () => {
    const url = "http://127.0.0.1:8787";
    const base = { mode: "dev" as const, url, store: "memory" as const, tickEveryMs: 1000 };
    const info = { ...base, horizonMs: 1000, auth: false };
    const report = formatBanner({
      ...info,
      handlers: ["report"],
      sample: { handler: "report", input: {} },
    });
    expect(report).toContain(
      `-d '{"handler":"report","input":{},"idempotencyKey":"hello-tickwork"}'`,
    );
    expect(report).toContain(`curl -sS '${url}/v1/jobs?handler=report&limit=1'`);
    expect(report).not.toContain("echo");

    // A sample naming a handler that is not registered is ignored.
    const stale = formatBanner({ ...info, handlers: ["mail"], sample: { handler: "echo" } });
    expect(stale).not.toContain("echo");
    expect(stale).toContain('"input":<input>');
    expect(stale).toContain("(replace <input> with an input mail accepts");
    expect(stale.trimEnd()).toMatch(/answers 200 with the same job\.$/);

    const none = formatBanner({ ...info, handlers: [] });
    expect(none).not.toContain("curl");
    expect(none.trimEnd().endsWith(NO_HANDLERS_LINE)).toBe(true);
  });

  test("quotes for the shell: a handler name with a quote stays one word", () => {
    const [submit, read] = curlLines("http://x:1", false, { handler: "it's" });
    expect(submit).toContain(`-d '{"handler":"it'\\''s","idempotencyKey":"hello-tickwork"}'`);
    expect(read).toBe(`curl -sS 'http://x:1/v1/jobs?handler=it'\\''s&limit=1'`);
  });
});

test("the banner shows the dashboard and metrics URLs where the server serves them", () => {
  const url = "http://127.0.0.1:8787";
  const info = { url, store: "memory" as const, tickEveryMs: 1000, horizonMs: 1000 };
  const dev = formatBanner({ ...info, mode: "dev", auth: false, handlers: ["echo"] });
  expect(dev).toContain(`  dashboard  ${url}/dashboard\n`);
  expect(dev).toContain(`  metrics    ${url}/metrics (Prometheus text)\n`);
  const keyed = formatBanner({ ...info, mode: "start", auth: true, handlers: ["echo"] });
  expect(keyed).toContain(`  metrics    ${url}/metrics (Prometheus text; needs the API key)\n`);
  const tickOnly = formatBanner({
    ...info,
    mode: "start",
    auth: false,
    roles: ["tick"],
    handlers: [],
  });
  expect(tickOnly).not.toContain("/dashboard");
  expect(tickOnly).not.toContain("/metrics");
});
