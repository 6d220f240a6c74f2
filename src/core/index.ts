/**
 * @module
 * The pure domain: records, schedule maths, request schemas, durations and errors. No I/O.
 */
export * from "./batch.ts";
export type * from "./delivery.ts";
export * from "./duration.ts";
export * from "./errors.ts";
export * from "./model.ts";
export * from "./schedule/index.ts";
export * from "./schemas.ts";
export * from "./trace.ts";
export * from "./webhooks/index.ts";
