/**
 * The app stays within Hono's one-regular-expression router (`RegExpRouter`): a route it cannot
 * hold makes Hono fall back to the tree router for every request, which costs CPU on every submit
 * (see `src/http/middleware/method-not-allowed.ts`).
 */
import { describe, expect, it } from "vitest";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { createApp } from "../../src/http/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";

describe("the app's router", () => {
  it.each([
    ["every role", ["all"] as const],
    ["the api role", ["api"] as const],
  ])("is Hono's RegExpRouter with %s", async (_, roles) => {
    const engine = createEngine({
      store: new MemoryStore(),
      // Never called: the test only routes a health check.
      transport: { publish: async () => [], verify: async () => false },
      handlers: { echo: { run: (input: unknown) => input } },
      logger: silentLogger,
    });
    const app = createApp({
      engine,
      publicUrl: "http://app.test",
      tickSecret: false,
      apiKeys: ["k".repeat(32)],
      roles: [...roles],
    });
    // The smart router settles on its first match.
    expect((await app.request("/health")).status).toBe(200);
    const router = app.router as unknown as { name: string };
    expect(router.name).toBe("SmartRouter + RegExpRouter");
  });
});
