/**
 * The Store, admission and observability contracts on the embedded memory store (real clock,
 * real sleeps).
 */
import { MemoryStore } from "../../src/store/memory/index.ts";
import { describeAdmissionContract } from "./admission.contract.ts";
import { CONTRACT_RETENTION, type MakeContractStore } from "./fixtures.ts";
import { describeObservabilityContract } from "./observability.contract.ts";
import { describeStoreContract } from "./store.contract.ts";

const make: MakeContractStore = async (options) => ({
  store: new MemoryStore({ retention: CONTRACT_RETENTION, ...options }),
  cleanup: async () => {},
});

describeStoreContract("memory", make);
describeAdmissionContract("memory", make);
describeObservabilityContract("memory", make);
