/**
 * A real server for the HTTP tests: the app over an engine on a given store, served as `tickwork
 * start` serves it (`serve` of tickwork/node; or `@hono/node-server` alone, `via: "hono"`) on a
 * free loopback port, called with `fetch`. By default the engine uses the
 * real `LocalTransport`, delivering over HTTP to the app's own `/v1/worker` and `/v1/dead`, as the
 * dev server does.
 */

import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve as honoServe } from "@hono/node-server";
import type { Hono } from "hono";
import { expect } from "vitest";
import { z } from "zod";
import { serve } from "../../src/adapter/node/serve.ts";
import { hashKey } from "../../src/config/keys.ts";
import type { TenantConfig } from "../../src/config/schema.ts";
import { NonRetryableError } from "../../src/core/errors.ts";
import {
  createEngine,
  type Engine,
  type EngineOptions,
  type Handlers,
  silentLogger,
} from "../../src/engine/index.ts";
import { type AppEnv, type AppOptions, createApp } from "../../src/http/index.ts";
import type { Store } from "../../src/store/port.ts";
import { LocalTransport } from "../../src/transport/local/index.ts";
import type { Transport } from "../../src/transport/port.ts";

export const SIGNING_KEY = "sig_test_current";

export interface Harness {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  engine: Engine;
  store: Store;
  /** The local transport, when the harness made one. */
  local?: LocalTransport;
  close(): Promise<void>;
}

export interface HarnessOptions {
  store: Store;
  handlers: Handlers;
  /** Replace the local transport (e.g. with a `ChaosQueue`). */
  transport?: Transport;
  /** Base path the transport delivers under (when the app has one). */
  basePath?: string;
  app?: Omit<AppOptions, "engine">;
  engine?: EngineOptions;
  /**
   * Serve the app through an app of the caller's own, e.g.
   * `(app) => new Hono().route("/api/tickwork", app)` (then pass that prefix as `basePath`).
   */
  wrap?: (app: Hono<AppEnv>) => { fetch(request: Request): Response | Promise<Response> };
  /**
   * The server: `tickwork` (default) is `serve` of tickwork/node, as `tickwork start` runs it (the
   * submit route answered directly, src/http/direct-submit.ts); `hono` is `@hono/node-server`
   * alone (every request through `app.fetch`).
   */
  via?: "tickwork" | "hono";
}

