/**
 * @module
 * `tickwork/cloudflare`: what a Workers entry needs — `createTickwork` (store on Upstash Redis
 * REST, QStash transport, engine, app) and the typed, checked bindings. No Node modules.
 */
export type { ExecutionContext } from "hono";
export { Background } from "./background.ts";
export { assertEnv, MissingEnvError, REQUIRED_ENV, type TickworkEnv } from "./env.ts";
export {
  createTickwork,
  type QStashConfig,
  type Tickwork,
  type TickworkConfig,
} from "./tickwork.ts";
