/**
 * @module
 * The embedded in-memory store: tickwork's zero-config default (`tickwork/memory`).
 *
 * @example
 * import { MemoryStore } from "tickwork/memory";
 * const store = new MemoryStore();
 */

export { DEFAULT_RETENTION } from "../port.ts";
export { MemoryStore, type MemoryStoreOptions } from "./memory-store.ts";