/** Start the app on a free port. */
export async function startHarness(options: HarnessOptions): Promise<Harness> {
  let handler: (request: Request) => Response | Promise<Response> = () =>
    new Response(null, { status: 503 });
  let served: { fetch(request: Request): Response | Promise<Response> } | undefined;
  let server: Server;
  if (options.via === "hono") {
    server = honoServe({
      fetch: (request) => handler(request),
      port: 0,
      hostname: "127.0.0.1",
    }) as Server;
    if (!server.listening) await new Promise((resolve) => server.once("listening", resolve));
  } else {
    // As `tickwork start` serves it: the app's submit route answered directly (./direct-submit).
    const placeholder = { fetch: (request: Request) => handler(request) };
    const node = await serve(() => served ?? placeholder, {
      port: 0,
      signals: false,
      log: () => {},
    });
    server = node.server;
  }
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const base = `${origin}${options.basePath ?? options.app?.basePath ?? ""}`;
  const local = options.transport
    ? undefined
    : new LocalTransport({
        workerUrl: `${base}/v1/worker`,
        failureCallbackUrl: `${base}/v1/dead`,
        signingKey: SIGNING_KEY,
        backoff: () => 30,
        onError: () => {},
      });
  const engine = createEngine({
    store: options.store,
    transport: options.transport ?? local!,
    handlers: options.handlers,
    logger: silentLogger,
    leaseGraceMs: 100,
    tick: { horizonMs: 1_500 },
    ...options.engine,
  });
  const app = createApp({ engine, dev: true, ...options.app });
  served = options.wrap ? options.wrap(app) : app;
  handler = (request) => served!.fetch(request);
  return {
    origin,
    engine,
    store: options.store,
    ...(local ? { local } : {}),
    async close() {
      await local?.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** An answer, its body parsed as JSON when it is JSON. */
export interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely
  body: any;
}

/** `fetch` a path of `origin`; a `json` body is sent as `application/json`. */
export async function call(
  origin: string,
  method: string,
  path: string,
  init: {
    json?: unknown;
    headers?: Record<string, string>;
    body?: BodyInit;
    signal?: AbortSignal;
  } = {},
): Promise<Answer> {
  const headers = new Headers(init.headers);
  let body = init.body;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    if (!headers.has("content-type")) headers.set("content-type", "application/json");
  }
  const res = await fetch(`${origin}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body } : {}),
    ...(init.signal ? { signal: init.signal } : {}),
    ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
  } as RequestInit);
  const text = await res.text();
  const type = res.headers.get("content-type") ?? "";
  return {
    status: res.status,
    headers: res.headers,
    body: type.includes("json") && text ? JSON.parse(text) : text,
  };
}

/** Assert an RFC 9457 problem answer with `status`. */
export function expectProblem(answer: Answer, status: number, detail?: RegExp): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  expect(answer.headers.get("content-type")).toBe("application/problem+json");
  expect(answer.headers.get("x-request-id")).toBeTruthy();
  expect(answer.body).toMatchObject({
    status,
    type: expect.stringMatching(/^urn:tickwork:problem:[a-z_]+$/),
  });
  expect(typeof answer.body.title).toBe("string");
  expect(typeof answer.body.detail).toBe("string");
  for (const key of Object.keys(answer.body)) {
    expect(["type", "title", "status", "detail", "errors"]).toContain(key);
  }
  if (answer.body.errors !== undefined) {
    expect(answer.body.errors.length).toBeGreaterThan(0);
    for (const issue of answer.body.errors)
      expect(issue).toEqual({ path: expect.any(String), message: expect.any(String) });
  }
  if (detail) expect(answer.body.detail).toMatch(detail);
}

/** Everything a client can see in the store, to show that a refused request changed nothing. */
export async function snapshot(store: Store): Promise<string> {
  const [jobs, schedules, dead] = await Promise.all([
    store.listJobs({ limit: 100 }),
    store.listSchedules({ limit: 100 }),
    store.listDead({ limit: 100 }),
  ]);
  return JSON.stringify({ jobs, schedules, dead });
}

/** Wait until `check` holds (polling), or fail after `ms`. */
export async function until(check: () => Promise<boolean> | boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Handlers the HTTP tests use, the switch of the `gated` one, and the latch of the `latched` one:
 * it runs until the test calls `latch.release()`; `latch.running` resolves once a run began.
 */
export function testHandlers() {
  const gate = { open: false };
  let began!: () => void;
  let release!: () => void;
  const latch = {
    running: new Promise<void>((resolve) => {
      began = resolve;
    }),
    released: new Promise<void>((resolve) => {
      release = resolve;
    }),
    release: () => release(),
  };
  const runs: { handler: string; jobId: string; attempt: number }[] = [];
  const handlers: Handlers = {
    echo: {
      run: (input, ctx) => {
        runs.push({ handler: "echo", jobId: ctx.jobId, attempt: ctx.attempt });
        return input;
      },
    },
    flaky: {
      run: (input, ctx) => {
        if (ctx.attempt <= (input as { times: number }).times)
          throw new Error(`fail #${ctx.attempt}`);
        return { attempt: ctx.attempt };
      },
    },
    gated: {
      run: () => {
        if (!gate.open) throw new NonRetryableError("the gate is closed");
        return "passed";
      },
    },
    hold: {
      run: async (input, ctx) => {
        runs.push({ handler: "hold", jobId: ctx.jobId, attempt: ctx.attempt });
        await new Promise((r) => setTimeout(r, (input as { ms: number }).ms));
        return "held";
      },
    },
    latched: {
      run: async (_input, ctx) => {
        runs.push({ handler: "latched", jobId: ctx.jobId, attempt: ctx.attempt });
        began();
        await latch.released;
        return "held";
      },
    },
    typed: { input: z.object({ n: z.number() }), run: ({ n }: { n: number }) => n * 2 },
  };
  return { handlers, gate, latch, runs };
}

/**
 * Tenants `t1` and `t2`, each with one key (`t1-key`, `t2-key`) that may read, submit and change
 * schedules.
 */
export async function twoTenants(): Promise<TenantConfig[]> {
  const key = async (id: string) => ({
    hash: await hashKey(`${id}-key`),
    scopes: ["read", "jobs:write", "schedules:write"] as (
      | "read"
      | "jobs:write"
      | "schedules:write"
    )[],
  });
  return [
    { id: "t1", keys: [await key("t1")] },
    { id: "t2", keys: [await key("t2")] },
  ];
}
