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
 *
 * The requests are built in `fuzz-requests.ts` (from the values in `fuzz-values.ts`); this file
 * holds the oracle (which bodies must be refused) and the property.
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
import { type GeneratedBody, requests } from "./fuzz-requests.ts";
import { INHERITED } from "./fuzz-values.ts";
import { bearer, securedApp, storeState, type TestTenant, tenant } from "./support.ts";

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
