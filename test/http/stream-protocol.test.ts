/**
 * The realtime routes' protocol and edges over a real socket: the `text/event-stream` answer
 * (`retry:`, ids, event names, heartbeats), the time limit after which the server ends a stream
 * and `job.updates()` reconnects, a client that reads nothing (its stream ended once 256 KiB wait for it), a job whose events the log no longer holds, a schedule's runs
 * (`GET /v1/schedules/:id/stream`), and the refusals — an unknown id or another tenant's job or
 * schedule 404, a malformed `Last-Event-ID` 400 problem+json — with nothing written.
 */
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  createClient,
  type JobUpdate,
  NotFoundError,
  readSse,
  ValidationError,
} from "../../src/client/index.ts";
import { defineHandlers } from "../../src/engine/handlers.ts";
import type { AppOptions } from "../../src/http/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { Store } from "../../src/store/port.ts";
import type { StoreHandle } from "../support/stores.ts";
import {
  call,
  expectProblem,
  type Harness,
  snapshot,
  startHarness,
  twoTenants,
  until,
} from "./harness.ts";
import { streamStores } from "./stream-stores.ts";

/** `wait` runs until the test calls `release()`; `echo` answers its input. */
function handlers() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  return {
    release: () => release(),
    handlers: defineHandlers({
      wait: {
        run: async () => {
          await released;
          return "released";
        },
      },
      echo: { run: (input: unknown) => input },
    }),
  };
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function start(app: Omit<AppOptions, "engine"> = {}, store: Store = new MemoryStore()) {
  const hs = handlers();
  h = await startHarness({ store, handlers: hs.handlers, app });
  return { ...hs, h };
}

/** The messages of a stream until `stop` says so (the connection is then closed). */
async function readUntil(
  response: Response,
  stop: (m: { event: string; data: string; id: string | undefined }) => boolean,
) {
  const seen: { event: string; data: string; id: string | undefined }[] = [];
  for await (const message of readSse(response.body as ReadableStream<Uint8Array>)) {
    seen.push(message);
    if (stop(message)) break;
  }
  return seen;
}

