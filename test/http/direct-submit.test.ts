/**
 * The direct submit route (src/http/direct-submit.ts, answered by `serve` of tickwork/node without
 * a web `Request`) answers every `POST /v1/jobs` as the app's Hono route does. Two servers of one
 * configuration, each on its own memory store: `@hono/node-server` alone (every request through
 * `app.fetch`) and `serve`. Each generated request goes to both over real sockets, with headers
 * written as raw lines (repeated names, odd casing, chunked bodies, query strings, sane and insane
 * request ids, trace headers) and the fuzz's bodies and credentials (`../security/`); the two
 * answers must agree in status, headers and body, ids and times aside. The direct route must
 * have answered most of them (counted on the real route object the app carries).
 */
import { once } from "node:events";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonLogger } from "../../src/engine/logger.ts";
import type { DirectSubmit } from "../../src/http/direct-submit.ts";
import { directSubmitOf } from "../../src/http/direct-submit.ts";
import { createApp } from "../../src/http/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { type GeneratedBody, requests } from "../security/fuzz-requests.ts";
import { type TestTenant, tenant } from "../security/support.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { prng } from "../support/prng.ts";
import { type Harness, startHarness, testHandlers, until } from "./harness.ts";

/** What one server answered. */
interface Seen {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One request as raw header lines (so names may repeat) and a body, sent with `node:http`. */
interface Raw {
  path: string;
  headers: [string, string][];
  body: Uint8Array;
  chunked: boolean;
}

function send(origin: string, raw: Raw): Promise<Seen> {
  const { hostname, port } = new URL(origin);
  const lines = raw.headers.flat();
  if (!raw.chunked) lines.push("content-length", String(raw.body.byteLength));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { hostname, port, method: "POST", path: raw.path, headers: lines, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString(),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    if (raw.chunked) {
      // Two writes without a length: sent chunked.
      const half = Math.floor(raw.body.byteLength / 2);
      req.write(raw.body.subarray(0, half));
      req.end(raw.body.subarray(half));
    } else req.end(raw.body);
  });
}

/** Headers both must send alike: all but those of the connection and of the moment. */
const OWN_HEADERS = new Set(["date", "connection", "keep-alive", "content-length"]);
/** Seconds from now: may differ by one between two requests a moment apart. */
const SECONDS = new Set(["ratelimit-reset", "retry-after"]);
/** The same in a refusal's text (a spent quota, an overloaded system). */
const RETRY_IN = /try again in (\d+) s/;

/** An answer with its ids and times replaced by what both servers must agree on. */
function normalized(seen: Seen): unknown {
  const headers: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(seen.headers)) {
    if (OWN_HEADERS.has(name)) continue;
    if (name === "x-request-id")
      headers[name] = /^[0-9a-f-]{36}$/.test(String(value)) ? "<uuid>" : value;
    else if (name === "location") headers[name] = String(value).replace(/j_[0-9a-z]+/, "<id>");
    else if (SECONDS.has(name)) headers[name] = "<seconds>";
    else headers[name] = value;
  }
  let body: unknown = seen.text;
  try {
    const json = JSON.parse(seen.text) as Record<string, unknown>;
    if (typeof json.id === "string" && typeof json.createdAt === "string") {
      body = { ...json, id: "<id>", createdAt: "<time>", runAt: "<time>" };
    } else if (typeof json.detail === "string") {
      body = { ...json, detail: json.detail.replace(RETRY_IN, "try again in <seconds> s") };
    } else body = json;
  } catch {
    // Not JSON: compared as text.
  }
  return { status: seen.status, headers, body };
}

/** A log line with its time, duration and a fresh request id replaced. */
function logLine(line: string): unknown {
  const { time: _time, ms: _ms, ...rest } = JSON.parse(line) as Record<string, unknown>;
  if (typeof rest.requestId === "string" && /^[0-9a-f-]{36}$/.test(rest.requestId)) {
    rest.requestId = "<uuid>";
  }
  return rest;
}

/**
 * Whether two submit answers run their jobs alike: at the same time (a `runAt` given), or as far
 * from their creation (a delay). Anything but a job summary agrees.
 */
function runAlike(a: Seen, b: Seen): boolean {
  const times = (seen: Seen) => {
    try {
      const json = JSON.parse(seen.text) as { createdAt?: unknown; runAt?: unknown };
      if (typeof json.createdAt !== "string") return undefined;
      const runAt = Date.parse(String(json.runAt));
      return { runAt, delay: runAt - Date.parse(json.createdAt) };
    } catch {
      return undefined;
    }
  };
  const x = times(a);
  const y = times(b);
  if (x === undefined || y === undefined) return x === y;
  return x.runAt === y.runAt || x.delay === y.delay;
}

