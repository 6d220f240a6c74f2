/**
 * How many realtime streams one caller may hold open (`stream.maxPerKey`), over real HTTP: each
 * open stream reads the store every round, so a `read` key that opened hundreds made the store
 * work for all of them. One past the limit gets 429 `too_many_streams` with `Retry-After` and
 * starts nothing; another key is not affected; a stream that ends (the client leaves, or the
 * server's `maxMs`) gives its slot back, and a `HEAD` holds none. The client's `job.updates()`
 * waits out such a 429's `Retry-After` and opens the stream then.
 */

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createClient } from "../../src/client/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { tenant } from "../security/support.ts";
import { call, type Harness, startHarness, testHandlers } from "./harness.ts";

const KEY_A = "key-a-0123456789";
const KEY_B = "key-b-0123456789";

describe("streams per key", () => {
  let h: Harness;
  const opened: AbortController[] = [];

  beforeEach(async () => {
    h = await startHarness({
      store: new MemoryStore(),
      handlers: testHandlers().handlers,
      app: {
        dev: false,
        tickSecret: "tick",
        apiKeys: [KEY_A, KEY_B],
        stream: { maxPerKey: 2, pollMs: 50, retryMs: 20 },
      },
    });
  });

  afterEach(async () => {
    for (const abort of opened.splice(0)) abort.abort();
    await h.close();
  });

  /** A job due in an hour (it stays queued, so its stream stays open); its id. */
  async function queuedJob(): Promise<string> {
    const res = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", input: {}, delay: "1h" },
      headers: { authorization: `Bearer ${KEY_A}` },
    });
    expect(res.status).toBe(202);
    return res.body.id as string;
  }

  /** Open a stream of `path` with `key`; the response once its headers came (body left open). */
  async function open(path: string, key: string, method = "GET"): Promise<Response> {
    const abort = new AbortController();
    opened.push(abort);
    return fetch(`${h.origin}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}` },
      signal: abort.signal,
    });
  }

  /** The first chunk of a stream's body: the server has started it. */
  async function started(res: Response): Promise<void> {
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain("retry:");
    reader.releaseLock();
  }

  it("one past the limit gets 429 too_many_streams with Retry-After; another key does not", async () => {
    const id = await queuedJob();
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "none", handler: "echo", schedule: "0 3 * * *" },
      headers: { authorization: `Bearer ${KEY_A}` },
    });
    expect(created.status).toBe(201);
    const first = await open(`/v1/jobs/${id}/stream`, KEY_A);
    const second = await open("/v1/schedules/none/stream", KEY_A);
    expect([first.status, second.status]).toEqual([200, 200]);
    await Promise.all([started(first), started(second)]);

    for (const path of [`/v1/jobs/${id}/stream`, "/v1/schedules/none/stream"]) {
      const refused = await open(path, KEY_A);
      expect(refused.status).toBe(429);
      expect(refused.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(refused.headers.get("retry-after")).toBe("5");
      expect(await refused.json()).toMatchObject({
        status: 429,
        type: "urn:tickwork:problem:too_many_streams",
      });
    }
    // A HEAD takes no slot, and is answered while the key is at its limit.
    expect((await open(`/v1/jobs/${id}/stream`, KEY_A, "HEAD")).status).toBe(200);
    // Another key's streams are its own.
    const other = await open(`/v1/jobs/${id}/stream`, KEY_B);
    expect(other.status).toBe(200);
    await started(other);
    // An unknown job is still a 404, not a 429: the record is read first.
    expect((await open("/v1/jobs/j_unknown/stream", KEY_A)).status).toBe(404);
  });

  it("a stream the client leaves gives its slot back", async () => {
    const id = await queuedJob();
    const aborts = [new AbortController(), new AbortController()];
    for (const abort of aborts) {
      const res = await fetch(`${h.origin}/v1/jobs/${id}/stream`, {
        headers: { authorization: `Bearer ${KEY_A}` },
        signal: abort.signal,
      });
      expect(res.status).toBe(200);
      await started(res);
    }
    expect((await open(`/v1/jobs/${id}/stream`, KEY_A)).status).toBe(429);
    aborts[0]!.abort();
    // The server sees the client leave at its next write or poll: ask until it has.
    let status = 429;
    for (let tries = 0; status === 429 && tries < 500; tries++) {
      const res = await open(`/v1/jobs/${id}/stream`, KEY_A);
      status = res.status;
      if (status === 429) await res.body?.cancel();
      else await started(res);
    }
    expect(status).toBe(200);
    aborts[1]!.abort();
  });
});

