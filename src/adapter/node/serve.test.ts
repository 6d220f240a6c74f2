import { Agent, request } from "node:http";
import { expect, test } from "vitest";
import { serve } from "./serve.ts";
import { startServer } from "./start.ts";

/** A promise and the function that resolves it, for a handler and a test to meet on. */
function signal<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

test("serves on a free port and lets a request in flight finish on close", async () => {
  const events: string[] = [];
  const arrived = signal();
  const release = signal();
  const server = await serve(
    {
      fetch: async (request) => {
        if (new URL(request.url).pathname === "/slow") {
          arrived.resolve();
          await release.promise;
        }
        return new Response("done");
      },
    },
    { port: 0, signals: false, onShutdown: () => void events.push("shutdown") },
  );
  expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
  expect(await (await fetch(`${server.url}/`)).text()).toBe("done");

  const slow = fetch(`${server.url}/slow`).then((r) => r.text());
  await arrived.promise;
  const closing = server.close();
  expect(server.signal.aborted).toBe(true);
  expect(server.close()).toBe(closing);
  release.resolve();
  expect(await slow).toBe("done");
  await closing;
  expect(events).toEqual(["shutdown"]);
  await expect(fetch(`${server.url}/`)).rejects.toThrow();
});

/** A server whose every request hangs, and a request to it under way (settling to its error). */
async function hangingRequest(shutdownTimeoutMs: number) {
  const arrived = signal();
  const server = await serve(
    {
      fetch: () => {
        arrived.resolve();
        return new Promise<Response>(() => {});
      },
    },
    { port: 0, signals: false, shutdownTimeoutMs },
  );
  const hanging = fetch(`${server.url}/`).catch((e: unknown) => e);
  await arrived.promise;
  return { server, hanging };
}

test("cuts requests still running at the shutdown timeout", async () => {
  const { server, hanging } = await hangingRequest(100);
  // The handler never answers: close() resolves only because the timeout cuts the connection.
  await server.close();
  expect(await hanging).toBeInstanceOf(Error);
});

test("close({ timeoutMs }) cuts requests in flight at its own deadline, not the server's", async () => {
  // Far past the test's own timeout: close() resolves in time only by the deadline it is given.
  const { server, hanging } = await hangingRequest(600_000);
  await server.close({ timeoutMs: 100 });
  expect(await hanging).toBeInstanceOf(Error);
});

test("a port in use is an EADDRINUSE error", async () => {
  const first = await serve({ fetch: () => new Response() }, { port: 0, signals: false });
  await expect(
    serve({ fetch: () => new Response() }, { port: first.port, signals: false }),
  ).rejects.toMatchObject({
    code: "EADDRINUSE",
  });
  await first.close();
});

/** The `Keep-Alive` header of an answer, read off the wire (fetch may hide hop-by-hop headers). */
async function keepAliveHeader(url: string): Promise<string | undefined> {
  // A client that keeps its connection (one that asks to close it is told nothing of keep-alive).
  const agent = new Agent({ keepAlive: true });
  try {
    return await new Promise((resolve, reject) => {
      const req = request(url, { agent }, (res) => {
        res.resume();
        res.once("end", () => resolve(res.headers["keep-alive"] as string | undefined));
      });
      req.once("error", reject);
      req.end();
    });
  } finally {
    agent.destroy();
  }
}

test("keeps an idle connection open 65 s by default, past a load balancer's 60 s", async () => {
  const app = { fetch: () => new Response("ok") };
  const byDefault = await serve(app, { port: 0, signals: false });
  const shorter = await serve(app, { port: 0, signals: false, keepAliveTimeoutMs: 2_000 });
  try {
    expect(byDefault.server).toHaveProperty("keepAliveTimeout", 65_000);
    expect(await keepAliveHeader(`${byDefault.url}/`)).toBe("timeout=65");
    expect(await keepAliveHeader(`${shorter.url}/`)).toBe("timeout=2");
  } finally {
    await byDefault.close();
    await shorter.close();
  }
});

test("tickwork start passes its keep-alive timeout (TICKWORK_KEEP_ALIVE_MS) to serve", async () => {
  const base = { handlers: {}, dev: true, port: 0, signals: false, print: false } as const;
  const byDefault = await startServer({ ...base, roles: ["observer"] });
  const longer = await startServer({ ...base, roles: ["observer"], keepAliveTimeoutMs: 620_000 });
  try {
    expect(await keepAliveHeader(`${byDefault.url}/v1/jobs`)).toBe("timeout=65");
    expect(await keepAliveHeader(`${longer.url}/v1/jobs`)).toBe("timeout=620");
  } finally {
    await byDefault.close();
    await longer.close();
  }
});

test("refuses a keep-alive timeout that is not a whole number of ms", async () => {
  const app = { fetch: () => new Response("ok") };
  for (const keepAliveTimeoutMs of [
    -1,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    2 ** 31,
    1e300,
  ]) {
    await expect(serve(app, { port: 0, signals: false, keepAliveTimeoutMs })).rejects.toThrow(
      RangeError,
    );
  }
});

test("refuses a shutdown timeout that is not a whole number of ms a timer can hold", async () => {
  // Each of these made the shutdown cut the connections in flight at once (a 1 ms timer).
  const app = { fetch: () => new Response("ok") };
  for (const shutdownTimeoutMs of [-1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, 1e300]) {
    await expect(serve(app, { port: 0, signals: false, shutdownTimeoutMs })).rejects.toThrow(
      /shutdownTimeoutMs/,
    );
  }
});