describe("GET /v1/jobs/:id/stream", () => {
  it("answers text/event-stream with a retry hint, ids, status/progress/done events", async () => {
    const { h } = await start({ stream: { retryMs: 1_234 } });
    const job = await call(h.origin, "POST", "/v1/jobs", { json: { handler: "echo", input: 7 } });
    const response = await fetch(`${h.origin}/v1/jobs/${job.body.id}/stream`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("no-store");
    const text = await response.text(); // the stream ends after `done`
    expect(text.startsWith("retry: 1234\n\n")).toBe(true);
    const events = [...text.matchAll(/event: (\w+)\nid: (\S+)\ndata: (.*)\n\n/g)].map((m) => ({
      event: m[1],
      id: m[2] as string,
      data: JSON.parse(m[3] as string),
    }));
    expect(events.map((e) => e.event)).toEqual(["status", "status", "status", "done"]);
    expect(events.map((e) => e.data.status)).toEqual([
      "queued",
      "running",
      "succeeded",
      "succeeded",
    ]);
    expect(events[0]?.data).toMatchObject({ jobId: job.body.id, event: "job.created" });
    expect(events[1]?.data).toMatchObject({ event: "job.started", attempt: 1 });
    expect(events[3]?.data).toMatchObject({ id: job.body.id, result: 7 });
    // Each id names the last status sent, so a resumed stream knows what its client saw.
    expect(events.map((e) => e.id.split(".")[2])).toEqual([
      "queued",
      "running",
      "succeeded",
      "succeeded",
    ]);
    for (const e of events) expect(e.id).toMatch(/^\d+-\d+\.\d+\.[a-z]+$/);
  });

  it("sends heartbeats while nothing happens", async () => {
    const { h, release } = await start({ stream: { heartbeatMs: 30, pollMs: 10 } });
    const job = await call(h.origin, "POST", "/v1/jobs", { json: { handler: "wait" } });
    const response = await fetch(`${h.origin}/v1/jobs/${job.body.id}/stream`);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = "";
    while (!text.includes("\n: keep-alive\n\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    await reader.cancel();
    release();
    expect(text).toContain("\n: keep-alive\n\n");
  });

  it("ends streams at maxMs; job.updates() reconnects and misses nothing", async () => {
    const { h, release } = await start({ stream: { maxMs: 40, pollMs: 10, retryMs: 10 } });
    let streams = 0;
    const client = createClient({
      url: h.origin,
      fetch: (input, init) => {
        if (String(input).endsWith("/stream") && ++streams === 3) release();
        return fetch(input, init);
      },
    });
    const job = await client.jobs.submit({ handler: "wait" });
    const seen: JobUpdate[] = [];
    for await (const update of job.updates()) seen.push(update);
    expect(streams).toBeGreaterThanOrEqual(3);
    expect(
      seen.map((u) =>
        u.type === "done" ? `done:${u.job.result}` : `${u.type}:${"status" in u ? u.status : ""}`,
      ),
    ).toEqual(["status:queued", "status:running", "status:succeeded", "done:released"]);
  });

  it("stops reading the store once the client goes away", async () => {
    const store = new MemoryStore();
    const signals: AbortSignal[] = [];
    const wait = store.waitForEvents.bind(store);
    store.waitForEvents = (after, timeoutMs, signal) => {
      signals.push(signal);
      return wait(after, timeoutMs, signal);
    };
    const { h, release } = await start({}, store);
    const job = await call(h.origin, "POST", "/v1/jobs", { json: { handler: "wait" } });
    const abort = new AbortController();
    const response = await fetch(`${h.origin}/v1/jobs/${job.body.id}/stream`, {
      signal: abort.signal,
    });
    await readUntil(response, (m) => m.data.includes('"running"'));
    abort.abort();
    // The stream's loop sees the disconnect: its wait is aborted (else this never resolves).
    const last = signals[signals.length - 1] as AbortSignal;
    await new Promise<void>((resolve) => {
      if (last.aborted) resolve();
      else last.addEventListener("abort", () => resolve(), { once: true });
    });
    release();
  });

  it("ends the stream of a client that reads nothing, rather than queueing for it without bound", async () => {
    // Polled (as over Upstash): a round every 10 ms, each with a new 4 KiB progress value.
    const store = new MemoryStore();
    (store as { waitForEvents?: unknown }).waitForEvents = undefined;
    let stop = false;
    const chatty = defineHandlers({
      chatty: {
        timeout: "5m",
        run: async (_input: unknown, ctx) => {
          for (let n = 0; !stop; n++) {
            await ctx.progress({ n, pad: "x".repeat(4_000) });
            await new Promise((resolve) => setTimeout(resolve, 2));
          }
        },
      },
    });
    h = await startHarness({ store, handlers: chatty, app: { stream: { pollMs: 10 } } });
    const job = await call(h.origin, "POST", "/v1/jobs", { json: { handler: "chatty" } });
    // The stream's rounds: it reads the job each.
    let lastRead = 0;
    const getJob = store.getJob.bind(store);
    store.getJob = (id, tenant) => {
      if (id === job.body.id) lastRead = Date.now();
      return getJob(id, tenant);
    };
    const { hostname, port } = new URL(h.origin);
    const socket = connect(Number(port), hostname);
    socket.on("error", () => {});
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write(`GET /v1/jobs/${job.body.id}/stream HTTP/1.1\r\nhost: ${hostname}\r\n\r\n`);
    socket.pause(); // never reads: the socket's buffers fill, then the stream's queue
    try {
      // Once it queues MAX_QUEUED_BYTES (after the sockets' buffers, some MiB) it ends; it went
      // on for maxMs (4 minutes), its queue growing by each value, then held until the client
      // closed the connection.
      // Ended: no round for 5 s (a round comes every 10 ms while it lives; a busy machine delays
      // one by far less).
      await until(() => lastRead > 0 && Date.now() - lastRead > 5_000, 90_000);
      // A client that reads again gets whole events, then the end of the answer, and resumes.
      let text = "";
      socket.setEncoding("latin1");
      socket.on("data", (chunk: string) => {
        text += chunk;
      });
      socket.resume();
      await until(() => text.endsWith("\r\n0\r\n\r\n"), 30_000);
      const last = [...text.matchAll(/\nid: (\S+)\n/g)].at(-1)?.[1];
      expect(last).toMatch(/^\d+-\d+\.\d+\.running$/);
      const resumed = await fetch(`${h.origin}/v1/jobs/${job.body.id}/stream`, {
        headers: { "last-event-id": last as string },
      });
      expect(resumed.status).toBe(200);
      await resumed.body?.cancel();
    } finally {
      stop = true;
      socket.destroy();
    }
  });

  it("reads the status from the job when the log holds none of its events", async () => {
    const { h } = await start({}, new MemoryStore({ eventsMaxLen: 0 }));
    const job = await call(h.origin, "POST", "/v1/jobs", { json: { handler: "echo", input: 1 } });
    await call(h.origin, "GET", `/v1/jobs/${job.body.id}?wait=10s`);
    const updates: JobUpdate[] = [];
    for await (const u of createClient({ url: h.origin }).jobs.handle(job.body.id).updates()) {
      updates.push(u);
    }
    expect(updates.map((u) => u.type)).toEqual(["status", "done"]);
    expect(updates[0]).toMatchObject({ status: "succeeded", attempt: 1 });
  });

  it("answers 404 for an unknown id and another tenant's job, 400 for a bad Last-Event-ID", async () => {
    const tenants = await twoTenants();
    const { h, release } = await start({ tenants });
    const as = (tenant: string, more: Record<string, string> = {}) => ({
      headers: { authorization: `Bearer ${tenant}-key`, ...more },
    });
    const job = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "wait" },
      ...as("t1"),
    });
    const schedule = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "daily", handler: "echo", schedule: "0 3 * * *" },
      ...as("t1"),
    });
    expect(schedule.status).toBe(201);
    const before = await snapshot(h.store);

    const stream = (path: string, init: { headers: Record<string, string> }) =>
      call(h.origin, "GET", path, init);
    expectProblem(await stream(`/v1/jobs/${job.body.id}/stream`, as("t2")), 404);
    expectProblem(await stream("/v1/jobs/j_unknown000000000000000/stream", as("t1")), 404);
    expectProblem(await stream("/v1/jobs/..%2Fx/stream", as("t1")), 404);
    expectProblem(await stream("/v1/schedules/daily/stream", as("t2")), 404);
    expectProblem(await stream("/v1/schedules/nope/stream", as("t1")), 404);
    for (const bad of [
      "yesterday",
      "1-2-3",
      "1.2",
      "-1-0",
      `${"9".repeat(17)}-0`,
      "1-0.x",
      "1-0.0.constructor",
      "1-0.0.__proto__",
      "1-0.0.Running",
      "1-0.0.running.1",
      // A progress time past what a Date holds: the id sent back would read 1e16.
      "1-0.9999999999999999",
      "1-0.8640000000000001.queued",
    ]) {
      const answer = await stream(
        `/v1/jobs/${job.body.id}/stream`,
        as("t1", { "last-event-id": bad }),
      );
      expectProblem(answer, 400);
      expect(answer.body.errors).toEqual([
        { path: "Last-Event-ID", message: expect.stringContaining("not an id") },
      ]);
    }
    expectProblem(
      await stream("/v1/schedules/daily/stream", as("t1", { "last-event-id": "x" })),
      400,
    );
    // The client throws the typed error at once (no reconnects).
    const drain = async (updates: AsyncIterable<JobUpdate>) => {
      for await (const _ of updates) {
        // nothing comes
      }
    };
    const other = createClient({ url: h.origin, apiKey: "t2-key" });
    await expect(drain(other.jobs.handle(job.body.id).updates())).rejects.toBeInstanceOf(
      NotFoundError,
    );
    const mine = createClient({ url: h.origin, apiKey: "t1-key" });
    await expect(
      drain(mine.jobs.handle(job.body.id).updates({ lastEventId: "x" })),
    ).rejects.toBeInstanceOf(ValidationError);
    // Unauthenticated: 401 before anything is read.
    expectProblem(await call(h.origin, "GET", `/v1/jobs/${job.body.id}/stream`), 401);
    expect(await snapshot(h.store)).toBe(before);
    release();
  });
});

