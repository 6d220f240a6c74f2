/**
 * @module
 * tickwork: background jobs and cron schedules for serverless apps.
 */
export * from "./core/errors.ts";
export type * from "./core/model.ts";
export * from "./engine/index.ts";
export type * from "./store/port.ts";
export type * from "./transport/port.ts";
