/**
 * @module
 * `tickwork/vercel`: tickwork as a Vercel Function. `createVercelApp(process.env, { handlers })`
 * is a Hono app — the HTTP API, the worker route QStash delivers to, and `/v1/tick` for Vercel
 * Cron — built from the project's Environment Variables (Upstash Redis, QStash, `CRON_SECRET`,
 * `TICKWORK_API_KEY`). Export it by default from `src/index.ts` and Vercel serves it.
 */

export { TickworkConfigError } from "../../core/errors.ts";
export { createVercelApp, type VercelAppOptions } from "./app.ts";
