/**
 * @module
 * The Vercel entry: a Hono app as the default export, which Vercel runs as a Function on Fluid
 * compute (Node.js). Copy this file (and `app.ts`) to your project's `src/index.ts` (or `index.ts`,
 * `app.ts`, `server.ts` …), where Vercel's zero-config Hono support finds it, and `infra/vercel.json`
 * to the project root: its cron calls `GET /v1/tick` every minute. Settings come from
 * `process.env` (the project's Environment Variables); `app.ts` lists them.
 */
import { createVercelApp } from "./app.ts";

export default createVercelApp(process.env);
