/**
 * The typed client against answers that are not the API's own, over real sockets: a redirect
 * (fetch would turn a submit's POST into a GET of the job listing and read its 200 as the
 * submit's answer, storing nothing) is an error naming where it leads; a success that is not
 * JSON (a page served at a wrong base path) is an error, not `undefined`; an id that is not
 * well-formed text reaches the server, which answers 404; and an update stream whose connection
 * goes silent without closing (a proxy or network that drops it) is re-opened from its last
 * update once nothing came through for `idleTimeoutMs`.
 */
import { createServer as createHttpServer, type Server } from "node:http";
import { connect, createServer, type Socket } from "node:net";
import {
  createClient,
  NotFoundError,
  ResultTimeoutError,
  StreamIdleError,
  TickworkApiError,
} from "tickwork/client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { type Harness, startHarness } from "../http/harness.ts";

let h: Harness;
/** Releases the `gate` handler's run. */
let open: () => void = () => {};
const gate = new Promise<void>((resolve) => {
  open = resolve;
});

beforeAll(async () => {
  h = await startHarness({
    store: new MemoryStore(),
    handlers: {
      echo: { run: (input) => input },
      gate: {
        run: async (_input, ctx) => {
          await ctx.progress({ step: 1 });
          await gate;
          return "through";
        },
      },
    },
    app: { stream: { heartbeatMs: 60_000, maxMs: 240_000 } },
  });
});
afterAll(() => h.close());

