/**
 * `npm run dev` as a developer meets it: start it, read the banner, paste its two curl lines
 * (run here exactly as printed, through a shell), in memory and with REDIS_URL.
 */
import { execSync } from "node:child_process";
import { afterAll, describe, expect, test } from "vitest";
import {
  type DevServer,
  deletePrefix,
  REDIS_URL,
  randomPrefix,
  startDevServer,
  waitFor,
} from "./server.ts";

/** Run one banner line in a shell, exactly as printed; its stdout. */
function paste(line: string): string {
  return execSync(line, { encoding: "utf8", shell: "/bin/sh", timeout: 10_000 });
}

interface Job {
  id: string;
  handler: string;
  status: string;
  input?: unknown;
  result?: unknown;
  attempts: number;
}

async function checkBanner(
  server: DevServer,
  store: RegExp,
  transport: "local" | "streams" = "local",
): Promise<void> {
  const { banner, url, curls } = server;
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(banner).toMatch(store);
  // Redis over TCP without QStash: Redis Streams; otherwise the local queue.
  if (transport === "streams") expect(banner).toMatch(/transport {2}Redis Streams \(durable;/);
  else expect(banner).toContain(`transport  local queue, delivers to ${url}/v1/worker`);
  expect(banner).toContain("tick       internal timer every 1 s, look-ahead 2 s");
  expect(banner).toMatch(/auth {7}OFF \(dev mode\)/);
  expect(banner).toContain("handlers   echo, fail, sleep");
  expect(curls).toHaveLength(2);

  // Line 1 submits an echo job with a fixed idempotency key.
  const first = JSON.parse(paste(curls[0]!)) as Job;
  expect(first).toMatchObject({ handler: "echo", status: "queued", attempts: 0 });
  expect(first.id).toMatch(/^j_/);

  // Line 2 shows the newest echo job: the same one, with its result once it has run.
  const shown = await waitFor(async () => {
    const page = JSON.parse(paste(curls[1]!)) as { items: Job[] };
    const job = page.items[0];
    return job?.status === "succeeded" ? job : undefined;
  }, "the echo job to succeed");
  expect(shown).toMatchObject({
    id: first.id,
    handler: "echo",
    input: { hello: "world" },
    result: { hello: "world" },
    attempts: 1,
  });

  // Pasting line 1 again is safe: the same job comes back.
  const again = JSON.parse(paste(curls[0]!)) as Job;
  expect(again.id).toBe(first.id);
}

describe.concurrent("npm run dev", () => {
  const servers: DevServer[] = [];
  const prefixes: string[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await Promise.all(prefixes.map(deletePrefix));
  });

  test("in memory: the banner's curl lines work as printed", async () => {
    const server = await startDevServer({ command: "npm" });
    servers.push(server);
    await checkBanner(
      server,
      /store {6}memory \(state is lost on restart; set REDIS_URL or UPSTASH_REDIS_REST_URL to keep it\)/,
    );
  });

  test("with REDIS_URL: the banner shows Redis and Redis Streams, and its curl lines work as printed", async () => {
    const prefix = randomPrefix();
    prefixes.push(prefix);
    const server = await startDevServer({ env: { REDIS_URL, TICKWORK_PREFIX: prefix } });
    servers.push(server);
    await checkBanner(
      server,
      new RegExp(`store {6}redis redis://127\\.0\\.0\\.1:6379 \\(key prefix "${prefix}"\\)`),
      "streams",
    );
  });

  test("a password in REDIS_URL is not printed", async () => {
    const prefix = randomPrefix();
    prefixes.push(prefix);
    // The local Redis has no password; ioredis logs a warning and connects anyway.
    const server = await startDevServer({
      env: { REDIS_URL: "redis://:hunter2@127.0.0.1:6379", TICKWORK_PREFIX: prefix },
    });
    servers.push(server);
    expect(server.banner).toContain("store      redis redis://127.0.0.1:6379 (key prefix");
    expect(server.output()).not.toContain("hunter2");
  });

  test("SIGTERM shuts down gracefully: exit code 0", async () => {
    const server = await startDevServer();
    const code = await server.stop();
    expect(server.output()).toContain("SIGTERM, shutting down");
    expect(code).toBe(0);
  });
});
