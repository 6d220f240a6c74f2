/**
 * The Store, admission and observability contracts on the Redis store over `@upstash/redis`
 * (production defaults: base64 answers, auto-pipelining), through the REST bridge in front of the
 * shared Redis at 127.0.0.1:6379; a random key prefix per test, whose keys (and only those) are
 * deleted afterwards.
 */
import { RedisStore, type ScriptClient } from "../../src/store/redis/index.ts";
import { deletePrefix, freshPrefix, upstashClient } from "../redis-rest/harness.ts";
import { describeAdmissionContract } from "./admission.contract.ts";
import { CONTRACT_RETENTION, type MakeContractStore } from "./fixtures.ts";
import { describeObservabilityContract } from "./observability.contract.ts";
import { describeStoreContract } from "./store.contract.ts";

const make: MakeContractStore = async (options) => {
  const prefix = freshPrefix("contract-u");
  // The Upstash client is a ScriptClient as it is: no adapter.
  const client: ScriptClient = await upstashClient();
  return {
    store: new RedisStore({ client, prefix, retention: CONTRACT_RETENTION, ...options }),
    cleanup: () => deletePrefix(prefix),
  };
};

describeStoreContract("upstash", make);
describeAdmissionContract("upstash", make);
describeObservabilityContract("upstash", make);
