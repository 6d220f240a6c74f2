/**
 * Endpoint configuration refused up front rather than per delivery: a handler the engine does not
 * have (every delivery would be 422) stops `createApp` with a `ConfigValidationError` naming the
 * endpoint's path; `_unknown` (the metrics label of unknown names) is no endpoint's name; and
 * `input.headers` may not list `__proto__`, `constructor` or `prototype`.
 */
import { describe, expect, it } from "vitest";
import { ConfigValidationError, parseConfig } from "../../src/config/index.ts";
import { isWebhookName } from "../../src/config/webhooks.ts";
import type { WebhookVerifier } from "../../src/core/webhooks/index.ts";
import { createEngine } from "../../src/engine/index.ts";
import { createApp } from "../../src/http/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { UNKNOWN_WEBHOOK_ENDPOINT } from "../../src/store/port.ts";

const HASH = `sha256:${"a".repeat(64)}`;
const stripe: WebhookVerifier = { scheme: "stripe", secrets: ["whsec_test"] };

function engineWith(names: string[]) {
  return createEngine({
    store: new MemoryStore(),
    transport: { publish: async () => [], verify: async () => false },
    handlers: Object.fromEntries(names.map((n) => [n, { run: async () => null }])),
  } as never);
}

function issuesOf(run: () => unknown): { path: string; message: string }[] {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigValidationError);
    return [...(error as ConfigValidationError).issues];
  }
  throw new Error("accepted");
}

describe("webhook endpoints checked when the app is built", () => {
  it("a handler the engine does not have is a configuration error naming the endpoint", () => {
    const engine = engineWith(["stripe.event"]);
    const top = issuesOf(() =>
      createApp({
        engine,
        dev: true,
        webhooks: {
          ok: { verifier: stripe, handler: "stripe.event" },
          typo: { verifier: stripe, handler: "stripe.evnet" },
        },
      }),
    );
    expect(top).toEqual([
      {
        path: "webhooks.typo.handler",
        message: expect.stringMatching(/"stripe\.evnet".*not registered/),
      },
    ]);
    const tenant = issuesOf(() =>
      createApp({
        engine,
        tenants: [
          {
            id: "acme",
            keys: [{ hash: HASH, scopes: ["read"] }],
            webhooks: { acme: { verifier: stripe, handler: "toString" } },
          },
        ],
      }),
    );
    expect(tenant).toEqual([
      { path: "tenants.0.webhooks.acme.handler", message: expect.stringContaining('"toString"') },
    ]);
    // Registered handlers pass.
    expect(() =>
      createApp({
        engine,
        dev: true,
        webhooks: { ok: { verifier: stripe, handler: "stripe.event" } },
      }),
    ).not.toThrow();
  });

  it("_unknown, the label of unknown names, is no endpoint's name", () => {
    expect(isWebhookName(UNKNOWN_WEBHOOK_ENDPOINT)).toBe(false);
    const issues = issuesOf(() =>
      parseConfig({ webhooks: { _unknown: { verifier: stripe, handler: "stripe.event" } } }),
    );
    expect(issues.map((i) => i.path)).toEqual(["webhooks._unknown"]);
    expect(isWebhookName("_unknown_not")).toBe(true);
  });

  it("input.headers may not list __proto__, constructor or prototype", () => {
    for (const name of ["__proto__", "constructor", "prototype"]) {
      const issues = issuesOf(() =>
        parseConfig({
          webhooks: {
            s: { verifier: stripe, handler: "stripe.event", input: { headers: ["x-ok", name] } },
          },
        }),
      );
      expect(issues.map((i) => i.path)).toEqual(["webhooks.s.input.headers.1"]);
    }
  });
});
