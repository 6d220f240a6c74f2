/**
 * `HEAD` on the realtime routes (`/v1/jobs/:id/stream`, `/v1/schedules/:id/stream`): the headers
 * alone, and no stream left running. Hono answers `HEAD` with the `GET` route's response and drops
 * its body without cancelling it, so a stream started for it went on reading the store for its
 * whole time limit with nobody to read it: a `read` key could pile up background work without
 * holding a connection. The clock here is a second, real stream: once it has polled a few
 * times, a stream left behind by the `HEAD` would have polled as often.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JobRecord } from "../../src/core/model.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { call, type Harness, startHarness, testHandlers } from "./harness.ts";

/** A memory store that polls (no `waitForEvents`) and counts its reads by job id and of its log. */
class CountingStore extends MemoryStore {
  readonly reads = new Map<string, number>();
  /** Reads of the log by event type (a schedule's stream). */
  logReads = 0;
  #waiters: Array<{ id: string; n: number; resolve: () => void }> = [];

  override async getJob(id: string, tenant?: string): Promise<JobRecord | null> {
    const n = (this.reads.get(id) ?? 0) + 1;
    this.reads.set(id, n);
    const done = this.#waiters.filter((w) => w.id === id && w.n <= n);
    this.#waiters = this.#waiters.filter((w) => !done.includes(w));
    for (const w of done) w.resolve();
    return super.getJob(id, tenant);
  }

  override async events(...args: Parameters<MemoryStore["events"]>) {
    // A schedule's stream reads the log by event type; a job's by its id.
    if (args[0]?.types) this.logReads++;
    return super.events(...args);
  }

  /** Resolves once job `id` has been read `n` times. */
  readCount(id: string, n: number): Promise<void> {
    if ((this.reads.get(id) ?? 0) >= n) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ id, n, resolve }));
  }
}

describe("HEAD on a stream route", () => {
  let store: CountingStore;
  let h: Harness;

  beforeEach(async () => {
    store = new CountingStore();
    // Polled, as over Upstash's REST API: every poll reads the job.
    Object.defineProperty(store, "waitForEvents", { value: undefined });
    h = await startHarness({
      store,
      handlers: testHandlers().handlers,
      app: { stream: { pollMs: 10, retryMs: 20 } },
    });
  });

  afterEach(async () => {
    await h.close();
  });

  /** Submit a job due in an hour (it stays queued); its id. */
  async function queuedJob(): Promise<string> {
    const res = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", input: {}, delay: "1h" },
    });
    expect(res.status).toBe(202);
    return res.body.id as string;
  }

  /** A GET stream of job `id`, open until it has read the job `polls` times, then closed. */
  async function streamFor(id: string, polls: number): Promise<void> {
    const abort = new AbortController();
    const res = await fetch(`${h.origin}/v1/jobs/${id}/stream`, { signal: abort.signal });
    expect(res.status).toBe(200);
    await store.readCount(id, polls);
    abort.abort();
    await res.body?.cancel().catch(() => {});
  }

  it("of a job: the stream's headers, no body, and the job is read once (by the route) only", async () => {
    const a = await queuedJob();
    const clock = await queuedJob();
    const head = await fetch(`${h.origin}/v1/jobs/${a}/stream`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(await head.text()).toBe("");
    const before = store.reads.get(a);
    expect(before).toBe(1);
    await streamFor(clock, 6);
    expect(store.reads.get(a)).toBe(before);
  });

  it("of a schedule: the stream's headers, and its log is not read on", async () => {
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "hourly", handler: "echo", schedule: "1h" },
    });
    expect(created.status).toBe(201);
    const clock = await queuedJob();
    const head = await fetch(`${h.origin}/v1/schedules/hourly/stream`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const before = store.logReads;
    await streamFor(clock, 6);
    expect(store.logReads).toBe(before);
  });
});
