import { describe, expect, it } from "vitest";
import type { DeliveryOutcome } from "../core/delivery.ts";
import { deliveryResponse } from "./delivery.ts";

/** Status, every header and the body text of the answer to `outcome`. */
async function wire(outcome: DeliveryOutcome) {
  const res = deliveryResponse(outcome);
  return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() };
}

const JSON_TYPE = { "content-type": "application/json" };
const PROBLEM_TYPE = { "content-type": "application/problem+json" };
const error = { name: "Error", message: "boom" };

describe("deliveryResponse", () => {
  it("done: 200 with the job's status", async () => {
    expect(await wire({ kind: "done", id: "j_1", status: "succeeded" })).toEqual({
      status: 200,
      headers: JSON_TYPE,
      body: '{"id":"j_1","status":"succeeded"}',
    });
    expect((await wire({ kind: "done", id: "j_1", status: "gone" })).body).toBe(
      '{"id":"j_1","status":"gone"}',
    );
  });

  it("retry: 500, with Retry-After in whole seconds (at least 1) when asked", async () => {
    expect(await wire({ kind: "retry", id: "j_1", error })).toEqual({
      status: 500,
      headers: JSON_TYPE,
      body: '{"id":"j_1","status":"failed","error":{"name":"Error","message":"boom"}}',
    });
    const later = await wire({ kind: "retry", id: "j_1", error, retryAfterMs: 1_500 });
    expect(later.headers["retry-after"]).toBe("2");
    const soon = await wire({ kind: "retry", id: "j_1", error, retryAfterMs: 1 });
    expect(soon.headers["retry-after"]).toBe("1");
  });

  it("give-up: 489 + Upstash-NonRetryable-Error, the job dead", async () => {
    expect(await wire({ kind: "give-up", id: "j_1", error })).toEqual({
      status: 489,
      headers: { ...JSON_TYPE, "upstash-nonretryable-error": "true" },
      body: '{"id":"j_1","status":"dead","error":{"name":"Error","message":"boom"}}',
    });
  });

  it("busy: 409 problem + Retry-After, by reason", async () => {
    expect(await wire({ kind: "busy", reason: "attempt-running", retryAfterMs: 4_001 })).toEqual({
      status: 409,
      headers: { ...PROBLEM_TYPE, "retry-after": "5" },
      body: JSON.stringify({
        type: "urn:tickwork:problem:attempt_running",
        title: "Conflict",
        status: 409,
        detail: "another attempt of this job is running",
      }),
    });
    const lapsed = await wire({ kind: "busy", reason: "lease-lapsed", retryAfterMs: 1_000 });
    expect(lapsed.headers["retry-after"]).toBe("1");
    expect(JSON.parse(lapsed.body)).toMatchObject({ type: "urn:tickwork:problem:lease_lapsed" });
    const limited = await wire({ kind: "busy", reason: "limited", retryAfterMs: 61_200 });
    expect(limited.status).toBe(409);
    expect(limited.headers["retry-after"]).toBe("62");
    expect(JSON.parse(limited.body)).toMatchObject({
      type: "urn:tickwork:problem:concurrency_limited",
    });
    const running = await wire({ kind: "busy", reason: "still-running", retryAfterMs: 3_000 });
    expect(JSON.parse(running.body)).toMatchObject({
      type: "urn:tickwork:problem:attempt_running",
      detail: "the reported job is still running under its lease",
    });
  });

  it("unauthorized: 401 problem", async () => {
    expect(await wire({ kind: "unauthorized" })).toEqual({
      status: 401,
      headers: PROBLEM_TYPE,
      body: JSON.stringify({
        type: "urn:tickwork:problem:unauthorized",
        title: "Unauthorized",
        status: 401,
        detail: "invalid or missing delivery signature",
      }),
    });
  });

  it("bad-request: 489 non-retryable for a body that is not a job, or a callback of none", async () => {
    expect(await wire({ kind: "bad-request", expected: "job" })).toEqual({
      status: 489,
      headers: { ...PROBLEM_TYPE, "upstash-nonretryable-error": "true" },
      body: JSON.stringify({
        type: "urn:tickwork:problem:not_a_job",
        title: "Not Retryable",
        status: 489,
        detail: "delivery body is not a tickwork job",
      }),
    });
    expect(await wire({ kind: "bad-request", expected: "failure-callback" })).toEqual({
      status: 489,
      headers: { ...PROBLEM_TYPE, "upstash-nonretryable-error": "true" },
      body: JSON.stringify({
        type: "urn:tickwork:problem:not_a_job",
        title: "Not Retryable",
        status: 489,
        detail: "not a failure callback for a tickwork job",
      }),
    });
  });
});
