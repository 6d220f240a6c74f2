import { expect, test } from "vitest";
import { serve } from "./serve.ts";

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

test("cuts requests still running at the shutdown timeout", async () => {
  const arrived = signal();
  const server = await serve(
    {
      fetch: () => {
        arrived.resolve();
        return new Promise<Response>(() => {});
      },
    },
    { port: 0, signals: false, shutdownTimeoutMs: 100 },
  );
  const hanging = fetch(`${server.url}/`).catch((e: unknown) => e);
  await arrived.promise;
  // The handler never answers: close() resolves only because the timeout cuts the connection.
  await server.close();
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
