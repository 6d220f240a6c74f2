/**
 * Acceptance 3: a property-based fuzz (fast-check) of bodies, query strings and headers against
 * the real HTTP server: whatever arrives, the answer is never a 5xx, every error is problem+json,
 * and no 4xx changes anything a client can observe (jobs, schedules, dead letters, counters —
 * compared before and after each refused request).
 *
 * Besides values near and far from valid, it aims at the classes of the input-bounds review:
 * numeric extremes (±1e300, -0, 8.64e15 ± 1, MAX_SAFE_INTEGER + 2, huge durations, NaN-ish
 * strings), names every object inherits (`constructor`, `__proto__`, `toString`, …) as handlers,
 * ids, tags and query values, ids shaped like other store keys (`x:running`, `a@1`, `{tw}:s:x`,
 * `../`), and malformed Unicode (lone surrogates in every string field, percent-encoded in paths
 * and queries, overlong and surrogate UTF-8 sequences in raw body bytes).
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDuration } from "../../src/core/duration.ts";
import {
  MAX_DELAY_MS,
  MAX_INSTANT_MS,
  MAX_JITTER_MS,
  MAX_TIMEOUT_MS,
  MIN_TIMEOUT_MS,
} from "../../src/core/schemas.ts";
import type { Harness } from "../http/harness.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import { bearer, securedApp, storeState, type TestTenant, tenant } from "./support.ts";

/** Paths the fuzz aims at (ids made up or real), with the methods worth trying there. */
const TARGETS: { method: string; path: string }[] = [
  { method: "POST", path: "/v1/jobs" },
  { method: "GET", path: "/v1/jobs" },
  { method: "GET", path: "/v1/jobs/{id}" },
  { method: "DELETE", path: "/v1/jobs/{id}" },
  { method: "POST", path: "/v1/schedules" },
  { method: "GET", path: "/v1/schedules" },
  { method: "GET", path: "/v1/schedules/{id}" },
  { method: "PATCH", path: "/v1/schedules/{id}" },
  { method: "POST", path: "/v1/schedules/{id}/pause" },
  { method: "POST", path: "/v1/schedules/{id}/resume" },
  { method: "DELETE", path: "/v1/schedules/{id}" },
  { method: "GET", path: "/v1/schedules/{id}/runs" },
  { method: "GET", path: "/v1/dlq" },
  { method: "POST", path: "/v1/dlq/{id}/retry" },
  { method: "DELETE", path: "/v1/dlq/{id}" },
  { method: "GET", path: "/v1/tick" },
  { method: "POST", path: "/v1/worker" },
  { method: "POST", path: "/v1/dead" },
  { method: "PUT", path: "/v1/jobs" },
];

const FIELDS = [
  "handler",
  "input",
  "priority",
  "delay",
  "runAt",
  "timeout",
  "retries",
  "tags",
  "idempotencyKey",
  "id",
  "schedule",
  "tz",
  "maxRuns",
  "startAt",
  "endAt",
  "misfire",
  "overlap",
  "jitter",
  "__proto__",
  "constructor",
];

/** Names every plain object inherits, and `prototype`. */
const INHERITED = [
  "constructor",
  "__proto__",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "prototype",
  "isPrototypeOf",
  "__defineGetter__",
];

/** Numbers at and past the edges: a `Date`'s range, safe integers, doubles. */
const extremeNumber = fc.constantFrom(
  1e300,
  -1e300,
  -0,
  8_640_000_000_000_000,
  8_640_000_000_000_001,
  8_639_999_999_999_999,
  -8_640_000_000_000_001,
  Number.MAX_SAFE_INTEGER + 2,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  253_402_300_800_000, // year 10000
  2 ** 31,
  2 ** 31 - 1,
  999,
  900_001,
);

/** Strings that parse to nothing, to something huge, or to a time no `Date` holds. */
const extremeString = fc.constantFrom(
  "NaN",
  "Infinity",
  "-Infinity",
  "1e309",
  "0x10",
  "1e3s",
  "100000000d",
  `${"9".repeat(400)}d`,
  "25d",
  "366d",
  "16m",
  "900001ms",
  "0.0001s",
  "1e300",
  "+275760-09-13T00:00:00.000Z",
  "+275760-09-13T00:00:00.001Z",
  "-271821-04-20T00:00:00.000Z",
  "9999-12-31T23:59:59.999Z",
  "+010000-01-01T00:00:00Z",
);

