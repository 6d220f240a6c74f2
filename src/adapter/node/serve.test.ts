import { expect, test } from "vitest";
import { serve } from "./serve.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("serves on a free port and lets a request in flight finish on close", async () => {
  const events: string[] = [];
  const server = await serve(
    {
      fetch: async (request) => {
        if (new URL(request.url).pathname === "/slow") await sleep(200);
        return new Response("done");
      },
    },
    { port: 0, signals: false, onShutdown: () => void events.push("shutdown") },
  );
  expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
  expect(await (await fetch(`${server.url}/`)).text()).toBe("done");

  const slow = fetch(`${server.url}/slow`).then((r) => r.text());
  await sleep(50);
  const closing = server.close();
  expect(server.signal.aborted).toBe(true);
  expect(server.close()).toBe(closing);
  expect(await slow).toBe("done");
  await closing;
  expect(events).toEqual(["shutdown"]);
  await expect(fetch(`${server.url}/`)).rejects.toThrow();
});

test("cuts requests still running at the shutdown timeout", async () => {
  const server = await serve(
    { fetch: () => new Promise<Response>(() => {}) },
    { port: 0, signals: false, shutdownTimeoutMs: 100 },
  );
  const hanging = fetch(`${server.url}/`).catch((e: unknown) => e);
  await sleep(50);
  const started = Date.now();
  await server.close();
  expect(Date.now() - started).toBeLessThan(1_000);
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
