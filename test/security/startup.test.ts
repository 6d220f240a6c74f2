/**
 * Starting outside dev (Node): without any key the server refuses to start and says exactly what
 * to do; `TICKWORK_CONFIG` names a JSON file (or holds the JSON) whose tenants' hashed keys are
 * then the only way in; without `CRON_SECRET` `/v1/tick` is not served over HTTP (the server's own
 * timer ticks), with it the route needs the secret. Real servers on real sockets.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { serverOptionsFromEnv } from "../../src/adapter/node/env.ts";
import { ConfigError, StartError } from "../../src/adapter/node/errors.ts";
import { type RunningServer, startServer } from "../../src/adapter/node/start.ts";
import { silentLogger } from "../../src/engine/logger.ts";
import { expectProblem, testHandlers } from "../http/harness.ts";
import { bearer, call, tenant } from "./support.ts";

const open: RunningServer[] = [];
afterEach(async () => {
  for (const server of open.splice(0)) await server.close();
});

const REDIS = { REDIS_URL: "redis://127.0.0.1:6379" };

describe("configuration from the environment", () => {
  it("start without a key says what to set, and how to make a hashed key", () => {
    let message = "";
    try {
      serverOptionsFromEnv(REDIS, "start");
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      message = (error as Error).message;
    }
    for (const text of [
      "TICKWORK_API_KEY",
      "TICKWORK_CONFIG",
      "npx tickwork hash-key",
      "tickwork dev",
    ]) {
      expect(message).toContain(text);
    }
  });

  it("TICKWORK_CONFIG names a file, or holds the JSON; its tenant keys are enough to start", async () => {
    const acme = await tenant("acme", { client: ["jobs:write", "read"] }, { submit: ["echo"] });
    const config = { tenants: [acme.config], cors: { origins: ["https://app.example.com"] } };
    const dir = mkdtempSync(join(tmpdir(), "tickwork-config-"));
    const file = join(dir, "tickwork.config.json");
    writeFileSync(file, JSON.stringify(config));
    for (const value of [file, JSON.stringify(config)]) {
      const options = serverOptionsFromEnv({ ...REDIS, TICKWORK_CONFIG: value }, "start");
      expect(options.config).toEqual(config);
      expect(options.apiKeys).toBeUndefined();
    }
    // Dev has no auth: the tenants are dropped, the rest kept.
    expect(serverOptionsFromEnv({ TICKWORK_CONFIG: file }, "dev").config).toEqual({
      cors: config.cors,
    });
  });

  it("an unreadable or invalid TICKWORK_CONFIG is a ConfigError naming the file and the problem", () => {
    const dir = mkdtempSync(join(tmpdir(), "tickwork-config-"));
    const file = join(dir, "bad.json");
    writeFileSync(
      file,
      JSON.stringify({ tenants: [{ id: "a", keys: [{ hash: "md5:1", scopes: ["read"] }] }] }),
    );
    expect(() => serverOptionsFromEnv({ ...REDIS, TICKWORK_CONFIG: file }, "start")).toThrow(
      new RegExp(`${file} is not a valid tickwork configuration:\\n  tenants.0.keys.0.hash`),
    );
    expect(() =>
      serverOptionsFromEnv({ ...REDIS, TICKWORK_CONFIG: join(dir, "missing.json") }, "start"),
    ).toThrow(/cannot be read \(ENOENT\)/);
  });
});

describe("startServer outside dev", () => {
  const base = {
    handlers: testHandlers().handlers,
    dev: false,
    port: 0,
    hostname: "127.0.0.1",
    signals: false as const,
    print: false as const,
    engine: { logger: silentLogger },
  };

  it("refuses to start without a key", async () => {
    const failed = await startServer(base).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(StartError);
    expect((failed as Error).message).toMatch(/no API key configured[\s\S]*npx tickwork hash-key/);
  });

  it("with tenants only their keys get in; /v1/tick is off without CRON_SECRET", async () => {
    const acme = await tenant("acme", { client: ["jobs:write", "read"] });
    const server = await startServer({ ...base, config: { tenants: [acme.config] } });
    open.push(server);
    // No TICKWORK_API_KEY: the curl lines' $TICKWORK_API_KEY is for a tenant's key.
    expect(server.banner).toContain(
      "API key required: a key of the 1 tenant in TICKWORK_CONFIG (the lines below send $TICKWORK_API_KEY: set it in your shell to one of them)",
    );
    expect(server.banner).toContain("/v1/tick over HTTP off (set CRON_SECRET to serve it)");
    expectProblem(await call(server.url, "POST", "/v1/jobs", { json: { handler: "echo" } }), 401);
    const ok = await call(server.url, "POST", "/v1/jobs", {
      json: { handler: "echo", input: 1 },
      headers: bearer(acme.keys.client!),
    });
    expect(ok.status).toBe(202);
    expect((await server.engine.store.getJob(ok.body.id))?.tenant).toBe("acme");
    expectProblem(await call(server.url, "GET", "/v1/tick"), 404);
    expectProblem(await call(server.url, "POST", "/v1/tick", { headers: bearer("anything") }), 404);
  });

  it("with CRON_SECRET, /v1/tick is served and needs it", async () => {
    const server = await startServer({ ...base, apiKeys: ["k"], tickSecret: "cron-s3cret" });
    open.push(server);
    expectProblem(await call(server.url, "GET", "/v1/tick"), 401);
    expectProblem(await call(server.url, "GET", "/v1/tick", { headers: bearer("k") }), 401);
    const tick = await call(server.url, "GET", "/v1/tick", { headers: bearer("cron-s3cret") });
    expect(tick.status).toBe(200);
  });

  it("an invalid config passed in code is a StartError naming the problem", async () => {
    const failed = await startServer({
      ...base,
      config: { tenants: [{ id: "a", keys: [{ hash: "nope", scopes: ["read"] }] }] },
    }).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(StartError);
    expect((failed as Error).message).toContain("tenants.0.keys.0.hash");
  });
});
