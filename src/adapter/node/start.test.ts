import { expect, test } from "vitest";
import { TickworkConfigError } from "../../core/errors.ts";
import type { Logger } from "../../engine/logger.ts";
import { StartError } from "./errors.ts";
import { type StartServerOptions, startServer } from "./start.ts";

const base: StartServerOptions = {
  handlers: {},
  dev: true,
  port: 0,
  signals: false,
  print: false,
};

// Each of these is refused before anything is opened or bound.
test.each<[string, Partial<StartServerOptions>, string]>([
  [
    "QStash without a public URL",
    { qstash: { token: "q", currentSigningKey: "c", nextSigningKey: "n" } },
    "QStash needs the public URL of this app to deliver to: set TICKWORK_PUBLIC_URL",
  ],
  [
    "the local queue with no worker route to deliver to",
    { roles: ["api", "tick"] },
    "which this server does not serve (its roles lack worker)",
  ],
  [
    "the local queue delivering elsewhere with a per-process key",
    { roles: ["tick"], publicUrl: "http://workers:8787" },
    "set the same TICKWORK_SIGNING_KEY (or signingKey) on every server",
  ],
  [
    "two stores",
    { redisUrl: "redis://127.0.0.1:1", upstash: { url: "http://127.0.0.1:1", token: "t" } },
    "pass one store",
  ],
  ["an unknown role", { roles: ["cron" as never] }, 'unknown role "cron"'],
  ["no API key outside dev", { dev: false, roles: ["observer"] }, "no API key configured"],
])("refuses %s", async (_name, options, message) => {
  const failed = await startServer({ ...base, ...options }).catch((error: unknown) => error);
  expect(failed).toBeInstanceOf(StartError);
  // One configuration error type on every platform; StartError is Node's name for it.
  expect(failed).toBeInstanceOf(TickworkConfigError);
  expect((failed as Error).message).toContain(message);
});

// Node runs a timer longer than 2^31 - 1 ms after 1 ms, and a negative or NaN one at once: a
// tick timer of 3e9 ms ticked about every millisecond, and a shutdown timeout of -1, NaN or
// Infinity cut the requests in flight as soon as shutdown began.
test.each<[string, Partial<StartServerOptions>, string]>([
  ["a tick period past Node's timer limit", { tickEveryMs: 3e9 }, "tickEveryMs"],
  ["a tick period of 0", { tickEveryMs: 0 }, "tickEveryMs"],
  ["a NaN tick period", { tickEveryMs: Number.NaN }, "tickEveryMs"],
  ["a negative shutdown timeout", { shutdownTimeoutMs: -1 }, "shutdownTimeoutMs"],
  ["a NaN shutdown timeout", { shutdownTimeoutMs: Number.NaN }, "shutdownTimeoutMs"],
  ["an infinite shutdown timeout", { shutdownTimeoutMs: Infinity }, "shutdownTimeoutMs"],
  [
    "a shutdown timeout past Node's timer limit",
    { shutdownTimeoutMs: 2 ** 31 },
    "shutdownTimeoutMs",
  ],
])("refuses %s, naming it", async (_name, options, field) => {
  const failed = await startServer({ ...base, ...options }).catch((error: unknown) => error);
  expect(failed).toBeInstanceOf(StartError);
  expect(failed).toMatchObject({ field });
  expect((failed as Error).message).toContain(field);
});

test("a refusal names the field and the variable at fault", async () => {
  const failed = await startServer({ ...base, publicUrl: "jobs.example.com" }).catch(
    (error: unknown) => error,
  );
  expect(failed).toBeInstanceOf(StartError);
  expect(failed).toMatchObject({
    message: "publicUrl (TICKWORK_PUBLIC_URL) is not a URL (it needs its scheme: https://…)",
    field: "publicUrl",
    variable: "TICKWORK_PUBLIC_URL",
  });
});

test("a tick-only server outside dev needs no API key; an unreachable Upstash fails the start", async () => {
  const failed = await startServer({
    ...base,
    dev: false,
    roles: ["tick"],
    publicUrl: "http://workers:8787",
    signingKey: "shared",
    upstash: { url: "http://127.0.0.1:1", token: "t" },
  }).catch((error: unknown) => error);
  expect(failed).toBeInstanceOf(StartError);
  expect((failed as Error).message).toContain("cannot use Upstash Redis at http://127.0.0.1:1/");
});

test("an observer needs nowhere to deliver; it serves reads only and runs no tick timer", async () => {
  const server = await startServer({ ...base, roles: ["observer"] });
  try {
    expect(server.banner).toContain("  roles      observer\n");
    expect(server.banner).toMatch(/ {2}tick {7}no timer here/);
    expect((await fetch(`${server.url}/v1/jobs`)).status).toBe(200);
    expect((await fetch(`${server.url}/v1/jobs`, { method: "POST" })).status).toBe(405);
    expect((await fetch(`${server.url}/v1/tick`)).status).toBe(404);
  } finally {
    await server.close();
  }
});

test("settings this server's transport or roles do not use are named in a warning", async () => {
  const warnings: string[] = [];
  const logger: Logger = {
    debug: () => {},
    info: () => {},
    warn: (message: string) => {
      warnings.push(message);
    },
    error: () => {},
    child: () => logger,
  };
  // The local queue (the memory store): no Streams worker pulls, and no QStash publishes.
  const server = await startServer({
    ...base,
    concurrency: 50,
    readAhead: 0,
    workerGroups: { default: "https://app.example.com/v1/worker" },
    engine: { logger },
  });
  await server.close();
  expect(warnings.filter((w) => w.includes("is set but not used"))).toEqual([
    expect.stringMatching(/^tickwork: TICKWORK_CONCURRENCY .* transport is local\)$/),
    expect.stringMatching(/^tickwork: TICKWORK_READ_AHEAD .* transport is local\)$/),
    expect.stringMatching(/^tickwork: TICKWORK_WORKER_GROUPS .* transport is local$/),
  ]);
  // What it uses draws no warning.
  warnings.length = 0;
  const used = await startServer({ ...base, signingKey: "k".repeat(32), engine: { logger } });
  await used.close();
  expect(warnings.filter((w) => w.includes("is set but not used"))).toEqual([]);
});
