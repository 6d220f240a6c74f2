/**
 * @module
 * `client.dlq`: the dead-letter list — jobs that ran out of retries or failed for good.
 */
import { JobHandle } from "./jobs.ts";
import { PagedList } from "./paginate.ts";
import { type Caller, call, seg } from "./request.ts";
import type { Job, JobSummary, Page, PageQuery } from "./types.ts";

/** `client.dlq`. */
export class DlqApi {
  readonly #caller: Caller;

  constructor(caller: Caller) {
    this.#caller = caller;
  }

  /**
   * Dead jobs, across as many pages as you iterate.
   *
   * @example
   * for await (const job of client.dlq.list()) console.log(job.id, job.error?.message);
   */
  list(query: PageQuery = {}): PagedList<Job> {
    const { cursor, limit } = query;
    return new PagedList(
      async (next) =>
        (await call<Page<Job>>(this.#caller, "GET", "/v1/dlq", { query: { limit, cursor: next } }))
          .data,
      cursor,
    );
  }

  /**
   * Queue a dead job again (attempts are kept; the queue gives it a fresh retry budget).
   *
   * @example
   * const job = await client.dlq.retry(id);
   * await job.result();
   */
  async retry(id: string): Promise<JobHandle> {
    const { data } = await call<JobSummary>(this.#caller, "POST", `/v1/dlq/${seg(id)}/retry`);
    return new JobHandle(this.#caller, data.id, data);
  }

  /**
   * Drop a dead job for good.
   *
   * @example
   * await client.dlq.delete(id);
   */
  async delete(id: string): Promise<{ id: string; status: "deleted" }> {
    return (
      await call<{ id: string; status: "deleted" }>(this.#caller, "DELETE", `/v1/dlq/${seg(id)}`)
    ).data;
  }
}
