/**
 * @module
 * The Vercel entry, as a user writes it: `src/index.ts` of a Vercel project (Vercel's zero-config
 * Hono support serves a Hono app exported by default), with `infra/vercel.json` as the project's
 * `vercel.json`: its cron calls `GET /v1/tick` every minute. Settings come from the project's
 * Environment Variables; `createVercelApp` lists them.
 */
// Vercel's zero-config Hono support deploys an entry that imports "hono" (README, "Deploy on Vercel").
import "hono";
import { createVercelApp } from "tickwork/vercel";
import { handlers } from "../handlers.ts";

export default createVercelApp(process.env, { handlers });
