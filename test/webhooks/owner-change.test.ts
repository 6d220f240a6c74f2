/**
 * An endpoint's history (`GET /v1/hooks`) and counts (`/metrics`) are kept under its tenant and
 * name: when the operator passes a name from one tenant's endpoint to another tenant's (acme's
 * `stripe` renamed, beta declaring `stripe`), beta does not see acme's deliveries — their times,
 * acme's event ids and job ids — nor acme's counts under `stripe`. Two app configurations on one
 * store, over a real socket; memory and Redis.
 */
import { afterAll, describe, expect, it } from "vitest";
import { hashKey } from "../../src/config/keys.ts";
import { call, type Harness, startHarness } from "../http/harness.ts";
import { makeRedisStore, type StoreHandle, storeFactories } from "../support/stores.ts";
import { recordingHandlers } from "./harness.ts";
import { stripeSender } from "./senders.ts";

const KEY_ACME = "key-acme-0123456789abcdef0123456789ab";
const KEY_BETA = "key-beta-0123456789abcdef0123456789ab";

const factories = [
  storeFactories.find((f) => f.name === "memory")!,
  { name: "redis", make: (): Promise<StoreHandle> => makeRedisStore() },
];

describe.each(factories)("a webhook endpoint name that changes tenant, on $name", (factory) => {
  const harnesses: Harness[] = [];
  const handles: StoreHandle[] = [];
  afterAll(async () => {
    for (const h of harnesses) await h.close();
    for (const handle of handles) await handle.cleanup();
  });

  it("the new owner sees none of the old owner's deliveries or counts", async () => {
    const stripe = stripeSender();
    const handle = await factory.make();
    handles.push(handle);
    const rec = recordingHandlers();
    const tenants = async (acmeName: string, betaName?: string) => [
      {
        id: "acme",
        keys: [{ hash: await hashKey(KEY_ACME), scopes: ["read" as const, "jobs:write" as const] }],
        webhooks: { [acmeName]: { verifier: stripe.verifier, handler: "hook.receive" } },
      },
      {
        id: "beta",
        keys: [{ hash: await hashKey(KEY_BETA), scopes: ["read" as const] }],
        ...(betaName
          ? { webhooks: { [betaName]: { verifier: stripe.verifier, handler: "hook.receive" } } }
          : {}),
      },
    ];
    const start = async (acmeName: string, betaName?: string) => {
      const h = await startHarness({
        store: handle.store,
        handlers: rec.handlers,
        app: { dev: false, tickSecret: false, tenants: await tenants(acmeName, betaName) },
      });
      harnesses.push(h);
      return h;
    };

    // First acme owns `stripe` and takes a delivery.
    const before = await start("stripe");
    const body = stripe.body("evt_acme_private_1");
    const delivered = await call(before.origin, "POST", "/v1/hooks/stripe", {
      body,
      headers: await stripe.sign(body, "evt_acme_private_1"),
    });
    expect(delivered.status).toBe(202);
    const acmeList = await call(before.origin, "GET", "/v1/hooks", {
      headers: { authorization: `Bearer ${KEY_ACME}` },
    });
    expect(acmeList.body.items[0].deliveries).toHaveLength(1);

    // Then acme's endpoint is renamed, and beta declares `stripe`.
    const after = await start("acme-stripe", "stripe");
    const betaList = await call(after.origin, "GET", "/v1/hooks", {
      headers: { authorization: `Bearer ${KEY_BETA}` },
    });
    expect(betaList.status).toBe(200);
    expect(betaList.body.items).toEqual([
      expect.objectContaining({ name: "stripe", deliveries: [] }),
    ]);
    expect(JSON.stringify(betaList.body)).not.toContain("evt_acme_private_1");
    const metrics = await call(after.origin, "GET", "/metrics", {
      headers: { authorization: `Bearer ${KEY_BETA}` },
    });
    expect(metrics.status).toBe(200);
    // Its own endpoint shows, at 0: acme's accepted delivery is not beta's.
    const stripeLines = String(metrics.body)
      .split("\n")
      .filter((l) => l.startsWith('tickwork_webhook_requests_total{endpoint="stripe"'));
    expect(stripeLines).toEqual([
      'tickwork_webhook_requests_total{endpoint="stripe",outcome="accepted"} 0',
    ]);
  });
});
