/**
 * @module
 * The body of the failure callback, in QStash's documented shape ({@link FailureCallbackBody}).
 */
import type { FailureCallbackBody } from "../port.ts";

/** What the last attempt of a message that gave up got back. */
export interface LastAttempt {
  /** `0` when no response came (network error, timeout). */
  status: number;
  headers: Headers;
  /** The response body; for no response, the error's message. */
  body: Uint8Array;
}

/** The message that gave up, as the local transport holds it. */
export interface FailedMessage {
  messageId: string;
  url: string;
  headers: Headers;
  body: string;
  retried: number;
  maxRetries: number;
  notBefore: number;
  createdAt: number;
}

/** Build the failure-callback body for `message`, whose last attempt got `last`. */
export function failureCallbackBody(
  message: FailedMessage,
  last: LastAttempt,
  dlqId: string,
): FailureCallbackBody {
  return {
    status: last.status,
    header: headerMap(last.headers),
    body: toBase64(last.body),
    retried: message.retried,
    maxRetries: message.maxRetries,
    dlqId,
    sourceMessageId: message.messageId,
    url: message.url,
    method: "POST",
    sourceHeader: headerMap(message.headers),
    sourceBody: toBase64(new TextEncoder().encode(message.body)),
    notBefore: String(message.notBefore),
    createdAt: String(message.createdAt),
  };
}

/** Headers as QStash (Go's `http.Header`) renders them: canonical names, lists of values. */
function headerMap(headers: Headers): Record<string, string[]> {
  const map: Record<string, string[]> = {};
  for (const [name, value] of headers) {
    const canonical = name.replace(
      /(^|-)([a-z])/g,
      (_, dash: string, c: string) => dash + c.toUpperCase(),
    );
    map[canonical] = [...(map[canonical] ?? []), value];
  }
  return map;
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}