/** The seconds-valued headers and texts of both answers, which must be within a second. */
function secondsApart(a: Seen, b: Seen): number {
  let most = 0;
  for (const name of SECONDS) {
    const x = Number(a.headers[name] ?? 0);
    const y = Number(b.headers[name] ?? 0);
    most = Math.max(most, Math.abs(x - y));
  }
  const inText = (seen: Seen) => Number(RETRY_IN.exec(seen.text)?.[1] ?? 0);
  return Math.max(most, Math.abs(inText(a) - inText(b)));
}

const variant = fc.record({
  r: requests,
  path: fc.oneof(
    { weight: 6, arbitrary: fc.constant("/v1/jobs") },
    fc.constantFrom("/v1/jobs?x=1", "/v1/jobs?", "/v1/jobs/", "/v1/Jobs", "/v1//jobs"),
  ),
  /** A second credential line: the same key again, another one, or an `X-Api-Key` beside. */
  extraAuth: fc.constantFrom(null, null, null, "same", "reader", "x-api-key"),
  chunked: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, fc.constant(true)),
  typeSpelling: fc.constantFrom("as is", "as is", "upper", "spaced", "twice"),
  requestId: fc.option(fc.constantFrom("abc-123", "bad id!", "x".repeat(200), "a, b", " pad ")),
  traceparent: fc.option(
    fc.constantFrom("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "garbage", ""),
  ),
  nameCase: fc.constantFrom("lower", "Title", "UPPER"),
  /** A valid submit instead of the fuzz's body, now and then with an idempotency key. */
  valid: fc.option(
    fc.record({
      idempotencyKey: fc.option(fc.constantFrom("k1", "k2", "k3")),
      input: fc.constantFrom(1, "x", { a: [1] }, "x".repeat(150)),
      delay: fc.constantFrom("1h", 0, "10s"),
    }),
    { freq: 2 },
  ),
  /** Whose admin key: a tenant with room, or one whose daily quota of 3 is soon spent. */
  tight: fc.oneof({ weight: 2, arbitrary: fc.constant(false) }, fc.constant(true)),
  /** Sent twice to each server: an idempotent replay, or a second job. */
  twice: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, fc.constant(true)),
});

function spell(name: string, how: string): string {
  if (how === "UPPER") return name.toUpperCase();
  if (how === "Title")
    return name.replace(/(^|-)([a-z])/g, (_, d: string, c: string) => d + c.toUpperCase());
  return name;
}