/** Ids shaped like other store keys or paths. */
const keyShaped = fc.constantFrom(
  "x:running",
  "s1:running",
  "a@1",
  "s1@1700000000000",
  "acme:s1@1700000000000",
  "{tw}:s:x",
  "{tw}:j:x",
  "../",
  "..",
  "%2e%2e",
  "a/b",
  "x".repeat(129),
  "x".repeat(3_000),
);

/** Lone surrogates alone or inside otherwise good text. */
const loneSurrogate = fc
  .tuple(
    fc.string({ maxLength: 8 }),
    fc.constantFrom("\ud800", "\udbff", "\udc00", "\udfff", "\ud83d"),
    fc.string({ maxLength: 8 }),
  )
  .map(([a, s, b]) => `${a}${s}${b}`);

/** Values that are close to valid as often as they are far from it. */
const value = fc.oneof(
  extremeNumber,
  extremeString,
  fc.constantFrom(...INHERITED),
  keyShaped,
  loneSurrogate,
  fc.array(fc.oneof(loneSurrogate, fc.constantFrom(...INHERITED), keyShaped), {
    minLength: 1,
    maxLength: 3,
  }),
  fc.constantFrom(
    "echo",
    "hold",
    "flaky",
    "nope",
    "61 * * * *",
    "*/5 * * * *",
    "1h",
    "30s",
    "0s",
    "-1",
    "Europe/Berlin",
    "Mars/Olympus",
    "skip",
    "once",
    "all",
    "allow",
    "2026-01-01T00:00:00Z",
    "not a date",
    "",
    "\u0000",
    "😀",
    "__proto__",
  ),
  fc.integer({ min: -1_000, max: 1_000 }),
  fc.constantFrom(0, 1, 5, 10, 11, 1e21, -0, 2 ** 53, Number.MAX_SAFE_INTEGER),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 40 }),
  fc.array(fc.string({ maxLength: 70 }), { maxLength: 25 }),
  fc.jsonValue({ maxDepth: 3 }),
);

/** A JSON body: a valid one with a few fields changed, a record of known and unknown fields,
 * any JSON value, or deep nesting. */
const jsonBody = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .tuple(
        fc.constantFrom(
          { handler: "echo", delay: "1h" },
          { handler: "echo", schedule: "1h" },
          { handler: "hold", input: { ms: 1 }, delay: "2h", tags: ["a"] },
          { priority: 3 },
          { handler: "nope", delay: "1h" },
          { handler: "echo", schedule: "61 * * * *", tz: "Mars/Olympus" },
          { handler: "echo", delay: "1h", idempotencyKey: "k-\ud800" },
          { handler: "constructor", delay: "1h" },
          { handler: "echo", schedule: "1h", startAt: 8_640_000_000_000_000 },
          { handler: "echo", timeout: "25d", delay: "1h" },
        ),
        fc.oneof(fc.constant({}), fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 2 })),
      )
      .map(([base, changes]) => ({ ...base, ...changes })),
  },
  fc.dictionary(fc.oneof(fc.constantFrom(...FIELDS), fc.string({ maxLength: 10 })), value, {
    maxKeys: 8,
  }),
  fc.jsonValue({ maxDepth: 4 }),
  fc
    .integer({ min: 0, max: 6_000 })
    .map((n) => ({ handler: "echo", delay: "1h", input: "x".repeat(n) })),
  fc.integer({ min: 30, max: 40 }).map((depth) => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = { a: v };
    return { handler: "echo", input: v };
  }),
);

