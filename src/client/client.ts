/**
 * @module
 * `createClient`: the typed client of the tickwork HTTP API.
 */
import { DlqApi } from "./dlq.ts";
import { JobsApi } from "./jobs.ts";
import { type Caller, call } from "./request.ts";
import { SchedulesApi } from "./schedules.ts";
import type { TickResult } from "./types.ts";

/** Options of {@link createClient}. */
export interface ClientOptions {
  /**
   * Base URL of the app, including its base path if it is mounted under one.
   * @example "http://127.0.0.1:8787"
   * @example "https://app.example.com/api/tickwork"
   */
  url: string | URL;
  /** Sent as `Authorization: Bearer <apiKey>` (not needed in `npm run dev`). */
  apiKey?: string;
  /**
   * The `fetch` to use (a test double, a Workers service binding's `fetch`, …).
   * @default globalThis.fetch
   */
  fetch?: typeof globalThis.fetch;
  /** Extra headers on every request. */
  headers?: HeadersInit;
}

/** The client. */
export interface TickworkClient {
  /** Submit, read, wait for, cancel and list jobs. */
  jobs: JobsApi;
  /** Create, change, pause, resume, delete and list schedules. */
  schedules: SchedulesApi;
  /** The dead-letter list. */
  dlq: DlqApi;
  /**
   * Run one tick now (`POST /v1/tick`). Outside dev the app may require its tick secret: pass it
   * as `secret` (it replaces the API key for this call).
   */
  tick(options?: { secret?: string }): Promise<TickResult>;
}

/**
 * A client for a tickwork app. Uses only `fetch`: works in Node, Workers, Deno, Bun and browsers.
 *
 * @example
 * import { createClient } from "tickwork/client";
 *
 * const client = createClient({ url: "http://127.0.0.1:8787" });
 * const job = await client.jobs.submit({ handler: "echo", input: { hello: "world" } });
 * console.log(await job.result({ timeout: "10s" })); // { hello: "world" }
 *
 * for await (const dead of client.dlq.list()) await client.dlq.retry(dead.id);
 */
export function createClient(options: ClientOptions): TickworkClient {
  const base = new URL(options.url);
  if (base.protocol !== "http:" && base.protocol !== "https:") {
    throw new TypeError(`url must be http(s), got ${base.protocol}`);
  }
  const caller: Caller = {
    base: `${base.origin}${base.pathname.replace(/\/+$/, "")}`,
    apiKey: options.apiKey,
    // Bound: some runtimes reject a detached `fetch` ("Illegal invocation").
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    headers: new Headers(options.headers),
  };
  return {
    jobs: new JobsApi(caller),
    schedules: new SchedulesApi(caller),
    dlq: new DlqApi(caller),
    async tick(tickOptions = {}) {
      return (
        await call<TickResult>(caller, "POST", "/v1/tick", {
          ...(tickOptions.secret ? { bearer: tickOptions.secret } : {}),
        })
      ).data;
    },
  };
}
