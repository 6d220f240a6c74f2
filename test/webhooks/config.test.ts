/**
 * Webhook endpoints in the configuration: what `parseConfig` (the JSON file) and `defineConfig`
 * (code) accept and refuse — names (inherited object keys as JSON keys, dot segments, length),
 * the bounds, a name used by two tenants (the error names both), a handler outside its tenant's
 * manifest — and that the published JSON schema holds them; `resolveWebhooks` maps them by name.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { resolveDeployment } from "../../src/adapter/deployment.ts";
import {
  type Config,
  ConfigValidationError,
  configSchema,
  defineConfig,
  parseConfig,
} from "../../src/config/index.ts";
import { CONFIG_SCHEMA_FILE, configJsonSchemaText } from "../../src/config/json-schema.ts";
import { isWebhookName, resolveWebhooks } from "../../src/config/webhooks.ts";
import type { WebhookVerifier } from "../../src/core/webhooks/index.ts";
import { createEngine } from "../../src/engine/index.ts";
import { createApp } from "../../src/http/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";

const HASH = `sha256:${"a".repeat(64)}`;
const HASH2 = `sha256:${"b".repeat(64)}`;
const DEV = { dev: true, queue: "local", horizonMs: 1_000 } as const;
const stripe: WebhookVerifier = { scheme: "stripe", secrets: ["whsec_test"] };
const endpoint = { verifier: stripe, handler: "stripe.event" };

function issuesOf(value: unknown): { path: string; message: string }[] {
  try {
    parseConfig(value);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigValidationError);
    return [...(error as ConfigValidationError).issues];
  }
  throw new Error("accepted");
}

describe("webhooks in the configuration", () => {
  it("accepts top-level (default tenant) and per-tenant endpoints, from JSON and from code", () => {
    const config: Config = {
      webhooks: { stripe: endpoint },
      tenants: [
        {
          id: "acme",
          keys: [{ hash: HASH, scopes: ["read"] }],
          manifest: { submit: ["github.*"] },
          webhooks: {
            "gh.main": {
              verifier: { scheme: "github", secrets: ["s3cret"] },
              handler: "github.push",
              input: { headers: ["x-github-event"] },
              idempotencyKey: "event",
              status: 200,
            },
          },
        },
      ],
    };
    expect(parseConfig(JSON.stringify(config))).toEqual(config);
    expect(defineConfig(config)).toBe(config);
    const resolved = resolveWebhooks(config);
    expect([...resolved.keys()]).toEqual(["gh.main", "stripe"]);
    expect(resolved.get("stripe")).toMatchObject({ tenant: "default", status: 202 });
    expect(resolved.get("gh.main")).toMatchObject({
      tenant: "acme",
      status: 200,
      headers: ["x-github-event"],
      manifest: { submit: ["github.*"] },
    });
  });

  it("refuses inherited names as JSON keys, dot segments and bad names", () => {
    for (const name of [
      "__proto__",
      "constructor",
      "toString",
      "prototype",
      ".",
      "..",
      "a/b",
      "",
      "x".repeat(65),
      "é",
    ]) {
      expect(isWebhookName(name), name).toBe(false);
      const text = `{"webhooks":{${JSON.stringify(name)}:${JSON.stringify(endpoint)}}}`;
      expect(issuesOf(text).length, name).toBeGreaterThan(0);
    }
    expect(isWebhookName("a.b-c_1")).toBe(true);
  });

  it("bounds endpoints per tenant, input headers and the answer status", () => {
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`e${i}`, endpoint]));
    expect(issuesOf({ webhooks: many })[0]?.message).toMatch(/at most 100/);
    expect(issuesOf({ webhooks: { a: { ...endpoint, status: 201 } } })[0]?.path).toBe(
      "webhooks.a.status",
    );
    expect(
      issuesOf({ webhooks: { a: { ...endpoint, input: { headers: ["X-Upper"] } } } }).length,
    ).toBeGreaterThan(0);
    expect(issuesOf({ webhooks: { a: { ...endpoint, extra: 1 } } }).length).toBeGreaterThan(0);
    expect(
      issuesOf({ webhooks: { a: { ...endpoint, verifier: { scheme: "nope", secrets: ["x"] } } } })
        .length,
    ).toBeGreaterThan(0);
  });

  it("names both tenants when an endpoint name is used twice", () => {
    const issues = issuesOf({
      tenants: [
        { id: "acme", keys: [{ hash: HASH, scopes: ["read"] }], webhooks: { shared: endpoint } },
        { id: "globex", keys: [{ hash: HASH2, scopes: ["read"] }], webhooks: { shared: endpoint } },
      ],
    });
    expect(issues).toEqual([
      {
        path: "tenants.1.webhooks.shared",
        message: expect.stringMatching(/"shared".*tenant "acme".*tenant "globex"/),
      },
    ]);
  });

  it("refuses a handler outside the tenant's manifest.submit", () => {
    const issues = issuesOf({
      tenants: [
        {
          id: "acme",
          keys: [{ hash: HASH, scopes: ["read"] }],
          manifest: { submit: ["email.*"] },
          webhooks: { stripe: endpoint },
        },
      ],
    });
    expect(issues).toEqual([
      { path: "tenants.0.webhooks.stripe.handler", message: expect.stringMatching(/manifest/) },
    ]);
  });

  it("reaches the app from every platform's configuration (resolveDeployment), and createApp checks it", () => {
    const text = JSON.stringify({ webhooks: { stripe: endpoint } });
    const deployment = resolveDeployment({ ...DEV, config: text });
    expect(deployment.app.webhooks).toEqual({ stripe: endpoint });
    expect(() => resolveDeployment({ ...DEV, config: '{"webhooks":{"__proto__":{}}}' })).toThrow(
      /__proto__/,
    );
    const engine = createEngine({
      store: new MemoryStore(),
      transport: { publish: async () => [], verify: async () => false },
      handlers: {},
    } as never);
    expect(() =>
      createApp({
        engine,
        tenants: [
          { id: "a", keys: [{ hash: HASH, scopes: ["read"] }], webhooks: { x: endpoint } },
          { id: "b", keys: [{ hash: HASH2, scopes: ["read"] }], webhooks: { x: endpoint } },
        ],
      }),
    ).toThrow(/tenant "a" and by tenant "b"/);
  });

  it("is in the published JSON schema", () => {
    const published = JSON.parse(readFileSync(CONFIG_SCHEMA_FILE, "utf8"));
    expect(published).toEqual(JSON.parse(configJsonSchemaText()));
    expect(published.properties.webhooks.propertyNames.pattern).toBe("^[A-Za-z0-9_.-]{1,64}$");
    expect(configSchema.safeParse({ webhooks: { ok: endpoint } }).success).toBe(true);
  });
});