const body = fc.oneof(
  {
    weight: 6,
    arbitrary: jsonBody.map((v) => ({
      text: JSON.stringify(v) ?? "null",
      type: "application/json",
    })),
  },
  fc.record({
    text: fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.constantFrom('{"handler":', "[[[[", '{"__proto__":1}', "\uFEFF{}", "{}".repeat(50)),
      fc.constantFrom(
        '{"handler":"echo","delay":"1h","idempotencyKey":"k-\\ud800"}',
        '{"handler":"echo","delay":"1h","tags":["\\udbff"]}',
        '{"handler":"echo","runAt":1e300}',
        '{"handler":"echo","delay":-0}',
        '{"handler":"echo","delay":NaN}',
        '{"handler":"echo","runAt":8.64e15}',
        '{"handler":"echo","delay":1e400}',
      ),
    ),
    type: fc.constantFrom(
      "application/json",
      "application/vnd.api+json",
      "text/plain",
      "application/x-www-form-urlencoded",
      "",
      "application/json; charset=latin1",
    ),
  }),
  // Raw bytes: overlong encodings (C0 AF = "/"), an encoded surrogate (ED A0 80), a truncated
  // sequence, inside an otherwise good body.
  fc
    .record({
      field: fc.constantFrom("handler", "idempotencyKey", "id", "tz", "schedule", "tags"),
      bytes: fc.constantFrom(
        [0xc0, 0xaf],
        [0xe0, 0x80, 0xaf],
        [0xf0, 0x80, 0x80, 0xaf],
        [0xed, 0xa0, 0x80],
        [0xed, 0xbf, 0xbf],
        [0xf4, 0x90, 0x80, 0x80],
        [0xe2, 0x82],
        [0xff],
      ),
      schedule: fc.boolean(),
    })
    .map(({ field, bytes, schedule }) => {
      const base = schedule
        ? { handler: "echo", schedule: "1h" }
        : { handler: "echo", delay: "1h" };
      const marker = "\u0001MARK\u0001";
      const json = JSON.stringify({
        ...base,
        [field]: field === "tags" ? [`t${marker}`] : `k${marker}`,
      }).replace(JSON.stringify(marker).slice(1, -1), "@@");
      const [before, after] = json.split("@@") as [string, string];
      const enc = new TextEncoder();
      return {
        bytes: new Uint8Array([...enc.encode(before), ...bytes, ...enc.encode(after)]),
        text: "",
        type: "application/json",
      };
    }),
  fc.constant(undefined),
);

/** True unless `text` holds a lone surrogate (`String.prototype.isWellFormed`, Node 20). */
function wellFormedText(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/**
 * Why a job or schedule body must be refused whatever else it holds (the classes of the
 * input-bounds review), or `undefined`: a handler name every object inherits, an id, key, tag,
 * time zone or schedule that is not well-formed Unicode, a duration or time out of its bounds.
 */
function mustRefuse(text: string): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return undefined;
  const b = body as Record<string, unknown>;
  if (typeof b.handler === "string" && INHERITED.includes(b.handler)) return "inherited handler";
  for (const key of ["idempotencyKey", "tz", "schedule", "id"]) {
    const v = b[key];
    if (typeof v === "string" && !wellFormedText(v)) return `${key} is not well-formed`;
  }
  if (Array.isArray(b.tags) && b.tags.some((t) => typeof t === "string" && !wellFormedText(t))) {
    return "a tag is not well-formed";
  }
  const durations = {
    delay: [0, MAX_DELAY_MS],
    timeout: [MIN_TIMEOUT_MS, MAX_TIMEOUT_MS],
    jitter: [0, MAX_JITTER_MS],
  } as const;
  for (const [key, [min, max]] of Object.entries(durations)) {
    const v = b[key];
    if (typeof v !== "number" && typeof v !== "string") continue;
    const ms = parseDuration(v);
    if (ms !== undefined && !(ms >= min && ms <= max)) return `${key} out of range`;
  }
  for (const key of ["runAt", "startAt", "endAt"]) {
    const v = b[key];
    const ms = typeof v === "number" ? v : typeof v === "string" ? Date.parse(v) : Number.NaN;
    if (Number.isNaN(ms)) continue;
    if (!(ms >= 0 && ms <= MAX_INSTANT_MS)) return `${key} out of range`;
    if (key === "runAt" && ms > Date.now() + MAX_DELAY_MS) return "runAt too far ahead";
  }
  return undefined;
}

/** What a generated body sends: its raw bytes when it has them, else its text. */
function bodyOf(body: GeneratedBody): BodyInit {
  return body.bytes ?? body.text;
}

type GeneratedBody = { text: string; type: string; bytes?: Uint8Array<ArrayBuffer> };