/** A plain HTTP server answering every request with `answer`; its origin. */
async function answering(
  answer: (
    req: import("node:http").IncomingMessage,
    res: import("node:http").ServerResponse,
  ) => void,
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createHttpServer(answer);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as import("node:net").AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A TCP proxy to `origin`: each connection (numbered from 1) gets its upstream socket, and
 * `forward` wires the two; its URL, how many connections it took, and its close.
 */
async function tcpProxy(
  origin: string,
  forward: (client: Socket, upstream: Socket, n: number) => void,
): Promise<{ url: string; connections(): number; close(): Promise<void> }> {
  const target = new URL(origin);
  const sockets = new Set<Socket>();
  let connections = 0;
  const proxy = createServer((client) => {
    connections++;
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => {});
      s.on("close", () => sockets.delete(s));
    }
    forward(client, upstream, connections);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as import("node:net").AddressInfo).port}`,
    connections: () => connections,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}

describe("answers that are not the API's", () => {
  test("a 301 or 302 in front of the API: submit and create reject, naming where it leads; nothing stored", async () => {
    for (const status of [301, 302, 307]) {
      const moved = await answering((req, res) => {
        res.writeHead(status, { location: `${h.origin}${req.url}` }).end();
      });
      try {
        const tw = createClient({ url: moved.url });
        const submit = await tw.jobs.submit({ handler: "echo", input: { n: 1 } }).catch((e) => e);
        expect(submit).toBeInstanceOf(TickworkApiError);
        expect(submit).toMatchObject({ status, code: "redirect" });
        expect((submit as Error).message).toContain(`${h.origin}/v1/jobs`);
        const create = await tw.schedules
          .create({ id: "nightly", handler: "echo", schedule: "0 3 * * *" })
          .catch((e) => e);
        expect(create).toMatchObject({ status, code: "redirect" });
        const updates = await tw.jobs
          .handle("j_any")
          .updates()
          .next()
          .catch((e) => e);
        expect(updates).toMatchObject({ status, code: "redirect" });
      } finally {
        await moved.close();
      }
    }
    expect((await h.store.stats()).totals.submitted).toBe(0);
    expect(await h.store.getSchedule("nightly")).toBeNull();
  });

  test("a success that is not JSON (a page at a wrong base path) rejects, saying so", async () => {
    const page = await answering((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>app</title>");
    });
    try {
      const tw = createClient({ url: page.url });
      const error = await tw.jobs.get("j_any").catch((e) => e);
      expect(error).toBeInstanceOf(TickworkApiError);
      expect(error).toMatchObject({ status: 200, code: "not_json" });
      expect((error as Error).message).toContain("text/html");
      expect(await tw.jobs.submit({ handler: "echo" }).catch((e) => e)).toMatchObject({
        code: "not_json",
      });
    } finally {
      await page.close();
    }
  });

  test("a success with no body (not a 204) rejects as not JSON, not with a TypeError", async () => {
    const empty = await answering((_req, res) => {
      res.writeHead(200).end();
    });
    try {
      const tw = createClient({ url: empty.url });
      for (const call of [
        () => tw.jobs.submit({ handler: "echo" }),
        () => tw.jobs.handle("j_any").result({ timeout: "1s" }),
        () => tw.jobs.get("j_any"),
      ]) {
        const error = await call().catch((e: unknown) => e);
        expect(error).toBeInstanceOf(TickworkApiError);
        expect(error).toMatchObject({ status: 200, code: "not_json" });
        expect((error as Error).message).toContain("no body");
      }
    } finally {
      await empty.close();
    }
  });

  test("result({ timeout }) cuts a poll the server holds past it: ResultTimeoutError with the job last seen", async () => {
    let polls = 0;
    const holding = await answering((_req, res) => {
      // The first poll is answered at once (still running); every later one is never answered.
      if (++polls > 1) return;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: "j_any", status: "running", attempts: 1 }));
    });
    try {
      const tw = createClient({ url: holding.url });
      const error = await tw.jobs
        .handle("j_any")
        .result({ timeout: "400ms" })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ResultTimeoutError);
      expect((error as ResultTimeoutError).job).toMatchObject({ id: "j_any", status: "running" });
      expect(polls).toBeGreaterThanOrEqual(2);
    } finally {
      await holding.close();
    }
  });

  test("an update stream a server ends at once, asking retry: 0, reconnects no sooner than 250 ms", async () => {
    const arrivals: number[] = [];
    const ending = await answering((_req, res) => {
      arrivals.push(performance.now());
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end("retry: 0\n\n");
    });
    const abort = new AbortController();
    try {
      const tw = createClient({ url: ending.url });
      const updates = tw.jobs.handle("j_any").updates({ signal: abort.signal });
      const reading = updates.next();
      while (arrivals.length < 4) await new Promise((resolve) => setTimeout(resolve, 20));
      abort.abort();
      expect(await reading).toEqual({ done: true, value: undefined });
      const gaps = arrivals.slice(1).map((at, i) => at - arrivals[i]!);
      // A timer does not fire early; load only makes the gaps longer.
      for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(240);
    } finally {
      abort.abort();
      await ending.close();
    }
  });

  test("an id that is not well-formed text is answered 404 by the server, not thrown", async () => {
    const tw = createClient({ url: h.origin });
    for (const id of ["\uD800", "a\uDC00b", "x\uD83D"]) {
      await expect(tw.jobs.get(id)).rejects.toBeInstanceOf(NotFoundError);
      await expect(tw.schedules.get(id)).rejects.toBeInstanceOf(NotFoundError);
      await expect(tw.jobs.handle(id).updates().next()).rejects.toBeInstanceOf(NotFoundError);
    }
  });
});

describe("an update stream whose connection goes silent", () => {
  let proxy: Awaited<ReturnType<typeof tcpProxy>>;

  beforeAll(async () => {
    proxy = await tcpProxy(h.origin, (client, upstream, n) => {
      // The client opened the stream again: the job may finish now.
      if (n === 2) open();
      client.pipe(upstream);
      let forwarded = false;
      upstream.on("data", (chunk: Buffer) => {
        // The first connection: its answer's first bytes (headers, the job's status and
        // progress) come through, then nothing more, and it stays open.
        if (n === 1 && forwarded) return;
        if (chunk.includes("event: progress")) forwarded = true;
        client.write(chunk);
      });
      upstream.on("end", () => client.end());
    });
  });
  afterAll(() => proxy.close());

  test("is re-opened from its last update once idleTimeoutMs passes, and sees the job done", async () => {
    const tw = createClient({ url: h.origin });
    const { id } = await tw.jobs.submit({ handler: "gate" });
    const through = createClient({ url: proxy.url });
    const seen: string[] = [];
    let lastProgress: string | undefined;
    for await (const update of through.jobs.handle(id).updates({ idleTimeoutMs: 300 })) {
      seen.push(update.type);
      if (update.type === "progress") lastProgress = update.id;
      if (update.type === "done") {
        expect(update.job).toMatchObject({ status: "succeeded", result: "through" });
      }
    }
    expect(lastProgress).toBeDefined();
    expect(seen.at(-1)).toBe("done");
    // The silent one, then one re-opened after its last update (no update twice).
    expect(proxy.connections()).toBeGreaterThanOrEqual(2);
    expect(seen.filter((t) => t === "progress")).toHaveLength(1);
  });

  test("StreamIdleError is exported for callers that log reconnects", () => {
    expect(new StreamIdleError("GET /x", 5)).toBeInstanceOf(Error);
  });
});

describe("an update stream whose caller takes its time", () => {
  let live: Harness;
  let proxy: Awaited<ReturnType<typeof tcpProxy>>;
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });

  beforeAll(async () => {
    live = await startHarness({
      store: new MemoryStore(),
      handlers: {
        held: {
          run: async () => {
            await released;
            return "done";
          },
        },
      },
      // Heartbeats far more often than the caller's idle limit: the stream is never silent.
      app: { stream: { heartbeatMs: 20, pollMs: 20 } },
    });
    proxy = await tcpProxy(live.origin, (client, upstream) => {
      client.pipe(upstream).pipe(client);
    });
  });
  afterAll(async () => {
    await proxy.close();
    await live.close();
  });

  test("is not cut while the caller handles an update for longer than idleTimeoutMs", async () => {
    const { id } = await createClient({ url: live.origin }).jobs.submit({ handler: "held" });
    const tw = createClient({ url: proxy.url });
    const seen: string[] = [];
    for await (const update of tw.jobs.handle(id).updates({ idleTimeoutMs: 1_000 })) {
      seen.push(update.type);
      if (seen.length === 1) {
        // The caller's own work on the first update outlasts the idle limit, the server's
        // heartbeats waiting unread meanwhile; then the job may end.
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        release();
      }
    }
    expect(seen.at(-1)).toBe("done");
    expect(proxy.connections()).toBe(1);
  });
});
