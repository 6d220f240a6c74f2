/**
 * The Store contract on the embedded memory store (real clock, real sleeps).
 */
import { MemoryStore } from "../../src/store/memory/index.ts";
import { CONTRACT_RETENTION } from "./fixtures.ts";
import { describeStoreContract } from "./store.contract.ts";

describeStoreContract("memory", async () => ({
  store: new MemoryStore({ retention: CONTRACT_RETENTION }),
  cleanup: async () => {},
}));