const query = fc.dictionary(
  fc.constantFrom(
    "limit",
    "cursor",
    "status",
    "handler",
    "scheduleId",
    "wait",
    "since",
    "type",
    "x",
    "__proto__",
    "constructor",
  ),
  fc.oneof(
    fc.constantFrom("1", "0", "100", "101", "-1", "1.5", "abc", "queued", "active", "10ms", "%ZZ"),
    fc.constantFrom(...INHERITED),
    keyShaped,
    extremeString,
    extremeNumber.map(String),
    fc.string({ maxLength: 30 }),
  ),
  { maxKeys: 4 },
);

/** Query text URLSearchParams cannot make: percent-encoded lone surrogates and overlong bytes. */
const rawQuery = fc.option(
  fc.constantFrom(
    "scheduleId=%ED%A0%80",
    "cursor=%ED%A0%80",
    "handler=%C0%AF",
    "scheduleId=x%3Arunning",
    "scheduleId=%7Btw%7D%3As%3Ax",
    "wait=1e300",
    "wait=100000000d",
    "limit=1e300",
    "status=__proto__",
    "scheduleId=constructor",
  ),
);

/** Which credentials: the right key, a read-only key, none, or garbage. */
const auth = fc.oneof(
  { weight: 8, arbitrary: fc.constant("admin") },
  fc.constantFrom("reader", "none", "garbage", "x-api-key", "basic"),
);

const request = fc.record({
  target: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(TARGETS[0]!, TARGETS[4]!, TARGETS[7]!) },
    { weight: 3, arbitrary: fc.constantFrom(...TARGETS) },
  ),
  id: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom("{job}", "s1") },
    fc.constantFrom("{job}", "s1", "j_missing", "a%2Fb", "..", "%00", "x".repeat(300)),
    fc.string({ minLength: 1, maxLength: 20 }).map(encodeURIComponent),
    fc.constantFrom(...INHERITED),
    keyShaped.map(encodeURIComponent),
    keyShaped,
    // Lone surrogates percent-encoded as UTF-8 would spell them (CESU), overlong bytes.
    fc.constantFrom("%ED%A0%80", "s%ED%B0%80", "%C0%AF", "%F0%80%80%AF", "%E0%80%AE%E0%80%AE"),
    extremeNumber.map(String),
  ),
  query,
  rawQuery,
  body,
  auth,
  extraHeader: fc.option(
    fc.record({
      name: fc.constantFrom("x-request-id", "content-encoding", "accept", "x-forwarded-for"),
      value: fc.string({ maxLength: 60 }).filter((v) => /^[\x20-\x7e]*$/.test(v)),
    }),
  ),
});

/** A value at an edge of the review's classes. */
const extreme = fc.oneof(
  extremeNumber,
  extremeString,
  fc.constantFrom(...INHERITED),
  keyShaped,
  loneSurrogate,
);

/**
 * A valid request with exactly one field at an edge — everything else as the route accepts it,
 * so the edge alone decides: a job submit, a schedule create, or a patch of schedule `s1`.
 */
const oneExtremeField = fc
  .oneof(
    fc.record({
      kind: fc.constant("job" as const),
      field: fc.constantFrom("delay", "runAt", "timeout", "handler", "idempotencyKey", "tags"),
      value: extreme,
    }),
    fc.record({
      kind: fc.constantFrom("schedule" as const, "patch" as const),
      field: fc.constantFrom(
        "timeout",
        "startAt",
        "endAt",
        "jitter",
        "handler",
        "tags",
        "tz",
        "schedule",
        "id",
      ),
      value: extreme,
    }),
  )
  .map(({ kind, field, value }) => {
    const base: Record<string, unknown> =
      kind === "job"
        ? field === "runAt"
          ? { handler: "echo" }
          : { handler: "echo", delay: "1h" }
        : kind === "schedule"
          ? { handler: "echo", schedule: "1h" }
          : {};
    const body = { ...base, [field]: field === "tags" ? [value] : value };
    const target =
      kind === "job"
        ? TARGETS[0]!
        : kind === "schedule"
          ? TARGETS[4]!
          : { method: "PATCH", path: "/v1/schedules/s1" };
    return {
      target,
      id: "s1",
      query: {},
      rawQuery: null,
      body: { text: JSON.stringify(body), type: "application/json" } as GeneratedBody,
      auth: "admin",
      extraHeader: null,
    };
  });

