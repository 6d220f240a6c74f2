/**
 * A browser app on another origin whose OpenTelemetry instrumentation propagates the trace to
 * tickwork sends `traceparent` and `tracestate` with `POST /v1/jobs` (docs/adr/0019-opentelemetry-traces.md):
 * the CORS preflight must allow them, or the browser refuses the submit itself.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { type Harness, startHarness } from "../http/harness.ts";

describe("a browser on another origin", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("may send traceparent and tracestate with a submit (CORS preflight)", async () => {
    h = await startHarness({
      store: new MemoryStore(),
      handlers: { echo: { run: (x) => x } },
      app: { cors: { origins: ["https://app.example.com"] } },
    });
    const answer = await fetch(`${h.origin}/v1/jobs`, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example.com",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type,traceparent,tracestate",
      },
    });
    expect(answer.status).toBe(204);
    const allowed = (answer.headers.get("access-control-allow-headers") ?? "")
      .toLowerCase()
      .split(/\s*,\s*/);
    expect(allowed).toEqual(expect.arrayContaining(["traceparent", "tracestate"]));
  });
});
