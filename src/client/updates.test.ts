import { describe, expect, it } from "vitest";
import { createClient } from "./client.ts";
import { MAX_SSE_EVENT_CHARS, readSse, reconnectWaitMs } from "./updates.ts";

/** A body delivering `chunks` one read at a time. */
function body(...chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function all(stream: ReadableStream<Uint8Array>, onRetry?: (ms: number) => void) {
  const out = [];
  for await (const message of readSse(stream, onRetry)) out.push(message);
  return out;
}

/** A body delivering `count` reads of `chunk` and then `tail`. */
function repeated(chunk: string, count: number, tail: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(chunk);
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent++ < count) controller.enqueue(bytes);
      else {
        controller.enqueue(new TextEncoder().encode(tail));
        controller.close();
      }
    },
  });
}

describe("readSse", () => {
  // 8 MiB in 2,048 reads: scanning the whole line again at each read took 2,048 × 4 MiB on average
  // (minutes); scanning each read once takes milliseconds. The timeout catches the old way.
  it("reads a long line arriving in many reads once, not again at each read", async () => {
    const messages = await all(repeated("x".repeat(4096), 2048, "\n\n"));
    expect(messages).toHaveLength(0);
    const [message] = await all(
      (() => {
        const head = new TextEncoder().encode("data: ");
        const inner = repeated("z".repeat(4096), 2048, "\n\n");
        const reader = inner.getReader();
        let first = true;
        return new ReadableStream<Uint8Array>({
          async pull(controller) {
            if (first) {
              first = false;
              controller.enqueue(head);
              return;
            }
            const { value, done } = await reader.read();
            if (done) controller.close();
            else controller.enqueue(value);
          },
        });
      })(),
    );
    expect(message?.data.length).toBe(4096 * 2048);
  }, 30_000);

  it("cuts a line or an event longer than the limit with an error", async () => {
    const mib = "x".repeat(1024 * 1024);
    const over = MAX_SSE_EVENT_CHARS / mib.length + 1;
    await expect(all(repeated(mib, over, "\n\n"))).rejects.toThrow(/over 67108864 characters/);
    // Lines each within the limit, an event past it.
    await expect(all(repeated(`data: ${mib}\n`, over, "\n"))).rejects.toThrow(/over 67108864/);
  }, 60_000);

  it("parses events split anywhere, with CRLF, CR or LF line ends", async () => {
    const retries: number[] = [];
    const messages = await all(
      body("retry: 25", "00\r\n\r\nevent: status\r", '\nid: 1-0.0\rdata: {"a"', ":1}\n\n"),
      (ms) => retries.push(ms),
    );
    expect(retries).toEqual([2500]);
    expect(messages).toEqual([{ event: "status", id: "1-0.0", data: '{"a":1}' }]);
  });

  it("joins data lines, skips comments, keeps the last id, and drops a message without data", async () => {
    const messages = await all(
      body(
        ": keep-alive\n\n",
        "event: x\nid: 7\n\n", // no data: not dispatched, but the id sticks
        "data:first\ndata: second\n\n",
        "event:done\nid\ndata\n\n",
        "data: unterminated",
      ),
    );
    expect(messages).toEqual([
      { event: "message", id: "7", data: "first\nsecond" },
      { event: "done", id: "", data: "" },
    ]);
  });

  it("reports an id of a block without data as a position, and nothing else", async () => {
    const positions: string[] = [];
    const messages: unknown[] = [];
    for await (const m of readSse(
      body(": keep-alive\n\n", "id: 5-0.0\n\n", ": keep-alive\nid: 6-0.0\n\n", "data: 1\n\n"),
      undefined,
      (id) => positions.push(id),
    )) {
      messages.push(m);
    }
    expect(positions).toEqual(["5-0.0", "6-0.0"]);
    expect(messages).toEqual([{ event: "message", id: "6-0.0", data: "1" }]);
  });

  it("ignores a retry that is not a number and an id with NUL", async () => {
    const retries: number[] = [];
    const messages = await all(body("retry: soon\nid: a\0b\ndata: 1\n\n"), (ms) =>
      retries.push(ms),
    );
    expect(retries).toEqual([]);
    expect(messages).toEqual([{ event: "message", id: undefined, data: "1" }]);
  });
});

describe("schedule.updates()", () => {
  it("goes on after a run's done: a schedule's stream has one per run", async () => {
    const run = (id: string, at: string) =>
      `event: status\nid: ${at}.0\ndata: {"jobId":"${id}","status":"succeeded","at":"x"}\n\n` +
      `event: done\nid: ${at}.0\ndata: {"id":"${id}","status":"succeeded"}\n\n`;
    const client = createClient({
      url: "http://tickwork.test",
      // Two runs on one connection (the server's answer); the next would reconnect.
      fetch: async () =>
        new Response(body(run("often@1000", "5-0"), run("often@2000", "6-0")), {
          headers: { "content-type": "text/event-stream" },
        }),
    });
    const abort = new AbortController();
    const done: string[] = [];
    for await (const u of client.schedules.handle("often").updates({ signal: abort.signal })) {
      if (u.type !== "done") continue;
      done.push(u.job.id);
      if (done.length === 2) abort.abort();
    }
    expect(done).toEqual(["often@1000", "often@2000"]);
  });

  it("waits out a 503's Retry-After before reconnecting, when it is longer than retry:", async () => {
    const asked: number[] = [];
    const abort = new AbortController();
    const client = createClient({
      url: "http://tickwork.test",
      fetch: async () => {
        asked.push(Date.now());
        if (asked.length === 1) {
          return new Response(JSON.stringify({ status: 503, title: "Service Unavailable" }), {
            status: 503,
            headers: { "content-type": "application/problem+json", "retry-after": "2" },
          });
        }
        abort.abort();
        return new Response(body(), { headers: { "content-type": "text/event-stream" } });
      },
    });
    for await (const _ of client.schedules.handle("often").updates({ signal: abort.signal })) {
      // nothing comes
    }
    expect(asked).toHaveLength(2);
    // Retry-After 2 s, longer than the 1 s the client waits by default: a lower bound the client
    // keeps itself (a busy machine only makes the gap longer).
    expect(asked[1]! - asked[0]!).toBeGreaterThanOrEqual(1_990);
  });

  it("never waits longer than 5 minutes to reconnect, whatever the server asks", () => {
    expect(reconnectWaitMs(1_000, 2, undefined)).toBe(2_000);
    // `retry: 0` (or a few ms) is no reason to reconnect in a tight loop.
    expect(reconnectWaitMs(0, 1, undefined)).toBe(250);
    expect(reconnectWaitMs(10, 3, undefined)).toBe(250);
    expect(reconnectWaitMs(1_000, 1, 2)).toBe(2_000);
    // A Retry-After of a month (a proxy's) would overflow Node's timer and fire at once.
    expect(reconnectWaitMs(1_000, 1, 3_000_000)).toBe(300_000);
    expect(reconnectWaitMs(4_000_000_000, 1, undefined)).toBe(300_000);
  });
});
