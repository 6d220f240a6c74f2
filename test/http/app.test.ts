/**
 * App-wide behaviour over a real socket: health, request ids on every answer, mounting under a
 * base path, option checks.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { createApp } from "../../src/http/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import { call, expectProblem, type Harness, startHarness, testHandlers } from "./harness.ts";

describe.each(storeFactories)("the app on $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;

  beforeEach(async () => {
    handle = await factory.make();
  });

  afterEach(async () => {
    await h.close();
    await handle.cleanup();
  });

  it("answers /health and /ready", async () => {
    h = await startHarness({ store: handle.store, handlers: testHandlers().handlers });
    const health = await call(h.origin, "GET", "/health");
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ ok: true });
    const ready = await call(h.origin, "GET", "/ready");
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ ok: true, degradation: "normal" });
    expect((await fetch(`${h.origin}/health`, { method: "HEAD" })).status).toBe(200);
  });

  it("puts x-request-id on every answer: the caller's when sane, else a fresh one", async () => {
    h = await startHarness({ store: handle.store, handlers: testHandlers().handlers });
    const echoed = await call(h.origin, "GET", "/health", {
      headers: { "x-request-id": "abc-123.x:y=" },
    });
    expect(echoed.headers.get("x-request-id")).toBe("abc-123.x:y=");
    for (const bad of ["has space", "x".repeat(129), "<script>", ""]) {
      const replaced = await call(h.origin, "GET", "/health", { headers: { "x-request-id": bad } });
      expect(replaced.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    }
    const seen = new Set<string | null>();
    for (const [method, path] of [
      ["GET", "/nope"],
      ["PUT", "/v1/jobs"],
      ["POST", "/v1/worker"],
      ["POST", "/v1/jobs"],
      ["GET", "/v1/jobs"],
    ] as const) {
      const answer = await call(h.origin, method, path);
      expect(answer.headers.get("x-request-id"), `${method} ${path}`).toMatch(/^[0-9a-f-]{36}$/);
      seen.add(answer.headers.get("x-request-id"));
    }
    expect(seen.size).toBe(5);
    // A submit's usual answer is built with plain headers: the id, its type and its Location.
    const submitted = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", input: {} },
      headers: { "x-request-id": "submit-1" },
    });
    expect(submitted.status).toBe(202);
    expect(submitted.headers.get("x-request-id")).toBe("submit-1");
    expect(submitted.headers.get("content-type")).toBe("application/json");
    expect(submitted.headers.get("location")).toBe(`/v1/jobs/${submitted.body.id}`);
  });

  it("mounts every route under basePath; paths outside it are 404 problems", async () => {
    const basePath = "/api/tickwork";
    h = await startHarness({
      store: handle.store,
      handlers: testHandlers().handlers,
      basePath,
      app: { basePath: "api/tickwork/" },
    });
    expect((await call(h.origin, "GET", `${basePath}/health`)).status).toBe(200);
    expect((await call(h.origin, "GET", `${basePath}/ready`)).status).toBe(200);
    const outside = await call(h.origin, "GET", "/health");
    expectProblem(outside, 404);
    expectProblem(await call(h.origin, "GET", "/v1/jobs"), 404);
    const submitted = await call(h.origin, "POST", `${basePath}/v1/jobs`, {
      json: { handler: "echo", input: "hi" },
    });
    expect(submitted.status).toBe(202);
    expect(submitted.headers.get("location")).toBe(`${basePath}/v1/jobs/${submitted.body.id}`);
    // The local queue delivered to `${basePath}/v1/worker`.
    const done = await call(h.origin, "GET", `${submitted.headers.get("location")}?wait=5s`);
    expect(done.body).toMatchObject({ status: "succeeded", result: "hi" });
    expectProblem(await call(h.origin, "PUT", `${basePath}/v1/jobs`), 405);
  });
});

describe("createApp options", () => {
  const engine = createEngine({
    store: new MemoryStore(),
    transport: { publish: async () => [], verify: async () => false },
    handlers: {},
    logger: silentLogger,
  });

  it("refuses a bad base path, body limit or public URL", () => {
    expect(() => createApp({ engine, basePath: "/a b" })).toThrow(RangeError);
    expect(() => createApp({ engine, basePath: "/a//b" })).toThrow(RangeError);
    expect(() => createApp({ engine, bodyLimitBytes: 0 })).toThrow(RangeError);
    expect(() => createApp({ engine, publicUrl: "not a url" })).toThrow(TypeError);
  });

  it("outside dev, refuses an API without keys and a tick route without a secret", () => {
    createApp({ engine, dev: true });
    createApp({ engine, tickSecret: "s", apiKeys: ["k"] });
    createApp({ engine, tickSecret: false, apiKeys: ["k"] });
    expect(() => createApp({ engine, tickSecret: "s" })).toThrow(/no API key configured/);
    expect(() => createApp({ engine, apiKeys: ["k"] })).toThrow(/no tickSecret/);
  });
});
