/**
 * Resuming a stream misses nothing the client has not seen, whatever happened while it was away:
 *
 * - a job's stream: each id names the last status sent, so a resumed stream sends a change the
 *   log does not hold (a waiting job's release to the queue writes no event);
 * - a schedule's stream: it sends its position as an `id:` alone when it opens and with each
 *   heartbeat, and the client resumes from there, so a reconnect after a quiet stream does not
 *   start again at a later "now";
 * - a schedule's stream: a run's final status carries the position before it, so a client cut
 *   between that status and its `done` gets both again.
 *
 * Over a real socket on the memory store; every wait is on an event, a request or the server's
 * own stream limit.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createClient, readSse } from "../../src/client/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { Transport } from "../../src/transport/port.ts";
import { call, type Harness, startHarness, until } from "./harness.ts";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const handlers = { echo: { run: (input: unknown) => input } };

/** A queue that takes nothing: submitted jobs stay where the store puts them. */
const idle: Transport = {
  async publish() {
    return [];
  },
  async verify() {
    return false;
  },
};

/** The messages of a stream at `path` until `stop` says so or the server ends it. */
async function read(
  path: string,
  stop: (message: { event: string; id: string | undefined; data: string }) => boolean,
  init: { headers?: Record<string, string>; onPosition?: (id: string) => void } = {},
) {
  const abort = new AbortController();
  const response = await fetch(`${h!.origin}${path}`, {
    headers: init.headers ?? {},
    signal: abort.signal,
  });
  const seen: { event: string; id: string | undefined; data: string }[] = [];
  try {
    for await (const message of readSse(response.body!, undefined, init.onPosition)) {
      seen.push(message);
      if (stop(message)) break;
    }
  } finally {
    abort.abort();
  }
  return seen;
}

describe("a job's stream, resumed", () => {
  it("tells of a release to the queue that happened while the client was away", async () => {
    h = await startHarness({
      store: new MemoryStore(),
      handlers,
      transport: idle,
      // Without the release, the resumed stream would say nothing until it ends.
      app: { stream: { pollMs: 50, maxMs: 1_500 } },
    });
    const a = await call(h.origin, "POST", "/v1/jobs", { json: { handler: "echo" } });
    const b = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", after: [a.body.id], onFailure: "run" },
    });
    expect(b.body.status).toBe("waiting");
    const first = await read(`/v1/jobs/${b.body.id}/stream`, (m) => m.event === "status");
    expect(JSON.parse(first[0]!.data).status).toBe("waiting");
    expect((await call(h.origin, "DELETE", `/v1/jobs/${a.body.id}`)).status).toBe(200);
    await until(
      async () => (await call(h!.origin, "GET", `/v1/jobs/${b.body.id}`)).body.status === "queued",
    );
    const resumed = await read(`/v1/jobs/${b.body.id}/stream`, (m) => m.event === "status", {
      headers: { "last-event-id": first[0]!.id! },
    });
    expect(resumed.map((m) => `${m.event}:${JSON.parse(m.data).status}`)).toEqual([
      "status:queued",
    ]);
  });
});

describe("a schedule's stream, resumed", () => {
  it("sends its position when it opens, and the client reconnects from it", async () => {
    h = await startHarness({
      store: new MemoryStore(),
      handlers,
      app: { stream: { pollMs: 50, maxMs: 200, retryMs: 20 } },
    });
    await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "quiet", handler: "echo", schedule: "1h" },
    });
    let position: string | undefined;
    await read("/v1/schedules/quiet/stream", () => false, {
      onPosition: (id) => {
        position = id;
      },
    });
    expect(position).toMatch(/^\d+-\d+\.0$/);
    // The client: the first stream ends (maxMs) with no update; the next asks from its position.
    const asked: (string | null)[] = [];
    const client = createClient({
      url: h.origin,
      fetch: (input, init) => {
        asked.push(new Headers(init?.headers).get("last-event-id"));
        return fetch(input, init);
      },
    });
    const abort = new AbortController();
    const reading = (async () => {
      for await (const _ of client.schedules.handle("quiet").updates({ signal: abort.signal })) {
        // no run comes
      }
    })();
    await until(async () => asked.length >= 2);
    abort.abort();
    await reading;
    expect(asked[0]).toBeNull();
    expect(asked[1]).toMatch(/^\d+-\d+\.0$/);
  });

  it("a run's final status and its done come again to a client cut between them", async () => {
    h = await startHarness({
      store: new MemoryStore(),
      handlers,
      app: { stream: { pollMs: 50, retryMs: 20 } },
    });
    await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "often", handler: "echo", input: "x", schedule: "1s" },
    });
    const stream = read("/v1/schedules/often/stream", (m) => m.event === "done");
    await call(h.origin, "POST", "/v1/tick");
    const first = await stream;
    await call(h.origin, "POST", "/v1/schedules/often/pause");
    const done = first.at(-1)!;
    const job = JSON.parse(done.data).id as string;
    const final = first
      .filter((m) => m.event === "status" && JSON.parse(m.data).jobId === job)
      .at(-1)!;
    expect(JSON.parse(final.data).status).toBe("succeeded");
    expect(final.id).not.toBe(done.id);
    // Cut after the status: resumed from its id, the status and the done come again.
    const again = await read("/v1/schedules/often/stream", (m) => m.event === "done", {
      headers: { "last-event-id": final.id! },
    });
    expect(
      again.map((m) => `${m.event}:${JSON.parse(m.data).jobId ?? JSON.parse(m.data).id}`),
    ).toEqual([`status:${job}`, `done:${job}`]);
  });
});