describe("a browser on another origin", () => {
  it("may send Last-Event-ID (CORS preflight) to resume a stream", async () => {
    const { h } = await start({ cors: { origins: ["https://app.example.com"] } });
    const answer = await fetch(`${h.origin}/v1/jobs/j_0mwxa9xfphc7zv0crypps/stream`, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example.com",
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization,last-event-id",
      },
    });
    expect(answer.status).toBe(204);
    expect(answer.headers.get("access-control-allow-headers")?.toLowerCase()).toContain(
      "last-event-id",
    );
  });
});

describe.each(streamStores)("GET /v1/schedules/:id/stream on $name", (factory) => {
  let handle: StoreHandle | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
    await handle?.cleanup();
  });

  it("never sends a position naming another tenant's event (its heartbeats' neither)", async () => {
    handle = await factory.make();
    const tenants = await twoTenants();
    const { h } = await start({ tenants, stream: { heartbeatMs: 30, pollMs: 10 } }, handle.store);
    const as = (tenant: string) => ({ headers: { authorization: `Bearer ${tenant}-key` } });
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "daily", handler: "echo", schedule: "0 3 * * *" },
      ...as("t1"),
    });
    expect(created.status).toBe(201);
    const abort = new AbortController();
    const response = await fetch(`${h.origin}/v1/schedules/daily/stream`, {
      ...as("t1"),
      signal: abort.signal,
    });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = "";
    const ids = () => [...text.matchAll(/^id: (\S+)$/gm)].map((m) => m[1] as string);
    /** Reads the stream until `count` more ids came. */
    const readIds = async (count: number) => {
      const want = ids().length + count;
      while (ids().length < want) {
        const { value, done } = await reader.read();
        if (done) throw new Error("the stream ended");
        text += decoder.decode(value, { stream: true });
      }
    };
    try {
      await readIds(1);
      // t2's jobs run while t1's stream is open: their events are in the log it reads.
      for (let i = 0; i < 3; i++) {
        const job = await call(h.origin, "POST", "/v1/jobs", {
          json: { handler: "echo" },
          ...as("t2"),
        });
        await until(async () => {
          const read = await call(h.origin, "GET", `/v1/jobs/${job.body.id}`, as("t2"));
          return read.body.status === "succeeded";
        }, 10_000);
      }
      await readIds(3);
    } finally {
      abort.abort();
    }
    const theirs = await call(h.origin, "GET", "/v1/events?limit=100", as("t2"));
    const t2Ids = new Set(
      (theirs.body.items as { id: string; tenant?: string }[]).map((e) => e.id),
    );
    expect(t2Ids.size).toBeGreaterThanOrEqual(9);
    const positions = ids().map((id) => id.split(".")[0]);
    expect(positions.filter((position) => t2Ids.has(position as string))).toEqual([]);
  });

  it("sends each run's status changes and its final job", async () => {
    handle = await factory.make();
    const { h } = await start({ stream: { pollMs: 50 } }, handle.store);
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "often", handler: "echo", input: "tick", schedule: "1s" },
    });
    expect(created.status).toBe(201);
    let opened!: () => void;
    const open = new Promise<void>((resolve) => {
      opened = resolve;
    });
    // Resolves once the stream answered: its start (the store's now) is fixed by then.
    const client = createClient({
      url: h.origin,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        opened();
        return response;
      },
    });
    const abort = new AbortController();
    const seen: JobUpdate[] = [];
    const reading = (async () => {
      for await (const u of client.schedules.handle("often").updates({ signal: abort.signal })) {
        seen.push(u);
        if (u.type === "done") abort.abort();
      }
    })();
    await open;
    // One tick dispatches the occurrences due within its look-ahead (1.5 s): at least one run.
    expect((await call(h.origin, "POST", "/v1/tick")).status).toBe(200);
    await reading;
    // The tick may have dispatched two occurrences: follow the one that finished first.
    const done = seen.find((u) => u.type === "done");
    const jobId = done?.type === "done" ? done.job.id : undefined;
    expect(jobId).toMatch(/^often@\d+$/);
    const run = seen.filter((u) => (u.type === "done" ? u.job.id : u.jobId) === jobId);
    expect(
      run.map((u) =>
        u.type === "done" ? `done:${u.job.result}` : `${u.type}:${"status" in u ? u.status : ""}`,
      ),
    ).toEqual(["status:queued", "status:running", "status:succeeded", "done:tick"]);
  });
});
