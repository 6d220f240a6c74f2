import { describe, expect, it } from "vitest";
import { TickworkConfigError } from "../../core/errors.ts";
import { assertEnv, MissingEnvError, REQUIRED_ENV } from "./env.ts";

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
  });
});
