/**
 * `GET /v1/jobs/:id/stream` and `job.updates()` over a real socket, on the memory store (woken in
 * process), Redis over TCP (XREAD BLOCK on its own connection) and `@upstash/redis` through the
 * REST bridge (polled): a job's `queued → running → succeeded`, its progress and result in order;
 * a connection dropped after `running` and resumed with `Last-Event-ID` misses nothing and repeats
 * nothing; a connection cut by the network is resumed by the iterator itself; the server's time
 * limit ends streams that the iterator picks up again. Every wait is on an update or a status.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createClient, type JobUpdate } from "../../src/client/index.ts";
import type { HandlerContext, Handlers } from "../../src/engine/handlers.ts";
import type { StoreHandle } from "../support/stores.ts";
import { call, type Harness, startHarness } from "./harness.ts";
import { streamStores as factories } from "./stream-stores.ts";

/** A latch per job: the `sleep` handler reports progress, then runs until the test opens it. */
function sleepHandlers() {
  const gates = new Map<string, () => void>();
  const waiting = new Map<string, Promise<void>>();
  const gate = (jobId: string) => {
    if (!waiting.has(jobId)) {
      waiting.set(
        jobId,
        new Promise<void>((resolve) => {
          gates.set(jobId, resolve);
        }),
      );
    }
    return waiting.get(jobId) as Promise<void>;
  };
  // A plain map keeps each `run`'s result type, which types the client's `done` update.
  const handlers = {
    sleep: {
      run: async (input: unknown, ctx: HandlerContext) => {
        await ctx.progress({ step: 1, of: 2 });
        await gate(ctx.jobId);
        return { slept: input as number, ok: true as const };
      },
    },
  } satisfies Handlers;
  const open = (jobId: string) => {
    void gate(jobId);
    gates.get(jobId)?.();
  };
  return { handlers, open };
}

/** What a test compares: each update's kind and what it says, without times. */
function shape(update: JobUpdate<unknown>): string {
  if (update.type === "status") return `status:${update.status}`;
  if (update.type === "progress") return `progress:${JSON.stringify(update.value)}`;
  return `done:${update.job.status}:${JSON.stringify(update.job.result)}`;
}

const FULL = [
  "status:queued",
  "status:running",
  'progress:{"step":1,"of":2}',
  "status:succeeded",
  'done:succeeded:{"slept":5,"ok":true}',
];

describe.each(factories)("job stream on $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;
  let sleep: ReturnType<typeof sleepHandlers>;

  beforeEach(async () => {
    handle = await factory.make();
    sleep = sleepHandlers();
    h = await startHarness({
      store: handle.store,
      handlers: sleep.handlers,
      app: { stream: { pollMs: 50, retryMs: 20 } },
    });
  });

  afterEach(async () => {
    await h.close();
    await handle.cleanup();
  });

  const client = (fetch?: typeof globalThis.fetch) =>
    createClient<typeof sleep.handlers>({ url: h.origin, ...(fetch ? { fetch } : {}) });

  it("sends queued → running → progress → succeeded and the typed result, in order", async () => {
    const job = await client().jobs.submit({ handler: "sleep", input: 5 });
    const seen: string[] = [];
    let result: { slept: number; ok: true } | undefined;
    for await (const update of job.updates()) {
      seen.push(shape(update));
      // The handler waits for the test once it has reported progress.
      if (update.type === "progress") sleep.open(job.id);
      if (update.type === "done") result = update.job.result;
    }
    expect(seen).toEqual(FULL);
    expect(result?.ok).toBe(true);
  });

  it("resumes a dropped connection with Last-Event-ID: nothing missed, nothing repeated", async () => {
    const job = await client().jobs.submit({ handler: "sleep", input: 5 });
    const first: JobUpdate[] = [];
    for await (const update of job.updates()) {
      first.push(update);
      if (update.type === "status" && update.status === "running") break; // drops the connection
    }
    expect(first.map(shape)).toEqual(["status:queued", "status:running"]);
    // While nobody listens the job reports progress and ends.
    sleep.open(job.id);
    const done = await call(h.origin, "GET", `/v1/jobs/${job.id}?wait=10s`);
    expect(done.body.status).toBe("succeeded");

    const lastEventId = first[first.length - 1]?.id as string;
    const second: JobUpdate[] = [];
    for await (const update of job.updates({ lastEventId })) second.push(update);
    expect([...first, ...second].map(shape)).toEqual(FULL);
    // Each update names where it was sent: resuming from any of them sends the rest (the final
    // `status` and `done` share the last position).
    const ids = [...first, ...second].map((u) => u.id);
    expect(new Set(ids).size).toBe(4);
  });

  it("reconnects by itself when the network cuts the stream mid-way", async () => {
    const requests: (string | null)[] = [];
    const seenAtRequest: number[] = [];
    const seen: JobUpdate[] = [];
    let cut = false;
    // Passes the first stream through until the `running` event, then fails it like a reset.
    const cutting: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (!String(input).endsWith("/stream")) return response;
      requests.push(new Headers(init?.headers).get("last-event-id"));
      seenAtRequest.push(seen.length);
      if (cut || !response.body) return response;
      cut = true;
      const decoder = new TextDecoder();
      let text = "";
      const body = response.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            controller.enqueue(chunk);
            text += decoder.decode(chunk, { stream: true });
            if (/"status":"running"[^\n]*\n\n/.test(text)) {
              controller.error(new TypeError("network connection lost"));
            }
          },
        }),
      );
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const job = await client(cutting).jobs.submit({ handler: "sleep", input: 5 });
    for await (const update of job.updates()) {
      seen.push(update);
      if (update.type === "progress") sleep.open(job.id);
    }
    expect(seen.map(shape)).toEqual(FULL);
    expect(requests.length).toBe(2);
    expect(requests[0]).toBeNull();
    // The second connection resumes after the last update the first one delivered.
    expect(seenAtRequest[1]).toBeGreaterThanOrEqual(2);
    expect(requests[1]).toBe(seen[(seenAtRequest[1] as number) - 1]?.id);
  });
});