describe("streams per key, ended by the server", () => {
  it("a stream ended at maxMs gives its slot back", async () => {
    const h = await startHarness({
      store: new MemoryStore(),
      handlers: testHandlers().handlers,
      app: { stream: { maxPerKey: 1, maxMs: 100, pollMs: 20, retryMs: 20 } },
    });
    try {
      const res = await call(h.origin, "POST", "/v1/jobs", {
        json: { handler: "echo", input: {}, delay: "1h" },
      });
      const path = `/v1/jobs/${res.body.id}/stream`;
      for (let round = 0; round < 3; round++) {
        const stream = await fetch(`${h.origin}${path}`);
        expect(stream.status).toBe(200);
        // Read to its end: the server ended it at maxMs.
        await stream.text();
      }
    } finally {
      await h.close();
    }
  });
});

describe("streams per key, with tenants", () => {
  it("two tenants' keys of one id are two keys: one at its limit leaves the other be", async () => {
    // Key ids are unique within a tenant only (the configuration allows `ci` in each).
    const acme = await tenant("slots-acme", { ci: ["read", "jobs:write"] });
    const globex = await tenant("slots-globex", { ci: ["read", "jobs:write"] });
    const h = await startHarness({
      store: new MemoryStore(),
      handlers: testHandlers().handlers,
      app: {
        dev: false,
        tickSecret: "tick",
        tenants: [acme.config, globex.config],
        stream: { maxPerKey: 1, pollMs: 50, retryMs: 20 },
      },
    });
    const aborts: AbortController[] = [];
    const stream = (id: string, key: string) => {
      const abort = new AbortController();
      aborts.push(abort);
      return fetch(`${h.origin}/v1/jobs/${id}/stream`, {
        headers: { authorization: `Bearer ${key}` },
        signal: abort.signal,
      });
    };
    try {
      const [a, g] = await Promise.all(
        [acme, globex].map(async (t) => {
          const res = await call(h.origin, "POST", "/v1/jobs", {
            json: { handler: "echo", input: {}, delay: "1h" },
            headers: { authorization: `Bearer ${t.keys.ci!.key}` },
          });
          expect(res.status).toBe(202);
          return res.body.id as string;
        }),
      );
      expect((await stream(a!, acme.keys.ci!.key)).status).toBe(200);
      expect((await stream(a!, acme.keys.ci!.key)).status).toBe(429);
      expect((await stream(g!, globex.keys.ci!.key)).status).toBe(200);
    } finally {
      for (const abort of aborts) abort.abort();
      await h.close();
    }
  });
});

describe("job.updates() refused for too many streams", () => {
  it("waits the Retry-After, then opens the stream", async () => {
    // The server's side of the 429 is the tests above; here the client's answer to one.
    let requests = 0;
    const server = createServer((_req, res) => {
      requests++;
      if (requests === 1) {
        res
          .writeHead(429, { "content-type": "application/problem+json", "retry-after": "1" })
          .end(
            JSON.stringify({ status: 429, code: "too_many_streams", title: "Too Many Requests" }),
          );
        return;
      }
      const job = { id: "j_1", status: "succeeded", result: 7, attempts: 1 };
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(`retry: 20\n\nevent: done\nid: 1-0.0.succeeded\ndata: ${JSON.stringify(job)}\n\n`);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const client = createClient({ url: `http://127.0.0.1:${port}` });
      const seen: unknown[] = [];
      for await (const update of client.jobs.handle("j_1").updates()) {
        if (update.type === "done") seen.push(update.job.result);
      }
      expect(seen).toEqual([7]);
      expect(requests).toBe(2);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
