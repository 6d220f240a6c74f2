/**
 * @module
 * `client.flows`: submit children and a parent that waits for them all (`POST /v1/flows`,
 * `src/http/routes/flows.ts`).
 */
import type { HandlerName, Handlers } from "../engine/handlers.ts";
import { type Caller, call } from "./request.ts";
import type { JobSummary, SubmitJobRequest } from "./types.ts";

/** `POST /v1/flows` body, typed by the handler map like `jobs.submit`. */
export interface SubmitFlowRequest<H extends Handlers = Handlers> {
  /** 1–100 jobs, submitted first. */
  children: SubmitJobRequest<H, HandlerName<H>>[];
  /**
   * Submitted last, waiting for every child (`after`). It may not name `after` itself (a 400):
   * give other dependencies to the children.
   */
  parent: SubmitJobRequest<H, HandlerName<H>>;
  /**
   * Makes submitting the flow again safe (at most 240 characters): child `i`'s key is
   * `flow:<key>:child:<i>`, the parent's `flow:<key>:parent`, unless a job has its own.
   */
  idempotencyKey?: string | undefined;
}

/** What a flow submit answers: its jobs as stored. `replayed`: the whole flow was stored before. */
export interface SubmittedFlow {
  parent: JobSummary;
  children: JobSummary[];
  replayed: boolean;
}

/** `client.flows`. */
export class FlowsApi<H extends Handlers = Handlers> {
  readonly #caller: Caller;

  constructor(caller: Caller) {
    this.#caller = caller;
  }

  /**
   * Submit a flow; every job is checked before any is stored (a bad one: `ValidationError`,
   * nothing stored). Needs the `jobs:write` scope. `signal` aborts the request (a flow the server
   * stored before the abort stays stored: submit it again with its `idempotencyKey`).
   *
   * @example
   * const flow = await client.flows.submit({
   *   children: pages.map((page) => ({ handler: "page.render", input: { page } })),
   *   parent: { handler: "book.bind" },
   *   idempotencyKey: `book-${bookId}`,
   * });
   * const book = await client.jobs.get(flow.parent.id);
   */
  async submit(
    body: SubmitFlowRequest<H>,
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<SubmittedFlow> {
    const { data, response } = await call<Omit<SubmittedFlow, "replayed">>(
      this.#caller,
      "POST",
      "/v1/flows",
      { body, ...(options.signal ? { signal: options.signal } : {}) },
    );
    return { ...data, replayed: response.headers.get("idempotent-replayed") === "true" };
  }
}
