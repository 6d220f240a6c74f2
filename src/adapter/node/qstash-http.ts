/**
 * @module
 * `nodeQStashHttp`: the QStash transport's batch requests over `node:http`/`node:https` with a
 * keep-alive agent, for Node servers (`tickwork start` uses it). The global `fetch` of Node 20
 * costs about three times the CPU per request (docs/adr/0025-node-http-for-qstash-batches.md); on
 * a busy submit server that is a large share of each job's cost.
 */
import http from "node:http";
import https from "node:https";
import type {
  QStashHttp,
  QStashHttpRequest,
  QStashHttpResponse,
} from "../../transport/qstash/options.ts";

/** Options of {@link nodeQStashHttp}. */
export interface NodeQStashHttpOptions {
  /**
   * Open connections kept per origin. The transport sends one batch request at a time per flush,
   * so a few suffice.
   * @default 8
   */
  maxSockets?: number;
}

/**
 * A {@link QStashHttp} for `QStashTransport({ http })` on Node: each request goes out in one write
 * (headers and body together) over a pooled keep-alive connection, and is destroyed when the
 * transport aborts it. Resolves with any status; rejects on a network error or an abort.
 *
 * @example
 * const transport = new QStashTransport({ ...credentials, workerUrl, http: nodeQStashHttp() });
 */
export function nodeQStashHttp(options: NodeQStashHttpOptions = {}): QStashHttp {
  const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 8 };
  const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
  return (request) => send(request, agents);
}

function send(
  { url, headers, body, signal }: QStashHttpRequest,
  agents: { http: http.Agent; https: https.Agent },
): Promise<QStashHttpResponse> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const secure = target.protocol === "https:";
    const request = (secure ? https : http).request(target, {
      method: "POST",
      agent: secure ? agents.https : agents.http,
      headers: { ...headers, "Content-Length": String(Buffer.byteLength(body)) },
      signal,
    });
    request.on("error", reject);
    request.on("response", (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("error", reject);
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
      );
    });
    request.end(body);
  });
}
