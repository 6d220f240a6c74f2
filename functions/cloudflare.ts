/**
 * @module
 * The Cloudflare Workers entry, as a user writes it (`wrangler deploy`; `wrangler.toml` names this
 * file): the HTTP API on `fetch`, the tick on the once-a-minute Cron Trigger (`scheduled`).
 * Variables and secrets: see `wrangler.toml`. For more control, build the parts yourself with
 * `createTickwork` from the same entry.
 */
import { createWorker } from "tickwork/cloudflare";
import { handlers } from "./handlers.ts";

export default createWorker({ handlers });
