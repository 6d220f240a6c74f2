import { describe, expect, test } from "vitest";
import { selectQStash, selectStore, serverOptionsFromEnv } from "./env.ts";
import { ConfigError } from "./errors.ts";

const QSTASH = {
  QSTASH_TOKEN: "q",
  QSTASH_CURRENT_SIGNING_KEY: "c",
  QSTASH_NEXT_SIGNING_KEY: "n",
};
const START = { REDIS_URL: "redis://cache:6379", TICKWORK_API_KEY: "k" };

describe("selectStore", () => {
  test("Upstash first, then REDIS_URL, then memory; Vercel's KV_REST_API_* work too", () => {
    expect(selectStore({})).toEqual({ kind: "memory" });
    expect(selectStore({ REDIS_URL: "redis://cache:6379" })).toEqual({
      kind: "redis",
      url: "redis://cache:6379",
    });
    const upstash = {
      UPSTASH_REDIS_REST_URL: "https://eu1-x.upstash.io",
      UPSTASH_REDIS_REST_TOKEN: "t",
    };
    expect(selectStore({ ...upstash, REDIS_URL: "redis://cache:6379" })).toEqual({
      kind: "upstash",
      url: "https://eu1-x.upstash.io",
      token: "t",
    });
    expect(
      selectStore({ KV_REST_API_URL: "https://eu1-x.upstash.io", KV_REST_API_TOKEN: "kv" }),
    ).toMatchObject({ kind: "upstash", token: "kv" });
    expect(selectStore({ REDIS_URL: "  " })).toEqual({ kind: "memory" });
  });

  test("a REDIS_URL of another scheme is a ConfigError that quotes no password", () => {
    for (const url of ["http://:hunter2@cache:6379", "HTTPS://default:hunter2@eu1-x.upstash.io"]) {
      expect(() => selectStore({ REDIS_URL: url })).toThrow(ConfigError);
      expect(() => selectStore({ REDIS_URL: url })).toThrow(/REDIS_URL must start with redis:\/\//);
      expect(() => selectStore({ REDIS_URL: url })).not.toThrow(/hunter2/);
    }
    // A host or port no URL holds, or a scheme without its colon: named as such, no password.
    for (const [url, message] of [
      ["redis://:hunter2@127.0.0.1:abc/11", /REDIS_URL is not a URL: check its host and port/],
      ["redis://:6379/11", /REDIS_URL is not a URL/],
      ["redis//:hunter2@127.0.0.1:6379/11", /REDIS_URL has no colon after its scheme/],
    ] as const) {
      expect(() => selectStore({ REDIS_URL: url })).toThrow(ConfigError);
      expect(() => selectStore({ REDIS_URL: url })).toThrow(message);
      expect(() => selectStore({ REDIS_URL: url })).not.toThrow(/hunter2/);
    }
    // What ioredis takes besides: rediss://, host:port, a socket path.
    for (const url of [
      "rediss://:p@cache:6380",
      "REDIS://cache",
      "cache:6379",
      "/tmp/redis.sock",
    ]) {
      expect(selectStore({ REDIS_URL: url })).toEqual({ kind: "redis", url });
    }
  });

  test("a REST URL without its token, or not http(s), is a ConfigError", () => {
    expect(() => selectStore({ UPSTASH_REDIS_REST_URL: "https://x.upstash.io" })).toThrow(
      "UPSTASH_REDIS_REST_URL is set but UPSTASH_REDIS_REST_TOKEN is not",
    );
    // Vercel's pair is named as set.
    expect(() => selectStore({ KV_REST_API_URL: "https://x.upstash.io" })).toThrow(
      "KV_REST_API_URL is set but KV_REST_API_TOKEN is not",
    );
    expect(() =>
      selectStore({ KV_REST_API_URL: "redis://x:6379", KV_REST_API_TOKEN: "t" }),
    ).toThrow("KV_REST_API_URL must start with http:// or https://");
    expect(() =>
      selectStore({ UPSTASH_REDIS_REST_URL: "redis://x:6379", UPSTASH_REDIS_REST_TOKEN: "t" }),
    ).toThrow("UPSTASH_REDIS_REST_URL must start with http:// or https://");
  });
});

describe("selectQStash", () => {
  test("none without a token; every missing signing key named at once", () => {
    expect(selectQStash({})).toBeUndefined();
    expect(selectQStash({ ...QSTASH, QSTASH_URL: "http://127.0.0.1:8080" })).toEqual({
      token: "q",
      baseUrl: "http://127.0.0.1:8080",
      currentSigningKey: "c",
      nextSigningKey: "n",
    });
    expect(() => selectQStash({ QSTASH_TOKEN: "q" })).toThrow(
      "but QSTASH_CURRENT_SIGNING_KEY, QSTASH_NEXT_SIGNING_KEY are not",
    );
  });
});

describe("serverOptionsFromEnv", () => {
  test("dev: zero config is memory, local queue, all roles, no auth", () => {
    expect(serverOptionsFromEnv({}, "dev")).toEqual({ dev: true, port: 8787, transport: "local" });
    // Dev has no auth: keys and the cron secret are not passed on.
    expect(
      serverOptionsFromEnv({ TICKWORK_API_KEY: "k", CRON_SECRET: "s", PORT: "0" }, "dev"),
    ).toEqual({ dev: true, port: 0, transport: "local" });
  });

  test("start: maps every variable", () => {
    const options = serverOptionsFromEnv(
      {
        ...QSTASH,
        UPSTASH_REDIS_REST_URL: "https://eu1-x.upstash.io",
        UPSTASH_REDIS_REST_TOKEN: "t",
        PORT: "8080",
        HOST: "0.0.0.0",
        TICKWORK_PREFIX: "jobs",
        TICKWORK_PUBLIC_URL: "https://jobs.example.com",
        TICKWORK_SIGNING_KEY: "sig",
        TICKWORK_ROLES: "worker,api",
        TICKWORK_API_KEY: "k1, k2",
        CRON_SECRET: "cron",
      },
      "start",
    );
    expect(options).toEqual({
      dev: false,
      port: 8080,
      hostname: "0.0.0.0",
      upstash: { url: "https://eu1-x.upstash.io", token: "t" },
      prefix: "jobs",
      qstash: { token: "q", currentSigningKey: "c", nextSigningKey: "n" },
      transport: "qstash",
      publicUrl: "https://jobs.example.com",
      signingKey: "sig",
      roles: ["api", "worker"],
      apiKeys: ["k1", "k2"],
      tickSecret: "cron",
    });
  });

  test("transport: QStash, else Redis Streams on Redis over TCP, else the local queue", () => {
    const redis = { REDIS_URL: "redis://127.0.0.1:6379" };
    expect(serverOptionsFromEnv(redis, "dev").transport).toBe("streams");
    expect(
      serverOptionsFromEnv({ ...redis, ...QSTASH, TICKWORK_PUBLIC_URL: "https://x.io" }, "dev"),
    ).toMatchObject({ transport: "qstash", qstash: { token: "q" } });
    expect(serverOptionsFromEnv({ ...redis, TICKWORK_TRANSPORT: "local" }, "dev").transport).toBe(
      "local",
    );
    // Explicit, and with QStash credentials present: QStash is not used.
    const streams = serverOptionsFromEnv(
      { ...redis, ...QSTASH, TICKWORK_TRANSPORT: "Streams" },
      "dev",
    );
    expect(streams.transport).toBe("streams");
    expect(streams.qstash).toBeUndefined();
    // Nor checked: a token without its signing keys does not stop a transport that needs none
    // (it said "jobs go through QStash").
    for (const chosen of ["streams", "local"]) {
      const options = serverOptionsFromEnv(
        { ...redis, QSTASH_TOKEN: "q", TICKWORK_TRANSPORT: chosen },
        "dev",
      );
      expect(options).toMatchObject({ transport: chosen });
      expect(options.qstash).toBeUndefined();
    }
    expect(serverOptionsFromEnv({ ...redis, TICKWORK_CONCURRENCY: "50" }, "dev").concurrency).toBe(
      50,
    );
    expect(serverOptionsFromEnv({ ...redis, TICKWORK_READ_AHEAD: "0" }, "dev").readAhead).toBe(0);
    expect(serverOptionsFromEnv(redis, "dev").readAhead).toBeUndefined();
    expect(
      serverOptionsFromEnv({ ...redis, TICKWORK_KEEP_ALIVE_MS: "620000" }, "dev")
        .keepAliveTimeoutMs,
    ).toBe(620_000);
    expect(
      serverOptionsFromEnv({ ...redis, TICKWORK_KEEP_ALIVE_MS: "0" }, "dev").keepAliveTimeoutMs,
    ).toBe(0);
    expect(serverOptionsFromEnv(redis, "dev").keepAliveTimeoutMs).toBeUndefined();
  });

  test("transport: refused when the store cannot carry it, or the value is unknown", () => {
    const upstash = {
      UPSTASH_REDIS_REST_URL: "https://x.upstash.io",
      UPSTASH_REDIS_REST_TOKEN: "t",
    };
    expect(serverOptionsFromEnv(upstash, "dev").transport).toBe("local");
    expect(() =>
      serverOptionsFromEnv({ ...upstash, TICKWORK_TRANSPORT: "streams" }, "dev"),
    ).toThrow(/needs Redis over TCP \(REDIS_URL\)/);
    // REDIS_URL set too: the message names what is read first, not "set REDIS_URL".
    expect(() =>
      serverOptionsFromEnv(
        { ...upstash, REDIS_URL: "redis://127.0.0.1:6379", TICKWORK_TRANSPORT: "streams" },
        "dev",
      ),
    ).toThrow(/REDIS_URL is set, but the Upstash REST variables .* are read first.*Unset them/);
    expect(() => serverOptionsFromEnv({ TICKWORK_TRANSPORT: "streams" }, "dev")).toThrow(
      /in-memory store has no stream/,
    );
    expect(() => serverOptionsFromEnv({ TICKWORK_TRANSPORT: "kafka" }, "dev")).toThrow(
      /TICKWORK_TRANSPORT must be qstash, streams or local, got "kafka"/,
    );
    expect(() => serverOptionsFromEnv({ TICKWORK_TRANSPORT: "qstash" }, "dev")).toThrow(
      /^TICKWORK_TRANSPORT=qstash needs QSTASH_TOKEN/,
    );
    for (const bad of ["0", "-1", "1.5", "10001", "1e3", "ten"]) {
      expect(() => serverOptionsFromEnv({ TICKWORK_CONCURRENCY: bad }, "dev")).toThrow(
        /concurrency must be a whole number from 1 to 10000/,
      );
    }
    for (const bad of ["-1", "1.5", "10001", "1e3", "ten", "٣"]) {
      expect(() => serverOptionsFromEnv({ TICKWORK_READ_AHEAD: bad }, "dev")).toThrow(
        /read-ahead must be a whole number from 0 to 10000/,
      );
    }
    for (const bad of ["-1", "1.5", "2147483648", "1e300", "65s", "٣"]) {
      expect(() => serverOptionsFromEnv({ TICKWORK_KEEP_ALIVE_MS: bad }, "dev")).toThrow(
        /TICKWORK_KEEP_ALIVE_MS must be a whole number of milliseconds from 0 to 2147483647/,
      );
    }
  });

  test("QStash needs TICKWORK_PUBLIC_URL, and says so", () => {
    expect(() => serverOptionsFromEnv(QSTASH, "dev")).toThrow(
      "QSTASH_TOKEN is set, so jobs go through QStash, but TICKWORK_PUBLIC_URL is not",
    );
    expect(() =>
      serverOptionsFromEnv({ ...QSTASH, TICKWORK_PUBLIC_URL: "jobs.example.com" }, "dev"),
    ).toThrow("TICKWORK_PUBLIC_URL is not a URL (its value is not shown)");
  });

  test("start needs a store, and an API key when it serves API routes", () => {
    expect(() => serverOptionsFromEnv({ TICKWORK_API_KEY: "k" }, "start")).toThrow(
      "REDIS_URL is not set (nor UPSTASH_REDIS_REST_URL)",
    );
    expect(() => serverOptionsFromEnv({ REDIS_URL: "redis://c:6379" }, "start")).toThrow(
      "TICKWORK_API_KEY is not set",
    );
    expect(() =>
      serverOptionsFromEnv({ REDIS_URL: "redis://c:6379", TICKWORK_ROLES: "observer" }, "start"),
    ).toThrow("TICKWORK_API_KEY is not set");
    // Tick and worker servers serve no API route: no key needed.
    expect(
      serverOptionsFromEnv({ REDIS_URL: "redis://c:6379", TICKWORK_ROLES: "tick,worker" }, "start"),
    ).toMatchObject({ roles: ["tick", "worker"] });
  });

  test("bad roles and ports are ConfigErrors", () => {
    expect(() => serverOptionsFromEnv({ ...START, TICKWORK_ROLES: "api,cron" }, "start")).toThrow(
      ConfigError,
    );
    expect(() => serverOptionsFromEnv({ ...START, TICKWORK_ROLES: "api,cron" }, "start")).toThrow(
      '--role / TICKWORK_ROLES: unknown role "cron"',
    );
    for (const port of ["http", "70000", "-1"]) {
      expect(() => serverOptionsFromEnv({ PORT: port }, "dev")).toThrow(ConfigError);
    }
  });
});
