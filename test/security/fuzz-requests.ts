/**
 * @module
 * The requests the HTTP fuzz (`fuzz.test.ts`) sends: a target route, an id, a query (also one
 * `URLSearchParams` cannot make), a body (JSON near and far from valid, other types, raw bytes
 * with malformed UTF-8), credentials and an extra header — or a valid request with exactly one
 * field at an edge.
 */
import fc from "fast-check";
import {
  extreme,
  extremeNumber,
  extremeString,
  INHERITED,
  keyShaped,
  value,
} from "./fuzz-values.ts";

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

export type GeneratedBody = { text: string; type: string; bytes?: Uint8Array<ArrayBuffer> };

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
export const requests = fc.oneof({ weight: 3, arbitrary: request }, oneExtremeField);
