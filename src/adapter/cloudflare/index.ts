/**
 * @module
 * `tickwork/cloudflare`: what a Workers entry needs — `createWorker` (the whole Worker from its
 * bindings), `createTickwork` (store on Upstash Redis REST, QStash transport, engine and app from
 * an explicit config) and the typed, checked bindings. No Node modules.
 */
export type { ExecutionContext } from "hono";
export { TickworkConfigError } from "../../core/errors.ts";
export { Background } from "./background.ts";
export { assertEnv, MissingEnvError, REQUIRED_ENV, type TickworkEnv } from "./env.ts";
export {
  createTickwork,
  type QStashConfig,
  type Tickwork,
  type TickworkConfig,
} from "./tickwork.ts";
export { createWorker, type TickworkWorker, type WorkerOptions } from "./worker.ts";
