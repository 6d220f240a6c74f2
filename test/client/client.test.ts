/**
 * The typed client against real servers over real sockets — the dev
 * server (memory) for jobs, long-polls, cursors, schedules and errors, and `tickwork start`
 * (Redis, API key, tick secret) for authentication. Imported as users do: `tickwork/client`.
 */

import {
  ConflictError,
  createClient,
  type Job,
  NotFoundError,
  ResultTimeoutError,
  type TickworkClient,
  UnauthorizedError,
  ValidationError,
} from "tickwork/client";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  type DevServer,
  deletePrefix,
  REDIS_URL,
  randomPrefix,
  startDevServer,
} from "../dev/server.ts";

/** A `fetch` that records every URL it is asked for, optionally rewriting it first. */
function recordingFetch(rewrite: (url: URL) => URL = (u) => u) {
  const urls: URL[] = [];
  const fetcher: typeof fetch = (input, init) => {
    const url = rewrite(new URL(input instanceof Request ? input.url : String(input)));
    urls.push(url);
    return fetch(url, init);
  };
  return { fetch: fetcher, urls };
}

const prefix = randomPrefix();
let server: DevServer;
let client: TickworkClient;
let secured: DevServer;

// Both servers start at once; the cases of each block run concurrently.
beforeAll(async () => {
  [server, secured] = await Promise.all([
    startDevServer(),
    startDevServer({
      command: { bin: ["start", "--port", "0", "--host", "127.0.0.1"] },
      env: {
        REDIS_URL,
        TICKWORK_PREFIX: prefix,
        TICKWORK_API_KEY: "k1,k2",
        CRON_SECRET: "cron-s3cret",
      },
    }),
  ]);
  client = createClient({ url: server.url });
});
afterAll(async () => {
  await Promise.all([server?.stop(), secured?.stop()]);
  await deletePrefix(prefix);
});

