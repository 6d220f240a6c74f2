import { describe, expect, test } from "vitest";
import { ConfigValidationError } from "../config/index.ts";
import { TickworkConfigError } from "../core/errors.ts";
import { MissingEnvError } from "./cloudflare/env.ts";
import {
  type DeploymentSettings,
  deliveryUrls,
  resolveDeployment,
  splitApiKeys,
} from "./deployment.ts";
import { ConfigError, StartError } from "./node/errors.ts";

const base: DeploymentSettings = {
  queue: "qstash",
  publicUrl: "https://jobs.example.com/api/tickwork//",
  apiKeys: "k1, ,k2",
  tickSecret: "cron",
  horizonMs: 60_000,
};

/** The error `resolveDeployment(settings)` throws. */
function refusal(settings: DeploymentSettings): TickworkConfigError {
  try {
    resolveDeployment(settings);
  } catch (error) {
    expect(error).toBeInstanceOf(TickworkConfigError);
    return error as TickworkConfigError;
  }
  throw new Error("resolved");
}

describe("resolveDeployment", () => {
  test("normalises the public URL and derives the delivery URLs, keys and app options", () => {
    const deployment = resolveDeployment({ ...base, basePath: "api/tickwork/" });
    expect(deployment.publicUrl).toBe("https://jobs.example.com/api/tickwork");
    expect(deployment.delivery).toEqual({
      workerUrl: "https://jobs.example.com/api/tickwork/v1/worker",
      failureCallbackUrl: "https://jobs.example.com/api/tickwork/v1/dead",
    });
    expect(deployment.apiKeys).toEqual(["k1", "k2"]);
    expect(deployment.roles).toEqual(["all"]);
    expect(deployment.app).toEqual({
      dev: false,
      roles: ["all"],
      publicUrl: "https://jobs.example.com/api/tickwork",
      basePath: "/api/tickwork",
      tickSecret: "cron",
      apiKeys: ["k1", "k2"],
    });
    // The period and a margin beyond it (lookAheadFor).
    expect(deployment.engine).toEqual({ tick: { horizonMs: 65_000 } });
  });

  test("the configuration: parsed from JSON text, its degradation unless the engine names one", () => {
    const config = JSON.stringify({
      tenants: [{ id: "acme", keys: [{ hash: `sha256:${"a".repeat(64)}`, scopes: ["read"] }] }],
      cors: { origins: ["https://app.example.com"] },
      degradation: { critical: "delay" },
    });
    const deployment = resolveDeployment({ ...base, apiKeys: undefined, config });
    expect(deployment.keyed).toBe(true);
    expect(deployment.app.tenants).toHaveLength(1);
    expect(deployment.app.cors).toEqual({ origins: ["https://app.example.com"] });
    expect(deployment.engine.degradation).toEqual({ critical: "delay" });
    const own = resolveDeployment({
      ...base,
      config,
      engine: { degradation: { critical: "reject" }, tick: { horizonMs: 5_000 } },
    });
    expect(own.engine).toEqual({
      degradation: { critical: "reject" },
      tick: { horizonMs: 5_000 },
    });
  });

  test("the tick route: the secret when given, open in dev, else not served", () => {
    expect(resolveDeployment(base).app.tickSecret).toBe("cron");
    expect(resolveDeployment({ ...base, tickSecret: undefined }).app.tickSecret).toBe(false);
    expect("tickSecret" in resolveDeployment({ ...base, dev: true, tickSecret: "" }).app).toBe(
      false,
    );
  });

  test("roles from a list or from TICKWORK_ROLES's text; blank text is the default", () => {
    expect(resolveDeployment({ ...base, roles: "worker, api" }).roles).toEqual(["api", "worker"]);
    expect(resolveDeployment({ ...base, roles: " " }).roles).toEqual(["all"]);
    expect(refusal({ ...base, roles: "api,cron" })).toMatchObject({
      message: expect.stringMatching(
        /^TICKWORK_ROLES names no known role, or an unknown one \(its value is not shown; roles: all, api, tick, worker, observer\)$/,
      ),
      variable: "TICKWORK_ROLES",
      field: "roles",
    });
    expect(refusal({ ...base, roles: ["cron" as never] }).message).toMatch(/^unknown role/);
  });

  test("each refusal names the variable and the field at fault", () => {
    expect(refusal({ ...base, apiKeys: " , " })).toMatchObject({
      message: expect.stringContaining("no API key configured"),
      variable: "TICKWORK_API_KEY",
      field: "apiKeys",
    });
    expect(refusal({ ...base, apiKeys: "k1, has space" })).toMatchObject({
      message: expect.stringContaining("one token without spaces"),
      variable: "TICKWORK_API_KEY",
      field: "apiKeys",
    });
    expect(refusal({ ...base, apiKeys: ["k1", "line\nbreak"] }).variable).toBe("TICKWORK_API_KEY");
    expect(refusal({ ...base, publicUrl: "jobs.example.com" })).toMatchObject({
      message: "publicUrl (TICKWORK_PUBLIC_URL) is not a URL (it needs its scheme: https://…)",
      variable: "TICKWORK_PUBLIC_URL",
      field: "publicUrl",
    });
    expect(refusal({ ...base, publicUrl: "" })).toMatchObject({
      message: expect.stringContaining("QStash needs the public URL"),
      variable: "TICKWORK_PUBLIC_URL",
    });
    expect(refusal({ ...base, basePath: "api tickwork?" })).toMatchObject({
      message: expect.stringContaining("basePath (TICKWORK_BASE_PATH) must be a plain URL path"),
      variable: "TICKWORK_BASE_PATH",
      field: "basePath",
    });
    const invalid = refusal({ ...base, config: '{"tenants":[{"id":"a","keys":[{"hash":"x"}]}]}' });
    expect(invalid).toBeInstanceOf(ConfigValidationError);
    expect(invalid).toMatchObject({
      message: expect.stringMatching(/^TICKWORK_CONFIG is not a valid tickwork configuration/),
      variable: "TICKWORK_CONFIG",
      field: "tenants.0.keys.0.hash",
    });
    expect(refusal({ ...base, config: { tenants: "nope" } as never }).message).toMatch(
      /^config is not a valid tickwork configuration/,
    );
  });

  test("without keys: dev, or roles without API routes, need none", () => {
    expect(resolveDeployment({ ...base, apiKeys: [], dev: true }).keyed).toBe(false);
    expect(resolveDeployment({ ...base, apiKeys: [], roles: ["tick", "worker"] }).keyed).toBe(
      false,
    );
  });

  test("deliveries: QStash needs a public URL unless nothing is published or received", () => {
    const qstash = { ...base, publicUrl: undefined };
    expect(refusal(qstash).field).toBe("publicUrl");
    expect(resolveDeployment({ ...qstash, roles: ["observer"] }).delivery).toBeUndefined();
    expect(refusal({ ...qstash, roles: ["observer"], requirePublicUrl: true }).field).toBe(
      "publicUrl",
    );
  });

  test("deliveries: the local queue needs a worker route, or a public URL and a shared key", () => {
    const local = { ...base, queue: "local" as const, publicUrl: undefined };
    expect(resolveDeployment(local).delivery).toBeUndefined();
    expect(refusal({ ...local, roles: ["api", "tick"] }).message).toContain(
      "which this server does not serve (its roles lack worker)",
    );
    expect(refusal({ ...local, publicUrl: "http://workers:8787" })).toMatchObject({
      variable: "TICKWORK_SIGNING_KEY",
      field: "signingKey",
    });
    const shared = resolveDeployment({
      ...local,
      publicUrl: "http://workers:8787/",
      signingKey: "s",
    });
    expect(shared.delivery?.workerUrl).toBe("http://workers:8787/v1/worker");
  });
});

