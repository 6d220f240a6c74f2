/**
 * The client's `timeout` against a server that accepts connections and never answers, over real
 * TCP: a call is cut and rejects with `RequestTimeoutError`; an update stream that never opens
 * is cut each time and, its retries spent, throws the same; the caller's own signal still wins.
 */
import { createServer as createHttpServer } from "node:http";
import { createServer, type Socket } from "node:net";
import { createClient, RequestTimeoutError } from "tickwork/client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

let url: string;
const sockets = new Set<Socket>();
/** Connections the silent server accepted (each request makes one or reuses one). */
let accepted = 0;
const silent = createServer((socket) => {
  accepted++;
  sockets.add(socket);
  socket.on("close", () => sockets.delete(socket));
  socket.on("error", () => {});
});

beforeAll(async () => {
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  const address = silent.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  url = `http://127.0.0.1:${address.port}`;
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => silent.close(() => resolve()));
});

describe.concurrent("the client's timeout", () => {
  test("a call with no answer is cut and rejects with RequestTimeoutError", async () => {
    const tw = createClient({ url, timeout: "300ms" });
    const error = await tw.jobs.get("j_any").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect((error as RequestTimeoutError).timeoutMs).toBe(300);
    expect((error as Error).message).toMatch(/GET \/v1\/jobs\/j_any.*300 ms/);
    const submit = await tw.jobs.submit({ handler: "echo" }).catch((e: unknown) => e);
    expect(submit).toBeInstanceOf(RequestTimeoutError);
  });

  test("the caller's signal still aborts first, with its own reason", async () => {
    const tw = createClient({ url, timeout: "1m" });
    const abort = new AbortController();
    const reason = new Error("stopped by the caller");
    const call = tw.jobs.submit({ handler: "echo" }, { signal: abort.signal });
    const before = accepted;
    // Aborted once the request reached the server (a connection was accepted for it).
    while (accepted === before) await new Promise((resolve) => setImmediate(resolve));
    abort.abort(reason);
    await expect(call).rejects.toBe(reason);
  });

  test("an update stream that never opens is cut each time; its retries spent, it throws", async () => {
    const tw = createClient({ url, timeout: 200 });
    const updates = tw.jobs.handle("j_any").updates({ maxRetries: 1 });
    const error = await updates.next().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestTimeoutError);
  });

  test("the longest timeout allowed, with a long-poll's wait on top, still waits (a timer past 2^31 - 1 ms fires at once)", async () => {
    const job = { id: "j_any", status: "succeeded", result: { ok: true } };
    const answering = createHttpServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(job));
    });
    await new Promise<void>((resolve) => answering.listen(0, "127.0.0.1", resolve));
    try {
      const address = answering.address();
      if (address === null || typeof address === "string") throw new Error("no port");
      const tw = createClient({ url: `http://127.0.0.1:${address.port}`, timeout: 2 ** 31 - 1 });
      expect(await tw.jobs.handle("j_any").result({ timeout: "10s" })).toEqual({ ok: true });
    } finally {
      await new Promise<void>((resolve) => answering.close(() => resolve()));
    }
  });

  test("result({ timeout }) gives up a second past it when no poll is answered, without the client's timeout", async () => {
    const tw = createClient({ url });
    const error = await tw.jobs
      .handle("j_any")
      .result({ timeout: "300ms" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect((error as RequestTimeoutError).timeoutMs).toBe(1_300);
    expect((error as Error).message).toMatch(/GET \/v1\/jobs\/j_any.*result\(\)'s timeout/);
  });

  test("a timeout that is no duration, or past a timer's limit, is refused", () => {
    expect(() => createClient({ url, timeout: "soon" })).toThrow(RangeError);
    expect(() => createClient({ url, timeout: 0 })).toThrow(RangeError);
    expect(() => createClient({ url, timeout: 2 ** 31 })).toThrow(RangeError);
  });
});
