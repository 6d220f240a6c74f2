/**
 * The queue body of a submitted job is written from the text the submit stored (no second
 * serialisation): it must be exactly what `JSON.stringify` gives for the spec the store returns,
 * whatever the job holds.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { privateRedis } from "../../../test/support/billed-redis.ts";
import { newJob } from "../../../test/support/redis-store-fixtures.ts";
import { jobJson } from "../../core/message-json.ts";
import type { SubmitResult } from "../port.ts";
import { RedisStore } from "./redis-store.ts";
import { fromIoredis } from "./script.ts";

describe("RedisStore submit: the queue body", () => {
  const priv = privateRedis();

  it("is JSON.stringify of the returned spec, for any input, tags and stamps", async () => {
    const store = new RedisStore({ client: fromIoredis(priv.redis), prefix: "submit-json" });
    await fc.assert(
      fc.asyncProperty(
        fc.jsonValue(),
        fc.array(fc.string(), { maxLength: 3 }),
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.option(fc.integer({ min: 0, max: 4_000_000_000_000 }), { nil: undefined }),
        async (input, tags, delayMs, runAt) => {
          const timing = {
            delayMs,
            recoverGraceMs: 1_000,
            ...(runAt !== undefined ? { runAt } : {}),
          };
          const submitted = (await store.submitJob(
            newJob({ input, tags }),
            timing,
          )) as SubmitResult;
          const job = submitted.message!.job;
          expect(jobJson(job)).toBe(JSON.stringify(job));
          expect(JSON.parse(jobJson(job)).input).toEqual(JSON.parse(JSON.stringify(input)));
        },
      ),
      { numRuns: 60 },
    );
  });
});
