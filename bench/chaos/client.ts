/**
 * @module
 * The fault suite's API client: requests through the balancer, retried like a careful caller
 * retries (network errors, 429 and 5xx, with backoff and `Retry-After`), counted.
 */
import { sleep } from "./util.ts";

export interface Answer {
  status: number;
  body: Record<string, unknown>;
  retryAfterMs: number | undefined;
}

/** Client counters. */
export interface ClientCounters {
  requests: number;
  retries: number;
  replayed: number;
  /** Jobs whose client gave up (the job may exist all the same). */
  abandoned: number;
  refused: string[];
  /** Answers by status (`0`: no answer). */
  statuses: Record<string, number>;
}

export interface ChaosClient {
  readonly counters: ClientCounters;
  /** One request to `baseUrl` + `path`; throws on a network error or after 15 s. */
  api(method: string, path: string, body?: unknown): Promise<Answer>;
  /**
   * Call until an answer that is not a transient failure (network, 429, 5xx), or `deadline`;
   * `undefined` when it gave up (noted in `counters.refused`).
   */
  persist(
    what: string,
    call: () => Promise<Answer>,
    deadline?: number,
  ): Promise<Answer | undefined>;
}

export function chaosClient(baseUrl: string): ChaosClient {
  const counters: ClientCounters = {
    requests: 0,
    retries: 0,
    replayed: 0,
    abandoned: 0,
    refused: [],
    statuses: {},
  };

  async function api(method: string, path: string, body?: unknown): Promise<Answer> {
    counters.requests++;
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      ...(body !== undefined
        ? { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }
        : {}),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      parsed = { text };
    }
    const ra = Number(res.headers.get("retry-after"));
    return {
      status: res.status,
      body: parsed,
      retryAfterMs: Number.isFinite(ra) && ra > 0 ? ra * 1000 : undefined,
    };
  }

  async function persist(
    what: string,
    call: () => Promise<Answer>,
    deadline = Number.POSITIVE_INFINITY,
  ): Promise<Answer | undefined> {
    for (let attempt = 0; attempt < 300 && Date.now() < deadline; attempt++) {
      if (attempt > 0) counters.retries++;
      let answer: Answer | undefined;
      try {
        answer = await call();
      } catch {
        answer = undefined;
      }
      const status = String(answer?.status ?? 0);
      counters.statuses[status] = (counters.statuses[status] ?? 0) + 1;
      if (answer && answer.status !== 429 && answer.status < 500) return answer;
      const backoff = Math.min(2_000, 50 * 2 ** Math.min(attempt, 6));
      await sleep(Math.min(answer?.retryAfterMs ?? backoff, 2_000));
    }
    counters.refused.push(`${what}: gave up`);
    return undefined;
  }

  return { counters, api, persist };
}
