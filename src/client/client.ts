/**
 * @module
 * `createClient`: the typed client of the tickwork HTTP API.
 */
import { MAX_TIMER_MS, parseDuration } from "../core/duration.ts";
import type { Handlers } from "../engine/handlers.ts";
import { DlqApi } from "./dlq.ts";
import { FlowsApi } from "./flows.ts";
import { HooksApi } from "./hooks.ts";
import { JobsApi } from "./jobs.ts";
import { NodesApi } from "./nodes.ts";
import { type Caller, call } from "./request.ts";
import { SchedulesApi } from "./schedules.ts";
import type { Duration, TickResult } from "./types.ts";

/** Options of {@link createClient}. */
export interface ClientOptions {
  /**
   * Base URL of the app, including its base path if it is mounted under one; no query, fragment
   * or credentials (a `TypeError`: they would not reach the server).
   * @example "http://127.0.0.1:8787"
   * @example "https://app.example.com/api/tickwork"
   */
  url: string | URL;
  /** Sent as `Authorization: Bearer <apiKey>` (not needed in `npm run dev`). */
  apiKey?: string | undefined;
  /**
   * The `fetch` to use (a test double, a Workers service binding's `fetch`, …).
   * @default globalThis.fetch
   */
  fetch?: typeof globalThis.fetch | undefined;
  /** Extra headers on every request. */
  // What `new Headers(…)` takes, named without the DOM library (Node's own types have no
  // global `HeadersInit`).
  headers?: ConstructorParameters<typeof Headers>[0] | undefined;
  /**
   * The longest one request waits for its answer (ms, or `"30s"`…): past it the request is
   * aborted and the call rejects with a `RequestTimeoutError`. A long-poll (`job.result()`) gets
   * it on top of the wait it asks the server for; an update stream (`job.updates()`) until it
   * opens (a stream that does not open in time counts as a failed connection and is tried again).
   * @default none: as long as `fetch` waits
   */
  timeout?: Duration | undefined;
}

/** The client. */
export interface TickworkClient<H extends Handlers = Handlers> {
  /** Submit, read, wait for, cancel and list jobs. */
  jobs: JobsApi<H>;
  /** Create, change, pause, resume, delete and list schedules. */
  schedules: SchedulesApi<H>;
  /** Children and a parent that waits for them all (`POST /v1/flows`). */
  flows: FlowsApi<H>;
  /** The dead-letter list. */
  dlq: DlqApi;
  /** The fleet: the servers registered in the node registry (`GET /v1/nodes`). */
  nodes: NodesApi;
  /** The tenant's inbound webhook endpoints and their last deliveries (`GET /v1/hooks`). */
  hooks: HooksApi;
  /**
   * Run one tick now (`POST /v1/tick`). Outside dev the app may require its tick secret: pass it
   * as `secret` (it replaces the API key for this call).
   */
  tick(options?: { secret?: string | undefined }): Promise<TickResult>;
}

/**
 * A client for a tickwork app. Uses only `fetch`: works in Node, Workers, Deno, Bun and browsers.
 *
 * Pass your handler map's type (a type-only import: no handler code reaches the bundle) and
 * `jobs.submit` and `schedules.create` accept only its names, each with its own input type.
 *
 * @example
 * import { createClient } from "tickwork/client";
 *
 * const client = createClient({ url: "http://127.0.0.1:8787" });
 * const job = await client.jobs.submit({ handler: "echo", input: { hello: "world" } });
 * console.log(await job.result({ timeout: "10s" })); // { hello: "world" }
 *
 * for await (const dead of client.dlq.list()) await client.dlq.retry(dead.id);
 *
 * @example
 * import type { handlers } from "./handlers"; // types only
 * const tw = createClient<typeof handlers>({ url: "https://app.example.com/api/tickwork" });
 * await tw.jobs.submit({ handler: "email.send", input: { to: "a@b.c" } }); // checked by tsc
 */
export function createClient<H extends Handlers = Handlers>(
  options: ClientOptions,
): TickworkClient<H> {
  const base = new URL(options.url);
  if (base.protocol !== "http:" && base.protocol !== "https:") {
    throw new TypeError(`url must be http(s), got ${base.protocol}`);
  }
  // Each request's URL is the base's origin and path with its own: anything else the base
  // carried would be dropped without a word.
  if (base.search !== "" || base.hash !== "" || base.username !== "" || base.password !== "") {
    throw new TypeError(
      "url must be an origin and a path only: pass a query's token or credentials in `headers` (or `apiKey`), not in the URL",
    );
  }
  let timeoutMs: number | undefined;
  if (options.timeout !== undefined) {
    timeoutMs = parseDuration(options.timeout);
    if (timeoutMs === undefined || timeoutMs < 1 || timeoutMs > MAX_TIMER_MS) {
      throw new RangeError(
        `timeout must be a duration from 1 ms to ${MAX_TIMER_MS} ms, got ${String(options.timeout)}`,
      );
    }
  }
  const caller: Caller = {
    base: `${base.origin}${base.pathname.replace(/\/+$/, "")}`,
    apiKey: options.apiKey,
    // Bound: some runtimes reject a detached `fetch` ("Illegal invocation").
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    headers: new Headers(options.headers),
    timeoutMs,
  };
  return {
    jobs: new JobsApi<H>(caller),
    schedules: new SchedulesApi<H>(caller),
    flows: new FlowsApi<H>(caller),
    dlq: new DlqApi(caller),
    nodes: new NodesApi(caller),
    hooks: new HooksApi(caller),
    async tick(tickOptions = {}) {
      return (
        await call<TickResult>(caller, "POST", "/v1/tick", {
          ...(tickOptions.secret ? { bearer: tickOptions.secret } : {}),
        })
      ).data;
    },
  };
}