/** The requests the fuzz sends: anything at all, or one valid but for one extreme field. */
const requests = fc.oneof({ weight: 3, arbitrary: request }, oneExtremeField);

describe.each(storeFactories.filter((f) => f.name !== "upstash"))("fuzz on $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;
  let acme: TestTenant;
  let jobId: string;

  beforeAll(async () => {
    handle = await factory.make();
    acme = await tenant(
      "acme",
      { admin: ["admin"], reader: ["read"] },
      { quotas: { submit: { perMinute: 1_000 } }, maxInputBytes: 100 },
    );
    h = await securedApp(handle.store, [acme], { app: { bodyLimitBytes: 4_096 } });
    const job = await fetch(`${h.origin}/v1/jobs`, {
      method: "POST",
      headers: { ...bearer(acme.keys.admin!), "content-type": "application/json" },
      body: JSON.stringify({ handler: "echo", delay: "1h" }),
    });
    jobId = ((await job.json()) as { id: string }).id;
    await fetch(`${h.origin}/v1/schedules`, {
      method: "POST",
      headers: { ...bearer(acme.keys.admin!), "content-type": "application/json" },
      body: JSON.stringify({ id: "s1", handler: "echo", schedule: "1h" }),
    });
  });

  afterAll(async () => {
    await h.close();
    await handle.cleanup();
  });

  it("never answers 5xx, and a 4xx changes nothing", async () => {
    const seen = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(requests, async (r) => {
        const id = r.id === "{job}" ? jobId : r.id;
        const path = r.target.path.replace("{id}", id);
        const search = [new URLSearchParams(r.query).toString(), r.rawQuery ?? ""]
          .filter(Boolean)
          .join("&");
        const headers = new Headers();
        if (r.auth === "admin") headers.set("authorization", `Bearer ${acme.keys.admin!.key}`);
        if (r.auth === "reader") headers.set("authorization", `Bearer ${acme.keys.reader!.key}`);
        if (r.auth === "garbage") headers.set("authorization", "Bearer tw_garbage");
        if (r.auth === "x-api-key") headers.set("x-api-key", acme.keys.admin!.key);
        if (r.auth === "basic") headers.set("authorization", "Basic YTpi");
        if (r.extraHeader) headers.set(r.extraHeader.name, r.extraHeader.value);
        const withBody = r.body !== undefined && r.target.method !== "GET";
        if (withBody && r.body!.type) headers.set("content-type", r.body!.type);
        const before = await storeState(h.store);
        const res = await fetch(`${h.origin}${path}${search ? `?${search}` : ""}`, {
          method: r.target.method,
          headers,
          ...(withBody ? { body: bodyOf(r.body!) } : {}),
        });
        const text = await res.text();
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        expect(res.status, `${r.target.method} ${path}: ${text}`).toBeLessThan(500);
        expect(res.headers.get("x-request-id")).toBeTruthy();
        const sent: GeneratedBody | undefined = withBody ? r.body : undefined;
        const why = sent && !sent.bytes ? mustRefuse(sent.text) : undefined;
        if (why && /^(POST|PATCH) \/v1\/(jobs|schedules)/.test(`${r.target.method} ${path}`)) {
          expect(res.status, `${r.target.method} ${path} (${why}): ${text}`).toBeGreaterThanOrEqual(
            400,
          );
        }
        if (res.status >= 400) {
          expect(res.headers.get("content-type")).toBe("application/problem+json");
          const problem = JSON.parse(text) as { status: number; type: string };
          expect(problem.status).toBe(res.status);
          expect(problem.type).toMatch(/^urn:tickwork:problem:[a-z_]+$/);
          expect(await storeState(h.store), `${r.target.method} ${path} → ${res.status}`).toBe(
            before,
          );
        }
      }),
      {
        numRuns: Number(process.env.FUZZ_RUNS ?? 300),
        seed: Number(process.env.FUZZ_SEED ?? 20_261_126),
      },
    );
    // The fuzz reached past auth and validation as well as being refused by them.
    const statuses = [...seen.keys()];
    for (const status of [200, 202, 400, 401, 403, 404, 413, 415, 422]) {
      expect(statuses).toContain(status);
    }
  });
});
