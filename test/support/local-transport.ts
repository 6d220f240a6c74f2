/**
 * @module
 * What the local transport's tests (`src/transport/local/local-transport*.test.ts`) share: a worker
 * that records what it is sent and answers per path — a real HTTP server, or in-process through
 * the transport's `deliver` option (for tests on fake timers, where nothing may depend on real
 * sockets or clocks) — transports and messages that are cleaned up after each test, and waits on
 * what the transport does rather than on time.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { Receiver } from "@upstash/qstash";
import { afterEach, expect, vi } from "vitest";
import {
  type LocalDeliveryError,
  LocalTransport,
  type LocalTransportOptions,
} from "../../src/transport/local/index.ts";

export const signingKey = "sig_local_current_key";
export const nextSigningKey = "sig_local_next_key";
export const receiver = new Receiver({ currentSigningKey: signingKey, nextSigningKey });

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Never answer (the client must abort). */
  hang?: boolean;
  /** Answer once this settles (the request counts as active until then). */
  after?: Promise<unknown>;
}

export type Route = (request: Received, index: number) => Reply;

/** A worker as the tests see it: what it was sent, and a wait for the `n`th request. */
export interface Worker {
  base: string;
  received: Received[];
  at(path: string): Received[];
  /** Resolves once `n` requests (any path) have arrived. */
  arrived(n: number): Promise<void>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  vi.useRealTimers();
});

/** Removes the cleanup registered last and runs it now (e.g. to close a server early). */
export async function cleanUpLast(): Promise<void> {
  await cleanups.pop()?.();
}

/** Records requests, answers them per path, and counts the ones not yet answered. */
function recorder(routes: Record<string, Route>) {
  const received: Received[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  let active = 0;
  let maxActive = 0;
  return {
    received,
    at: (path: string) => received.filter((r) => r.path === path),
    arrived(n: number): Promise<void> {
      if (received.length >= n) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
    maxActive: () => maxActive,
    /** Records `record`; resolves with the route's reply once it is due, never for `hang`. */
    async answer(record: Received): Promise<Reply> {
      const index = received.filter((r) => r.path === record.path).length;
      received.push(record);
      for (const waiter of waiters.filter((w) => received.length >= w.n)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      const route = routes[record.path];
      const reply = route ? route(record, index) : { status: 404 };
      if (reply.hang) return new Promise<Reply>(() => {});
      active++;
      maxActive = Math.max(maxActive, active);
      try {
        await reply.after;
      } finally {
        active--;
      }
      return reply;
    },
  };
}

/** A real HTTP server on 127.0.0.1:0 that records requests and answers per path. */
export async function startServer(routes: Record<string, Route>) {
  const worker = recorder(routes);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const record: Received = {
        method: req.method ?? "",
        path: req.url ?? "/",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      void worker.answer(record).then((reply) => {
        res.writeHead(reply.status, reply.headers);
        res.end(reply.body ?? "");
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return {
    base,
    received: worker.received,
    at: worker.at,
    arrived: worker.arrived,
    maxActive: worker.maxActive,
  } satisfies Worker & { maxActive(): number };
}

/**
 * A worker in-process, for the transport's `deliver` option: the same recording and routes as
 * {@link startServer}, no socket. A hanging answer ends when the transport aborts the request.
 */
export function inProcessWorker(routes: Record<string, Route>) {
  const worker = recorder(routes);
  const deliver = async (request: Request): Promise<Response> => {
    const record: Received = {
      method: request.method,
      path: new URL(request.url).pathname,
      headers: Object.fromEntries(request.headers),
      body: await request.text(),
    };
    const reply = await Promise.race([
      worker.answer(record),
      new Promise<never>((_, reject) => {
        const abort = () => reject(request.signal.reason);
        if (request.signal.aborted) abort();
        request.signal.addEventListener("abort", abort, { once: true });
      }),
    ]);
    return new Response(reply.body ?? null, {
      status: reply.status,
      ...(reply.headers ? { headers: reply.headers } : {}),
    });
  };
  return {
    base: "http://worker.local",
    received: worker.received,
    at: worker.at,
    arrived: worker.arrived,
    deliver,
  } satisfies Worker & { deliver: unknown };
}

/**
 * Fake `setTimeout` and `Date` (the transport's clock by default): a test moves time itself.
 * Call it before creating the transport; the real ones are back after each test.
 */
export function useFakeClock(): void {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
}

export function transport(options: Partial<LocalTransportOptions> & { workerUrl: string }) {
  const errors: LocalDeliveryError[] = [];
  const t = new LocalTransport({
    signingKey,
    nextSigningKey,
    backoff: () => 10,
    onError: (error) => errors.push(error),
    ...options,
  });
  cleanups.push(() => t.close());
  return Object.assign(t, { errors });
}

export { message } from "./messages.ts";

export function fromBase64(value: string): string {
  return Buffer.from(value, "base64").toString("utf8");
}

export function header(record: Received, name: string): string {
  return String(record.headers[name.toLowerCase()]);
}

export const ok: Route = () => ({ status: 200, body: "ok" });

export { gate } from "./gate.ts";

/**
 * Calls `onCall` for every call of the returned function first; `reached(n)` resolves once it has
 * been called `n` times. Wrap a callback the transport makes (e.g. `backoff`) to learn when it
 * got there.
 */
export function calls<A extends unknown[], R>(onCall: (...args: A) => R) {
  let count = 0;
  const waiters: { n: number; resolve: () => void }[] = [];
  const fn = (...args: A): R => {
    const result = onCall(...args);
    count++;
    for (const waiter of waiters.filter((w) => count >= w.n)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    return result;
  };
  const reached = (n: number): Promise<void> =>
    count >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }));
  return Object.assign(fn, { reached });
}

/**
 * Resolves once `condition()` holds, checked after each turn of the event loop; fails after `turns`
 * turns without it. For what the transport does once an in-process worker has answered (reading
 * the answer, settling the attempt, arming a retry): promise continuations, no I/O, so done within
 * a turn. Wait for the request to reach the worker first ({@link Worker.arrived}): signing it is
 * I/O, which takes any number of turns.
 */
export async function until(condition: () => boolean, what: string, turns = 1_000) {
  for (let i = 0; !condition(); i++) {
    if (i >= turns) throw new Error(`not reached after ${turns} event-loop turns: ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * On the fake clock ({@link useFakeClock}), with the transport's next attempt waiting: it has not
 * started `ms - 1` ms on (nothing more has left the pending list or reached the worker), it starts
 * at `ms`, and then reaches the worker.
 */
export async function expectStartAt(t: LocalTransport, worker: Worker, ms: number) {
  const pending = t.stats().pending;
  const arrived = worker.received.length;
  const started = () => t.stats().pending < pending || worker.received.length > arrived;
  await vi.advanceTimersByTimeAsync(ms - 1);
  expect(started(), `started before ${ms} ms`).toBe(false);
  await vi.advanceTimersByTimeAsync(1);
  expect(started(), `not started at ${ms} ms`).toBe(true);
  await worker.arrived(arrived + 1);
}
