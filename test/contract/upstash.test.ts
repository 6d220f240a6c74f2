/**
 * The Store contract on the Redis store over `@upstash/redis` (production defaults: base64
 * answers, auto-pipelining), through the REST bridge in front of the shared Redis at
 * 127.0.0.1:6379; a random key prefix per test, whose keys (and only those) are deleted afterwards.
 */
import { RedisStore, type ScriptClient } from "../../src/store/redis/index.ts";
import { deletePrefix, freshPrefix, upstashClient } from "../redis-rest/harness.ts";
import { CONTRACT_RETENTION } from "./fixtures.ts";
import { describeStoreContract } from "./store.contract.ts";

describeStoreContract("upstash", async () => {
  const prefix = freshPrefix("contract-u");
  // The Upstash client is a ScriptClient as it is: no adapter.
  const client: ScriptClient = await upstashClient();
  return {
    store: new RedisStore({ client, prefix, retention: CONTRACT_RETENTION }),
    cleanup: () => deletePrefix(prefix),
  };
});