describe("the direct submit route answers as the Hono route", () => {
  let acme: TestTenant;
  let tight: TestTenant;
  let hono: Harness;
  let direct: Harness;
  let answered = 0;
  const logs = { hono: [] as string[], direct: [] as string[] };
  /** The bodies of the submits' answers (`POST`), as each server made them, whoever reads them. */
  const answers = { hono: [] as string[], direct: [] as string[] };
  /** The app's `fetch`, its `POST` answers' bodies recorded in `into`. */
  const recorded =
    (served: { fetch(request: Request): Response | Promise<Response> }, into: string[]) =>
    async (request: Request) => {
      const response = await served.fetch(request);
      if (request.method === "POST")
        void response
          .clone()
          .text()
          .then((text) => into.push(text));
      return response;
    };

  beforeAll(async () => {
    acme = await tenant("acme", { admin: ["admin"], reader: ["read"] }, { maxInputBytes: 100 });
    tight = await tenant("tight", { admin: ["admin"] }, { quotas: { submit: { perDay: 3 } } });
    const app = {
      dev: false,
      tickSecret: "tick",
      tenants: [acme.config, tight.config],
      bodyLimitBytes: 4_096,
    };
    // Each its own queue that keeps what it is given: no job runs, so a replay finds its job as
    // the first answer left it on both. Each its own log, at debug: every line a request writes.
    const server = (lines: string[]) => ({
      store: new MemoryStore(),
      handlers: testHandlers().handlers,
      transport: new ChaosQueue(prng(7)),
      app,
      engine: {
        degradation: false as const,
        logger: jsonLogger({ level: "debug", sink: (line) => lines.push(line) }),
      },
    });
    hono = await startHarness({
      ...server(logs.hono),
      via: "hono",
      wrap: (served) => ({ fetch: recorded(served, answers.hono) }),
    });
    // The served app, its direct route counting what it answers.
    direct = await startHarness({
      ...server(logs.direct),
      wrap: (served) => {
        const route = directSubmitOf(served)!;
        const counted: DirectSubmit = {
          path: route.path,
          answer: (request) => {
            answered++;
            return route.answer(request).then((answer) => {
              answers.direct.push(answer.text);
              return answer;
            });
          },
        };
        return Object.defineProperty(
          { fetch: recorded(served, answers.direct) },
          Symbol.for("tickwork.directSubmit"),
          { value: counted },
        );
      },
    });
  });

  afterAll(async () => {
    await hono?.close();
    await direct?.close();
  });

  it("an app of createApp has the direct route only where it answers alike", () => {
    const engine = hono.engine;
    expect(directSubmitOf(createApp({ engine, dev: true, tickSecret: false }))?.path).toBe(
      "/v1/jobs",
    );
    expect(
      directSubmitOf(createApp({ engine, dev: true, tickSecret: false, basePath: "/api/tw" }))
        ?.path,
    ).toBe("/api/tw/v1/jobs");
    // A custom authorize may read anything of Hono's Context; CORS adds headers; no submit route.
    expect(
      directSubmitOf(createApp({ engine, tickSecret: false, authorize: () => ({ tenant: "x" }) })),
    ).toBeUndefined();
    expect(
      directSubmitOf(
        createApp({
          engine,
          dev: true,
          tickSecret: false,
          cors: { origins: ["https://a.example"] },
        }),
      ),
    ).toBeUndefined();
    expect(
      directSubmitOf(createApp({ engine, dev: true, tickSecret: false, roles: ["worker"] })),
    ).toBeUndefined();
    expect(
      directSubmitOf(createApp({ engine, dev: true, tickSecret: false, roles: ["api"] })),
    ).toBeDefined();
  });

  it("both answer every generated request alike", async () => {
    let posts = 0;
    const statuses = new Set<number>();
    await fc.assert(
      fc.asyncProperty(variant, async (v) => {
        const { r } = v;
        const lines: [string, string][] = [["host", "127.0.0.1"]];
        const key = (name: string) => (v.tight ? tight : acme).keys[name]?.key ?? "tw_none";
        if (r.auth === "admin") lines.push(["authorization", `Bearer ${key("admin")}`]);
        if (r.auth === "reader") lines.push(["authorization", `Bearer ${key("reader")}`]);
        if (r.auth === "garbage") lines.push(["authorization", "Bearer tw_garbage"]);
        if (r.auth === "x-api-key") lines.push(["x-api-key", key("admin")]);
        if (r.auth === "basic") lines.push(["authorization", "Basic YTpi"]);
        if (v.extraAuth === "same" && r.auth === "admin") {
          lines.push(["authorization", `Bearer ${key("admin")}`]);
        }
        if (v.extraAuth === "reader") lines.push(["authorization", `Bearer ${key("reader")}`]);
        if (v.extraAuth === "x-api-key") lines.push(["x-api-key", key("admin")]);
        if (r.extraHeader) lines.push([r.extraHeader.name, r.extraHeader.value]);
        if (v.requestId !== null) lines.push(["x-request-id", v.requestId]);
        if (v.traceparent !== null) lines.push(["traceparent", v.traceparent]);
        const body: GeneratedBody | undefined = v.valid
          ? {
              text: JSON.stringify({ handler: "echo", ...v.valid }),
              type: "application/json",
            }
          : (r.body as GeneratedBody | undefined);
        if (body?.type) {
          const type =
            v.typeSpelling === "upper"
              ? body.type.toUpperCase()
              : v.typeSpelling === "spaced"
                ? ` ${body.type} `
                : body.type;
          lines.push(["content-type", type]);
          if (v.typeSpelling === "twice") lines.push(["content-type", body.type]);
        }
        const raw: Raw = {
          path: v.path,
          headers: lines.map(([name, value]) => [spell(name, v.nameCase), value]),
          body: body?.bytes ?? new TextEncoder().encode(body?.text ?? ""),
          chunked: v.chunked,
        };
        for (let round = v.twice ? 2 : 1; round > 0; round--) {
          logs.hono.length = 0;
          logs.direct.length = 0;
          const sent = performance.now();
          const a = await send(hono.origin, raw);
          const b = await send(direct.origin, raw);
          // Seconds counted down at two moments: a second apart at most, more if the machine
          // stalled between the two requests.
          const apart = 1 + Math.ceil((performance.now() - sent) / 1000);
          posts++;
          statuses.add(a.status);
          const what = `POST ${raw.path} ${JSON.stringify(raw.headers)} ${new TextDecoder().decode(raw.body).slice(0, 200)}`;
          expect(normalized(b), what).toEqual(normalized(a));
          expect(secondsApart(a, b), what).toBeLessThanOrEqual(apart);
          expect(runAlike(a, b), `${what}: ${a.text} / ${b.text}`).toBe(true);
          // Written before the answer: the request's debug line, and any warning or error.
          expect(logs.direct.map(logLine), what).toEqual(logs.hono.map(logLine));
          expect(logs.direct.length).toBeGreaterThan(0);
          const ids = lines.filter(([name]) => name === "x-request-id");
          if (ids.length === 1 && v.requestId && /^[A-Za-z0-9._:=-]{1,128}$/.test(v.requestId)) {
            expect(b.headers["x-request-id"]).toBe(v.requestId);
          }
        }
      }),
      {
        numRuns: Number(process.env.FUZZ_RUNS ?? 300),
        seed: Number(process.env.FUZZ_SEED ?? 20_261_129),
      },
    );
    // Most went the direct way: all but the chunked ones and other paths.
    expect(answered).toBeGreaterThan(posts / 3);
    // It reached every kind of answer the route gives.
    for (const status of [200, 202, 400, 401, 403, 413, 415, 422, 429]) {
      expect([...statuses]).toContain(status);
    }
  });

  it.each([
    ["@hono/node-server, a declared length", "hono", false],
    ["the direct route", "direct", false],
    ["serve, a chunked body (read as a stream by the Hono route)", "direct", true],
  ] as const)(
    "a body cut short (%s): a 400 in the log, no warning, nothing submitted; the next request is answered",
    async (_, which, chunked) => {
      const harness = which === "hono" ? hono : direct;
      const lines = logs[which];
      const before = (await harness.store.stats()).totals.submitted;
      const { hostname, port } = new URL(harness.origin);
      const socket = connect(Number(port), hostname);
      await once(socket, "connect");
      lines.length = 0;
      answers[which].length = 0;
      socket.write(
        `POST /v1/jobs HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${acme.keys.admin!.key}\r\n` +
          (chunked
            ? 'content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n40\r\n{"handler":"echo"'
            : 'content-type: application/json\r\ncontent-length: 100\r\n\r\n{"handler":"echo"'),
      );
      socket.destroy();
      // The server gave up on the body: its answer (nobody reads it) and the request's log line.
      await until(
        () => answers[which].length > 0 && lines.some((l) => l.includes('"msg":"request"')),
        10_000,
      );
      // The client went away: 400 request_incomplete, not a 503 "store unreachable" (the aborted
      // read fails with ECONNRESET) and no "request failed" warning or error.
      expect(answers[which]).toHaveLength(1);
      expect(JSON.parse(answers[which][0]!)).toMatchObject({
        status: 400,
        type: "urn:tickwork:problem:request_incomplete",
      });
      const line = JSON.parse(lines.find((l) => l.includes('"msg":"request"'))!);
      expect(line.status).toBe(400);
      expect(lines.filter((l) => /"level":"(warn|error)"/.test(l))).toEqual([]);
      const next = await send(harness.origin, {
        path: "/v1/jobs",
        headers: [
          ["host", "127.0.0.1"],
          ["authorization", `Bearer ${acme.keys.admin!.key}`],
          ["content-type", "application/json"],
        ],
        body: new TextEncoder().encode(JSON.stringify({ handler: "echo", delay: "1h" })),
        chunked: false,
      });
      expect(next.status).toBe(202);
      expect((await harness.store.stats()).totals.submitted).toBe(before + 1);
    },
  );

  it.each([
    ["@hono/node-server", "hono"],
    ["the direct route", "direct"],
  ] as const)("a whole body whose client closed at once (%s) is submitted", async (_, which) => {
    const harness = which === "hono" ? hono : direct;
    const before = (await harness.store.stats()).totals.submitted;
    const { hostname, port } = new URL(harness.origin);
    const socket = connect(Number(port), hostname);
    await once(socket, "connect");
    const body = JSON.stringify({ handler: "echo", delay: "1h" });
    // All of it, then the end of the connection: the server may read the body before or after
    // it sees the end, and submits it either way.
    socket.end(
      `POST /v1/jobs HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${acme.keys.admin!.key}\r\n` +
        `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
    );
    await until(async () => (await harness.store.stats()).totals.submitted === before + 1, 10_000);
  });

  it("a body declared over the limit: 413 at once, and the connection closed unread", async () => {
    const { hostname, port } = new URL(direct.origin);
    const socket = connect(Number(port), hostname);
    await once(socket, "connect");
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      text += chunk;
    });
    const closed = once(socket, "end");
    socket.write(
      `POST /v1/jobs HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${acme.keys.admin!.key}\r\n` +
        "content-type: application/json\r\ncontent-length: 100000000\r\n\r\n{",
    );
    // The server ends the connection after its answer, without the 100 MB it was promised.
    await closed;
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text.toLowerCase()).toContain("connection: close");
    expect(text).toContain("urn:tickwork:problem:content_too_large");
  });
});