test("splitApiKeys and deliveryUrls", () => {
  expect(splitApiKeys(" a, ,b ")).toEqual(["a", "b"]);
  expect(splitApiKeys(["a ", ""])).toEqual(["a"]);
  expect(splitApiKeys(undefined)).toEqual([]);
  expect(deliveryUrls("https://x.example")).toEqual({
    workerUrl: "https://x.example/v1/worker",
    failureCallbackUrl: "https://x.example/v1/dead",
  });
});

test("every platform's configuration error is a TickworkConfigError, under its own name", () => {
  const errors = [
    new StartError("s"),
    new ConfigError("c", { variable: "PORT" }),
    new MissingEnvError(["QSTASH_TOKEN", "CRON_SECRET"]),
    new ConfigValidationError("config", [{ path: "cors", message: "bad" }]),
  ];
  for (const error of errors) expect(error).toBeInstanceOf(TickworkConfigError);
  expect(errors.map((error) => error.name)).toEqual([
    "StartError",
    "ConfigError",
    "MissingEnvError",
    "ConfigValidationError",
  ]);
  expect(errors.map((error) => error.variable ?? error.field)).toEqual([
    undefined,
    "PORT",
    "QSTASH_TOKEN",
    "cors",
  ]);
  const wrapped = StartError.from(errors[1]!);
  expect(wrapped).toBeInstanceOf(StartError);
  expect(wrapped).toMatchObject({ message: "c", variable: "PORT", cause: errors[1] });
});
