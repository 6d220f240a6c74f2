import { describe, expect, it } from "vitest";
import { TickworkConfigError } from "../../core/errors.ts";
import {
  assertEnv,
  MissingEnvError,
  REQUIRED_ENV,
  REQUIRED_ENV_QUEUES,
  selectWorkerTransport,
} from "./env.ts";

const complete = Object.fromEntries(REQUIRED_ENV.map((name) => [name, `${name.toLowerCase()}`]));

describe("assertEnv", () => {
  it("accepts every required binding set, optional ones left out", () => {
    expect(() => assertEnv(complete)).not.toThrow();
  });

  it("names every binding that is missing, empty or not a string", () => {
    const env = { ...complete, QSTASH_TOKEN: undefined, CRON_SECRET: " ", TICKWORK_API_KEY: 1 };
    let caught: unknown;
    try {
      assertEnv(env);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(MissingEnvError);
    expect(caught).toBeInstanceOf(TickworkConfigError);
    expect((caught as MissingEnvError).variable).toBe("QSTASH_TOKEN");
    expect((caught as MissingEnvError).missing).toEqual([
      "QSTASH_TOKEN",
      "TICKWORK_API_KEY",
      "CRON_SECRET",
    ]);
    expect((caught as Error).message).toContain("wrangler secret put");
    // Neither transport set up: the error names the Queues way out too (not when QStash is chosen).
    expect((caught as Error).message).toContain("Or bind TICKWORK_QUEUE");
    expect(() => assertEnv({ ...env, TICKWORK_TRANSPORT: "qstash" })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining("TICKWORK_QUEUE") }),
    );
  });

  it("with a TICKWORK_QUEUE binding and no QStash token: needs no QStash binding nor public URL", () => {
    const queue = { send: async () => {}, sendBatch: async () => {} };
    const env = {
      ...Object.fromEntries(REQUIRED_ENV_QUEUES.map((name) => [name, "x"])),
      TICKWORK_QUEUE: queue,
    };
    expect(selectWorkerTransport(env)).toBe("cloudflare-queues");
    expect(() => assertEnv(env)).not.toThrow();
    // Chosen by name but not bound: the binding is named as missing.
    const unbound = { ...env, TICKWORK_QUEUE: undefined, TICKWORK_TRANSPORT: "cloudflare-queues" };
    expect(() => assertEnv(unbound)).toThrow(MissingEnvError);
    try {
      assertEnv(unbound);
    } catch (error) {
      expect((error as MissingEnvError).missing).toEqual(["TICKWORK_QUEUE"]);
    }
    // Set, but as text (a [vars] entry, not a [[queues.producers]] binding): said so.
    for (const asText of [
      { ...env, TICKWORK_QUEUE: "tickwork-jobs" },
      { ...unbound, TICKWORK_QUEUE: "tickwork-jobs" },
    ]) {
      expect(() => assertEnv(asText)).toThrow(
        expect.objectContaining({
          message: expect.stringContaining("TICKWORK_QUEUE is set but is no Queue binding"),
        }),
      );
    }
  });
});

describe("selectWorkerTransport", () => {
  const queue = { send: async () => {}, sendBatch: async () => {} };
  it("keeps QStash the default when its token is set, even with a queue bound", () => {
    expect(selectWorkerTransport({ QSTASH_TOKEN: "t", TICKWORK_QUEUE: queue })).toBe("qstash");
    expect(selectWorkerTransport({})).toBe("qstash");
    expect(selectWorkerTransport({ TICKWORK_QUEUE: "not a binding" })).toBe("qstash");
  });
  it("follows TICKWORK_TRANSPORT, and refuses a value it does not know", () => {
    expect(
      selectWorkerTransport({
        QSTASH_TOKEN: "t",
        TICKWORK_QUEUE: queue,
        TICKWORK_TRANSPORT: "cloudflare-queues",
      }),
    ).toBe("cloudflare-queues");
    expect(selectWorkerTransport({ TICKWORK_QUEUE: queue, TICKWORK_TRANSPORT: "qstash" })).toBe(
      "qstash",
    );
    for (const bad of ["streams", "__proto__", "constructor", "x".repeat(10_000)]) {
      expect(() => selectWorkerTransport({ TICKWORK_TRANSPORT: bad })).toThrow(TickworkConfigError);
    }
  });
});
