/**
 * The Store, admission and observability contracts on the Redis store: ioredis against the
 * shared Redis at 127.0.0.1:6379, a random key prefix per test, whose keys (and only those) are
 * deleted afterwards. The client sends its script commands as `tickwork start`'s does
 * (`sendsCommandsDirectly`); the other test files use ioredis's own command methods.
 */
import { Command, Redis } from "ioredis";
import { afterAll } from "vitest";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { sendsCommandsDirectly } from "../../src/store/redis/script.ts";
import { describeAdmissionContract } from "./admission.contract.ts";
import { CONTRACT_RETENTION, type MakeContractStore } from "./fixtures.ts";
import { describeObservabilityContract } from "./observability.contract.ts";
import { describeStoreContract } from "./store.contract.ts";

const redis = new Redis("redis://127.0.0.1:6379");
sendsCommandsDirectly(redis, Command);
afterAll(() => redis.disconnect());

/** Deletes every key under the hash tag `{prefix}` (SCAN, never FLUSH: the server is shared). */
async function deletePrefix(prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, found] = await redis.scan(cursor, "MATCH", `{${prefix}}:*`, "COUNT", 1000);
    if (found.length > 0) await redis.del(...found);
    cursor = next;
  } while (cursor !== "0");
}

const make: MakeContractStore = async (options) => {
  const prefix = `contract-${Math.random().toString(36).slice(2, 10)}`;
  return {
    store: new RedisStore({
      client: fromIoredis(redis),
      prefix,
      retention: CONTRACT_RETENTION,
      ...options,
    }),
    cleanup: () => deletePrefix(prefix),
  };
};

describeStoreContract("redis", make);
describeAdmissionContract("redis", make);
describeObservabilityContract("redis", make);