describe.concurrent("client against the dev server", () => {
  test("result() long-polls: one request holds until the job finishes", async () => {
    const rec = recordingFetch();
    const c = createClient({ url: server.url, fetch: rec.fetch });
    // Timed from before the submit: the job may start before its 202 reaches a busy client.
    const started = Date.now();
    const job = await c.jobs.submit({ handler: "sleep", input: { ms: 1_500 } });
    expect(await job.result({ timeout: "10s" })).toEqual({ slept: 1_500 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_300);
    const polls = rec.urls.filter((u) => u.pathname === `/v1/jobs/${job.id}`);
    expect(polls).toHaveLength(1);
    expect(Number(polls[0]!.searchParams.get("wait"))).toBeGreaterThan(9_000);
  });

  test("result() repeats the long-poll when the server answers before the job is final", async () => {
    // Cap every wait at 100 ms, as a server with a small maxWaitMs would (well under the job's
    // 1.2 s, so three polls fit even when each round trip is slow).
    const rec = recordingFetch((url) => {
      if (url.searchParams.has("wait")) url.searchParams.set("wait", "100");
      return url;
    });
    const c = createClient({ url: server.url, fetch: rec.fetch });
    const job = await c.jobs.submit({ handler: "sleep", input: { ms: 1_200 } });
    expect(await job.result({ timeout: "10s" })).toEqual({ slept: 1_200 });
    const polls = rec.urls.filter((u) => u.pathname === `/v1/jobs/${job.id}`);
    expect(polls.length).toBeGreaterThanOrEqual(3);
  });

  test("a client timeout shorter than a long-poll's wait: the poll gets its wait on top", async () => {
    const c = createClient({ url: server.url, timeout: 400 });
    const job = await c.jobs.submit({ handler: "sleep", input: { ms: 1_500 } });
    // One poll holds ~1.5 s, far past 400 ms: it is not cut, and the result comes.
    expect(await job.result({ timeout: "10s" })).toEqual({ slept: 1_500 });
    expect(job.rateLimit).toBeUndefined();
  });

  test("result() gives up after its timeout with the last state seen", async () => {
    const job = await client.jobs.submit({ handler: "sleep", input: { ms: 4_000 } });
    // Once it runs (a busy machine may take a while to start it), it runs for 4 s more.
    while ((await job.status()).status !== "running") {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const started = Date.now();
    const error = await job.result({ timeout: 600 }).catch((e: unknown) => e);
    const took = Date.now() - started;
    expect(error).toBeInstanceOf(ResultTimeoutError);
    expect((error as ResultTimeoutError).job).toMatchObject({ id: job.id, status: "running" });
    expect(took).toBeGreaterThanOrEqual(550);
    // It gave up before the job finished (not after a fixed time: a busy machine is slow).
    const done = await job.result({ timeout: "20s" }).then(() => job.status());
    expect(started + took).toBeLessThan(Date.parse(done.finishedAt!));
  });

  test("jobs.list iterates across cursors, newest first, one request per page", async () => {
    const submitted: string[] = [];
    for (let i = 0; i < 7; i++) {
      submitted.push((await client.jobs.submit({ handler: "echo", input: i })).id);
    }
    const rec = recordingFetch();
    const c = createClient({ url: server.url, fetch: rec.fetch });

    const seen: Job[] = [];
    for await (const job of c.jobs.list({ handler: "echo", limit: 3 })) seen.push(job);
    expect(seen.map((j) => j.id)).toEqual([...submitted].reverse());
    const pages = rec.urls.filter((u) => u.pathname === "/v1/jobs");
    expect(pages).toHaveLength(3);
    expect(pages[0]!.searchParams.get("cursor")).toBeNull();
    expect(pages[1]!.searchParams.get("cursor")).toBeTruthy();

    const sizes: number[] = [];
    for await (const page of c.jobs.list({ handler: "echo", limit: 3 }).pages())
      sizes.push(page.items.length);
    expect(sizes).toEqual([3, 3, 1]);
    expect(await c.jobs.list({ handler: "echo", limit: 3 }).toArray(4)).toHaveLength(4);

    const first = await c.jobs.list({ handler: "echo", limit: 3 }).first();
    expect(first.cursor).toBeTruthy();
    const rest = await c.jobs.list({ handler: "echo", limit: 3, cursor: first.cursor! }).toArray();
    expect(rest).toHaveLength(4);
  });

  test("schedules: create, list by pages, update, runs, pause, resume, delete", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const s = await client.schedules.create({
        id: `client-${i}`,
        handler: "sleep",
        schedule: "1h",
        input: { ms: 0 },
      });
      expect(s).toMatchObject({ id: `client-${i}`, created: true });
      ids.push(s.id);
    }
    const listed = await client.schedules.list({ handler: "sleep", limit: 2 }).toArray();
    expect(listed.map((s) => s.id).sort()).toEqual(ids);

    const replaced = await client.schedules.create({
      id: "client-0",
      handler: "sleep",
      schedule: "2h",
      input: { ms: 0 },
    });
    expect(replaced.created).toBe(false);

    const s = client.schedules.handle("client-1");
    const before = await s.get();
    const updated = await s.update({ schedule: "0 0 1 1 *", tags: ["x"] });
    expect(updated).toMatchObject({ schedule: "0 0 1 1 *", tags: ["x"], status: "active" });
    expect(updated.nextRunAt).toMatch(/-01-01T00:00:00\.000Z$/);
    expect(updated.nextRunAt).not.toBe(before.nextRunAt);
    expect(await s.runs({ limit: 5 }).toArray()).toEqual([]);
    expect((await s.pause()).status).toBe("paused");
    expect((await s.resume()).status).toBe("active");

    for (const id of ids)
      expect(await client.schedules.handle(id).delete()).toEqual({ id, status: "deleted" });
    expect(await client.schedules.list({ handler: "sleep" }).toArray()).toEqual([]);
  });

  test("flows.submit: children, then the parent waiting for them; again with its key: replayed", async () => {
    const body = {
      children: [1, 2].map((n) => ({ handler: "echo", input: { n } })),
      parent: { handler: "echo", input: { parent: true } },
      idempotencyKey: `flow-${Math.random()}`,
    };
    const flow = await client.flows.submit(body);
    expect(flow.replayed).toBe(false);
    expect(flow.children).toHaveLength(2);
    const parent = await client.jobs.handle(flow.parent.id).result({ timeout: "20s" });
    expect(parent).toEqual({ parent: true });
    const after = (await client.jobs.get(flow.parent.id)).after;
    expect(after).toEqual(flow.children.map((c) => c.id));
    const again = await client.flows.submit(body);
    expect(again.replayed).toBe(true);
    expect(again.parent.id).toBe(flow.parent.id);
    await expect(client.flows.submit({ ...body, children: [] })).rejects.toBeInstanceOf(
      ValidationError,
    );
  });

  test("flows.submit takes a signal: aborted before it is sent, nothing is stored", async () => {
    const body = {
      children: [{ handler: "echo", input: { n: 1 } }],
      parent: { handler: "echo" },
      idempotencyKey: `flow-${Math.random()}`,
    };
    const aborted = AbortSignal.abort(new Error("changed my mind"));
    await expect(client.flows.submit(body, { signal: aborted })).rejects.toThrow("changed my mind");
    expect((await client.flows.submit(body)).replayed).toBe(false);
  });

  test("tick() runs a tick", async () => {
    const result = await client.tick();
    // The server's own timer may hold the tick lease at this moment.
    if (result.leader)
      expect(result).toMatchObject({ dispatched: expect.any(Number), tookMs: expect.any(Number) });
  });

  test("a base URL with a trailing slash works; handle(id) reads an existing job", async () => {
    const c = createClient({ url: `${server.url}/` });
    const job = await c.jobs.submit({ handler: "fail", input: { times: 0 } });
    expect(await c.jobs.handle(job.id).result({ timeout: "5s" })).toEqual({ attempt: 1 });
    expect(await c.jobs.get(job.id)).toMatchObject({ id: job.id, status: "succeeded" });
  });

  test("error answers become typed errors", async () => {
    const missing = await client.jobs.get("j_nope").catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing).toMatchObject({
      status: 404,
      code: "not_found",
      problem: { status: 404, title: "Not Found" },
    });
    expect((missing as NotFoundError).requestId).toBeTruthy();

    const unknown = await client.jobs.submit({ handler: "nope" }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(ValidationError);
    expect(unknown).toMatchObject({ status: 422, code: "unknown_handler" });

    const invalid = await client.jobs
      .submit({ handler: "echo", priority: 99 })
      .catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(ValidationError);
    expect((invalid as ValidationError).status).toBe(400);
    expect((invalid as ValidationError).errors.map((e) => e.path)).toContain("priority");

    const badCron = await client.schedules
      .create({ handler: "echo", schedule: "61 * * * *" })
      .catch((e: unknown) => e);
    expect(badCron).toMatchObject({ status: 422 });

    const done = await client.jobs.submit({ handler: "sleep", input: { ms: 0 } });
    await done.result({ timeout: "5s" });
    const late = await done.cancel().catch((e: unknown) => e);
    expect(late).toBeInstanceOf(ConflictError);
    expect(late).toMatchObject({ status: 409 });

    await expect(client.dlq.retry("j_nope")).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.dlq.delete("j_nope")).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.schedules.handle("nope").pause()).rejects.toBeInstanceOf(NotFoundError);
  });

  test("a body holding Infinity, NaN or an invalid Date is refused before it is sent, not sent as null", async () => {
    const rec = recordingFetch();
    const c = createClient({ url: server.url, fetch: rec.fetch });
    for (const input of [{ amount: Number.POSITIVE_INFINITY }, [1, Number.NaN]]) {
      const refused = await c.jobs.submit({ handler: "echo", input }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(TypeError);
      expect((refused as Error).message).toMatch(/input\.(amount|1): /);
    }
    // An invalid Date would go as null: a runAt that runs the job now, an endAt that clears it.
    for (const runAt of [new Date("not a date"), new Date(8.64e15 + 1)]) {
      const refused = await c.jobs.submit({ handler: "echo", runAt }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(TypeError);
      expect((refused as Error).message).toContain("runAt: an invalid Date");
    }
    const many = await c.jobs
      .submitMany([{ handler: "echo", runAt: new Date(Number.NaN) }])
      .catch((e: unknown) => e);
    expect(many).toBeInstanceOf(TypeError);
    expect(rec.urls).toEqual([]);
    const job = await c.jobs.submit({ handler: "echo", input: { amount: Number.MAX_VALUE } });
    expect(await job.result({ timeout: "5s" })).toEqual({ amount: Number.MAX_VALUE });
  });
});

