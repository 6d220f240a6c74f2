/**
 * The failure-callback body, in the shape upstash/docs `qstash/features/callbacks.mdx` documents
 * ("What is a Failure-Callback?"): the last response (status, headers, base64 body), the retry
 * counts, the DLQ id, and the source message (id, url, method, headers, base64 body, times).
 * The docs spell the id field `sourceMessasgeId` in that example; the double sends the
 * `sourceMessageId` every other QStash schema uses.
 */

/** The last answer a message that gave up got. */
export interface LastResponse {
  /** `0` when no response came (network error, timeout). */
  status: number;
  headers: Headers;
  body: Uint8Array;
}

/** The message that gave up. */
export interface FailedSource {
  messageId: string;
  url: string;
  method: string;
  /** The headers it is delivered with, less the per-attempt `Upstash-*` ones. */
  headers: [string, string][];
  body: Uint8Array;
  retried: number;
  maxRetries: number;
  notBefore: number;
  createdAt: number;
  callerIp: string | undefined;
}

/** The JSON the double POSTs to the failure-callback URL. */
export function failureCallbackPayload(source: FailedSource, last: LastResponse, dlqId: string) {
  const sourceHeader: Record<string, string[]> = {};
  for (const [name, value] of source.headers) {
    const key = canonical(name);
    sourceHeader[key] = [...(sourceHeader[key] ?? []), value];
  }
  const header: Record<string, string[]> = {};
  for (const [name, value] of last.headers) {
    const key = canonical(name);
    header[key] = [...(header[key] ?? []), value];
  }
  return {
    status: last.status,
    header,
    body: Buffer.from(last.body).toString("base64"),
    retried: source.retried,
    maxRetries: source.maxRetries,
    dlqId,
    sourceMessageId: source.messageId,
    url: source.url,
    method: source.method,
    sourceHeader,
    sourceBody: Buffer.from(source.body).toString("base64"),
    notBefore: String(source.notBefore),
    createdAt: String(source.createdAt),
    ...(source.callerIp !== undefined ? { callerIP: source.callerIp } : {}),
  };
}

/** Go's canonical header form, as QStash renders `http.Header`: `upstash-retried` → `Upstash-Retried`. */
export function canonical(name: string): string {
  return name
    .toLowerCase()
    .replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
}