describe.concurrent("client against `tickwork start` (Redis, API key, tick secret)", () => {
  test("the banner says a key is needed, and its curl lines work with the key in the shell", async () => {
    expect(secured.banner).toContain("tickwork server listening on");
    expect(secured.banner).toContain("auth       API key required");
    expect(secured.curls[0]).toContain('-H "authorization: Bearer $TICKWORK_API_KEY"');
  });

  test("without a key: UnauthorizedError; with either key: accepted", async () => {
    const anonymous = createClient({ url: secured.url });
    const error = await anonymous.jobs.submit({ handler: "echo" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toMatchObject({ status: 401 });
    await expect(
      createClient({ url: secured.url, apiKey: "wrong" }).jobs.list().first(),
    ).rejects.toBeInstanceOf(UnauthorizedError);

    for (const apiKey of ["k1", "k2"]) {
      const client = createClient({ url: secured.url, apiKey });
      const job = await client.jobs.submit({ handler: "echo", input: apiKey });
      expect(await job.result({ timeout: "5s" })).toBe(apiKey);
    }
  });

  test("nodes.list() reads GET /v1/nodes: this server, typed; without a key UnauthorizedError", async () => {
    const { nodes, deployment, note } = await createClient({
      url: secured.url,
      apiKey: "k2",
    }).nodes.list();
    expect(deployment).toBe("node");
    expect(note).toBeUndefined();
    // The server heartbeats before its banner prints: it is listed at once.
    expect(nodes).toHaveLength(1);
    const [node] = nodes;
    expect(node).toMatchObject({
      status: "live",
      pid: secured.pid,
      roles: ["all"],
      transport: "streams",
      concurrency: 10,
      capabilities: {},
      ttlMs: 45_000,
    });
    expect(node!.handlers).toContain("echo");
    expect(new Date(node!.lastSeen).toISOString()).toBe(node!.lastSeen);
    expect(Date.parse(node!.startedAt)).toBeLessThanOrEqual(Date.parse(node!.lastSeen));
    await expect(createClient({ url: secured.url }).nodes.list()).rejects.toBeInstanceOf(
      UnauthorizedError,
    );
  });

  test("tick() needs the tick secret", async () => {
    const client = createClient({ url: secured.url, apiKey: "k1" });
    await expect(client.tick()).rejects.toBeInstanceOf(UnauthorizedError);
    const result = await client.tick({ secret: "cron-s3cret" });
    expect(typeof result.leader).toBe("boolean");
  });
});
